// What a match tells people, shared by the replay viewer and the live page: who played whom,
// who won and by which rule, and (viewer) the tricks of a deal with why each was won. Every
// name is put into the page as text (K.el), never as markup.
"use strict";

const Story = {
  // The seats of each side, by side number: [[seat, ...], ...].
  sides(seats) {
    const out = [];
    for (const s of seats) (out[s.side || 0] = out[s.side || 0] || []).push(s);
    return out.filter(Boolean);
  },

  sideName(seats, side) {
    return seats.filter((s) => (s.side || 0) === side).map((s) => s.name).join(" + ") || `side ${side}`;
  },

  // How a result reads: { winner (a name, or null), text (one sentence) }. `result` is a
  // MatchResult as JSON (absent fields are zero); `rules` { limit, fixed_deals } or null.
  outcome(result, seats, rules, money) {
    const r = result || {};
    const reason = K.reason(r.reason);
    const limit = rules && rules.limit ? rules.limit : 12;
    const totals = r.penalty_totals || [];
    if (!reason || reason === "unspecified") return { winner: null, text: "The match is still being played." };
    if (reason === "aborted") return { winner: null, text: "No result: the referee stopped the match (it is not rated)." };
    const winner = money ? (seats[r.winner_side || 0] || {}).name || `seat ${r.winner_side || 0}` : Story.sideName(seats, r.winner_side || 0);
    let how;
    if (reason === "limit") {
      const losers = (r.eliminated_sides && r.eliminated_sides.length ? r.eliminated_sides
        : totals.map((t, i) => (t >= limit ? i : -1)).filter((i) => i >= 0));
      how = losers.map((i) => `${Story.sideName(seats, i)} reached ${totals[i] ?? limit} penalty points`).join(", ")
        + ` (reaching ${limit} penalties loses)`;
    } else if (reason === "fixed deals") {
      how = money ? `the most chips after ${r.deals || 0} deals (most chips wins)`
        : `the fewest penalty points after ${r.deals || 0} deals (a match of fixed deals: fewest penalties wins)`;
    } else if (reason === "forfeit") {
      how = (r.forfeits || []).map((f) => `${(seats[f.seat || 0] || {}).name} forfeited (${K.reason(f.reason).replace("forfeit reason ", "")})`).join(", ") || "the others forfeited";
    } else {
      how = `the match ended (${reason})`;
    }
    if (r.draw) return { winner: null, text: `A draw: ${reason === "fixed deals" ? `equal totals after ${r.deals || 0} deals` : how}.` };
    return { winner, text: `${winner} wins: ${how}.` };
  },

  // Who is ahead: { leader (a name, "" when level), text }. `totals`: penalty totals (chips in
  // the money game) by side before this deal, or null; `points`: card points by side in this
  // deal so far, or null.
  standing(seats, totals, points, rules, money) {
    const sides = Story.sides(seats).map((m) => m[0].side || 0);
    const name = (i) => Story.sideName(seats, i);
    const list = (xs) => sides.map((i) => `${name(i)} ${xs[i] || 0}`).join(" · ");
    const limit = rules && rules.limit ? rules.limit : 12;
    const ahead = (xs, most) => {
      const best = (most ? Math.max : Math.min)(...sides.map((i) => xs[i] || 0));
      const at = sides.filter((i) => (xs[i] || 0) === best);
      return at.length === 1 ? name(at[0]) : "";
    };
    let leader = totals ? ahead(totals, money) : "";
    const parts = [];
    if (totals) parts.push((money ? "chips " : "penalties ") + list(totals) + (money ? "" : ` (reaching ${limit} loses)`));
    if (points) parts.push("card points this deal " + list(points));
    if (!leader && points) leader = ahead(points, true);
    const head = leader ? `${leader} is winning` : "Level";
    return { leader, text: head + (parts.length ? ": " + parts.join("; ") : "") };
  },

  // The viewer's header: the sides (names link to bot pages when `linked`), the winner and
  // how, the ladder, and each seat's rating change when `detail` (GET /api/matches/<id>) has it.
  header(data, detail, linked) {
    const name = (n) => (linked ? K.botLink(n) : K.el("span", { text: n }));
    const sides = Story.sides(data.seats);
    const title = K.el("h1", { class: "sides", "data-sides": "" },
      sides.map((members, i) => [i ? K.el("span", { class: "vs", text: " vs " }) : null,
        K.el("span", { class: "side", "data-side": members[0].side || 0 },
          members.map((s, j) => [j ? " + " : null, name(s.name)]))]));
    const o = Story.outcome(data.result, data.seats, data.rules, data.money);
    const result = K.el("p", { class: "result", "data-result": "", "data-winner": o.winner || "", text: o.text });
    const ladder = data.ladder || (detail && detail.ladder) || "";
    const about = K.el("p", { class: "muted" }, "Match ", K.el("span", { class: "mid", text: data.match_id }),
      ladder ? [" · ladder ", linked ? K.ladderLink(ladder) : ladder] : null);
    return [title, result, Story.ratings(detail), about].filter(Boolean);
  },

  ratings(detail) {
    const seats = ((detail && detail.seats) || []).filter((s) => s.rating);
    if (!seats.length) return null;
    return K.el("p", { class: "ratings", "data-ratings": "" }, "Rating (mu): ", seats.map((s, i) => {
      const before = s.rating.mu_before || 0, after = s.rating.mu_after || 0, delta = after - before;
      return [i ? " · " : null, K.el("span", { "data-rating": s.seat || 0,
        text: `${s.bot} ${K.num(before)} → ${K.num(after)} (${delta >= 0 ? "+" : "−"}${K.num(Math.abs(delta))})` })];
    }));
  },

  // The finished tricks of a deal as `view` saw them, one row each with a button to the frame
  // that completed it; rows after frame `f` are marked as still to come.
  trickRows(deal, view, f, names, goto) {
    const frameAt = (step) => { const fr = deal.frames[step]; return fr && (view === "all" ? fr.all : fr.seats[+view]); };
    return (deal.tricks_done || []).map((t, i) => {
      const seen = (frameAt(t.step) || {}).last || { plays: [], points: t.points };
      const state = t.step > f ? "ahead" : t.step === f ? "now" : "done";
      return K.el("tr", { class: "trick-row " + state, "data-trick-row": i, "data-step": t.step, "aria-current": state === "now" ? "step" : null },
        K.el("td", { class: "num" }, K.el("button", { type: "button", class: "goto", "data-goto": t.step,
          "aria-label": `go to trick ${i + 1}`, onclick: () => goto(t.step), text: String(i + 1) })),
        K.el("td", { text: names[t.leader] }),
        K.el("td", { class: "plays" }, seen.plays.map((p) => K.el("span", { class: "tplay" },
          K.el("span", { class: "by", text: `${names[p.seat]}: ` }),
          p.cards.length ? Cards.hand(p.cards, 0, deal.trump, true) : Cards.hand([], p.count, deal.trump, true)))),
        K.el("td", { class: "win", text: names[t.winner] }),
        K.el("td", { class: "num", text: String(seen.points) }),
        K.el("td", { class: "why", "data-why": t.why, text: t.why }));
    });
  },
};
