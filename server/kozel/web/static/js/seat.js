// A person's seat (/play and /play/ID): open a table against house bots, then play it by
// clicking cards. The page shows only what the referee sent this seat (GET /api/seats/ID,
// with the seat's secret token in the X-Seat-Token header, kept in this browser's
// localStorage: a reload resumes the seat). Names are put into the page as text only.
"use strict";

const Seat = {
  state: null,
  token: "",
  selected: new Set(),
  selectedFor: null, // the request id the selection belongs to
  fetchedAt: 0, // performance.now() when the state arrived (the clock counts from it)
  sending: false,

  key(id) { return "kozel-seat-" + id; },

  async post(path, body, token) {
    const headers = { "Content-Type": "application/json", Accept: "application/json" };
    if (token) headers["X-Seat-Token"] = token;
    const response = await fetch(path, { method: "POST", headers, body: JSON.stringify(body) });
    let data = {};
    try { data = await response.json(); } catch (e) { /* not JSON */ }
    if (!response.ok) {
      const d = data.detail;
      throw new Error(`${response.status}: ${typeof d === "string" ? d : JSON.stringify(d)}`);
    }
    return data;
  },

  // -- /play: the form ---------------------------------------------------------------------

  async form() {
    const opts = await K.api("/api/seats/options");
    const main = K.main();
    main.append(K.el("h1", { text: "Play a match" }));
    if (!opts.enabled) {
      main.append(K.el("p", { class: "notice", text: "This web server follows no referee: it cannot seat people." }));
      return;
    }
    const wanted = new URLSearchParams(location.search).get("opponent");
    const bots = opts.bots || []; // connected ladder bots that play people, seated as "bot:NAME"
    const choice = (value) => K.el("option", { value, text: value || "my own bot (joins with the table id)" });
    const botChoice = (b) => K.el("option", { value: "bot:" + b.name, text: `${b.name} (a ladder bot: ${b.players} players, ${b.ruleset}${b.free ? "" : "; busy now: your table waits for it"})` });
    const wantedBot = bots.find((b) => "bot:" + b.name === wanted); // a bot page's "Play this bot"
    const seatsBox = K.el("div", { id: "opponents" });
    const players = K.el("select", { id: "players", name: "players" }, [2, 3, 4].map((n) => K.el("option", { value: n, text: `${n} players` })));
    const fill = () => {
      const n = Number(players.value);
      seatsBox.replaceChildren(...Array.from({ length: n - 1 }, (_, i) => K.el("label", {},
        `Seat ${i + 1}${n === 4 && i === 1 ? " (your partner)" : ""} `,
        K.el("select", { name: "opponent", "data-seat": i + 1 }, opts.opponents.map(choice), bots.map(botChoice), choice("")))));
      for (const s of seatsBox.querySelectorAll("select")) s.value = opts.opponents.includes(wanted) ? wanted : "greedy";
      if (wanted === "own") seatsBox.querySelector("select").value = ""; // a bot page's "play it by hand"
      if (wantedBot) seatsBox.querySelector("select").value = wanted;
    };
    players.addEventListener("change", fill);
    if (wantedBot) players.value = String(wantedBot.players); // it plays its ladder's game only
    fill();
    const clocks = K.el("select", { id: "clock", name: "clock" }, Object.entries(opts.clocks).map(([k, c]) =>
      K.el("option", { value: k, text: `${k}: ${c.move_ms / 1000} s a move, ${c.bank_ms / 1000} s bank` })));
    clocks.value = "standard";
    const rules = K.el("select", { id: "ruleset", name: "ruleset" }, opts.rulesets.map((r) => K.el("option", { value: r, text: r })));
    if (wantedBot && opts.rulesets.includes(wantedBot.ruleset)) rules.value = wantedBot.ruleset;
    const deals = K.el("select", { id: "deals", name: "deals" }, [[0, "until a side reaches the penalty limit"], [1, "one deal"], [3, "three deals"], [5, "five deals"]]
      .map(([v, t]) => K.el("option", { value: v, text: t })));
    const name = K.el("input", { id: "name", name: "name", maxlength: 64, autocomplete: "nickname", value: localStorage.getItem("kozel-name") || "" });
    const account = K.el("input", { id: "account", name: "account", type: "password", maxlength: 128, autocomplete: "off" });
    const out = K.el("p", { class: "notice", role: "status", id: "open-status" });
    const formEl = K.el("form", { class: "seat-form" },
      K.el("label", {}, "Your name ", name),
      K.el("label", {}, "or your bot account's token (you then play under its name) ", account),
      K.el("label", {}, "Table ", players), seatsBox,
      K.el("label", {}, "Clock ", clocks), K.el("label", {}, "Rules ", rules), K.el("label", {}, "Length ", deals),
      K.el("button", { type: "submit", id: "open" }, "Sit down"), out);
    formEl.addEventListener("submit", async (e) => {
      e.preventDefault();
      out.textContent = "Opening the table…";
      try {
        localStorage.setItem("kozel-name", name.value);
        const got = await Seat.post("/api/seats", {
          name: name.value, token: account.value, opponents: [...seatsBox.querySelectorAll("select")].map((s) => s.value),
          clock: clocks.value, ruleset: rules.value, deals: Number(deals.value),
        });
        localStorage.setItem(Seat.key(got.seat_id), got.token);
        location.assign("/play/" + got.seat_id);
      } catch (err) {
        out.textContent = String(err.message || err);
      }
    });
    main.append(K.el("p", { text: "Play in your browser against the house bots, the connected bots whose authors let people play them, or seat your own bot at the table. Matches against people are never rated." }), formEl);
  },

  // -- /play/ID: the seat ------------------------------------------------------------------

  async run(id) {
    const hash = new URLSearchParams(location.hash.slice(1));
    if (hash.get("t")) { // a link that carries the token: keep it here, drop it from the bar
      localStorage.setItem(Seat.key(id), hash.get("t"));
      history.replaceState(null, "", location.pathname);
    }
    Seat.token = localStorage.getItem(Seat.key(id)) || "";
    if (!Seat.token) throw new Error("This browser does not hold this seat's key: open a new table from /play.");
    Seat.id = id;
    setInterval(Seat.tick, 250);
    let after = -1;
    for (;;) {
      const response = await fetch(`/api/seats/${id}?after=${after}`, { headers: { Accept: "application/json", "X-Seat-Token": Seat.token } });
      if (response.status === 429) { await new Promise((r) => setTimeout(r, 1000)); continue; }
      if (!response.ok) {
        let detail = response.statusText;
        try { detail = (await response.json()).detail; } catch (e) { /* not JSON */ }
        throw new Error(`${response.status}: ${detail}`);
      }
      const state = await response.json();
      if (state.version !== after) {
        Seat.state = state;
        Seat.fetchedAt = performance.now();
        Seat.draw();
      }
      after = state.version;
      if (state.end || state.error) return;
    }
  },

  names() {
    const m = Seat.state.match;
    return m ? (m.seating || []).map((p) => ({ name: p.name, side: p.side || 0, seat: p.seat || 0 })) : [];
  },

  mySeat() { return Seat.state.match ? Seat.state.match.seat || 0 : 0; },

  draw() {
    const s = Seat.state;
    const main = K.main();
    main.append(K.el("h1", { text: `${s.name} at the table` }));
    if (!s.match) {
      main.append(K.el("p", { class: "notice", id: "seat-status", role: "status", text: s.error ? s.error
        : s.own_bot ? `Waiting for your bot: start it with --table ${s.table_id} (for example: kozel bot greedy --server ADDRESS --table ${s.table_id}).`
          : (s.waiting_for || []).length ? `Waiting for ${s.waiting_for.join(", ")}: the match starts as soon as it has a free match slot (it may be finishing a ladder match).`
            : "Waiting for the match to start…" }));
      return;
    }
    main.append(Seat.seating(), Seat.board());
    if (s.end || s.error) main.append(Seat.ending());
    main.append(Seat.handBox(), Seat.scores(), Seat.logBox());
    if (!s.end && !s.error) {
      main.append(K.el("p", {}, K.el("button", { type: "button", id: "leave", onclick: Seat.leave }, "Leave the table (your side forfeits)")));
    }
    Seat.tick();
  },

  seating() {
    const me = Seat.mySeat();
    const names = Seat.names();
    const mySide = (names[me] || {}).side;
    return K.el("ul", { class: "seat-list", "aria-label": "seats" }, names.map((p) => K.el("li", { class: p.seat === me ? "me" : null },
      K.el("span", { text: p.name }), ` · seat ${p.seat} · side ${p.side}`,
      p.seat === me ? " (you)" : names.length === 4 && p.side === mySide ? " (your partner)" : "")));
  },

  board() {
    const s = Seat.state;
    const deal = s.deal || {};
    const names = Seat.names();
    const trump = deal.trump;
    const plays = (t) => (t || []).map((p) => K.el("div", { class: "play" },
      K.el("span", { class: "who", text: (names[p.seat || 0] || {}).name || `seat ${p.seat || 0}` }),
      ` ${K.reason(p.kind).replace("action kind ", "")}: `,
      Cards.hand(p.cards || [], (p.cards || []).length ? 0 : p.count || 0, trump, true)));
    const last = s.last_trick;
    return K.el("section", { class: "seat-board", "aria-label": "table" },
      K.el("p", {}, `Deal ${(deal.deal_index || 0) + 1} · trump `, deal.trump_card ? Cards.card(deal.trump_card, trump, true) : "",
        trump ? K.el("span", { text: ` ${Cards.SUIT_NAMES[trump]}` }) : "", s.talon !== null && s.talon !== undefined ? ` · talon ${s.talon}` : ""),
      K.el("div", { class: "trick", id: "trick" }, K.el("h2", { text: "Trick in play" }), s.trick.length ? plays(s.trick) : K.el("p", { text: "No card on the table." })),
      last ? K.el("div", { class: "last-trick" }, K.el("h2", { text: `Last trick: ${(names[last.winner || 0] || {}).name} took it` }), plays(last.plays)) : null);
  },

  handBox() {
    const s = Seat.state;
    const r = s.request;
    if (!r || Seat.selectedFor !== r.request_id) { Seat.selected = new Set(); Seat.selectedFor = r ? r.request_id : null; }
    const trump = (s.deal || {}).trump;
    const playable = new Set(r ? r.legal_actions.flatMap((a) => a.cards || []) : []);
    const declaring = r && r.kind === "DECISION_KIND_DECLARE";
    const cards = s.hand.map((code) => {
      const on = Seat.selected.has(code);
      return K.el("button", { type: "button", class: "hand-card" + (on ? " selected" : ""), "data-card": code, "aria-pressed": on ? "true" : "false",
        disabled: !r || declaring || !playable.has(code), onclick: () => { if (on) Seat.selected.delete(code); else Seat.selected.add(code); Seat.draw(); } },
      Cards.card(code, trump));
    });
    const box = K.el("section", { class: "seat-hand", "aria-label": "your hand" }, K.el("h2", { text: "Your hand" }), K.el("div", { class: "cards" }, cards));
    box.append(K.el("p", { class: "turn", id: "seat-status", role: "status", "aria-live": "polite", text: Seat.turnText() }),
      K.el("p", { class: "clock", id: "seat-clock", "aria-live": "off" }));
    if (s.rejection) box.append(K.el("p", { class: "notice error", text: s.rejection }));
    if (r) box.append(Seat.actions(r));
    return box;
  },

  turnText() {
    const s = Seat.state;
    const r = s.request;
    if (s.end || s.error) return "The match is over.";
    if (!r) return "Waiting for the others…";
    if (r.kind === "DECISION_KIND_DECLARE") return "Your hand is a combination: declare it, or pass.";
    if (r.kind === "DECISION_KIND_LEAD") return "Your lead: select one or more cards of one suit, then press Lead.";
    return "Your answer: select as many cards as were led, then Beat (face up) or Discard (face down).";
  },

  // The buttons: the legal actions whose cards are exactly the selection (or the
  // declarations and the pass); each one answers its index.
  actions(r) {
    const key = (cards) => [...cards].sort().join(" ");
    const chosen = key(Seat.selected);
    const label = { ACTION_KIND_LEAD: "Lead", ACTION_KIND_BEAT: "Beat", ACTION_KIND_DISCARD: "Discard face down", ACTION_KIND_PASS: "Pass" };
    const buttons = [];
    r.legal_actions.forEach((a, index) => {
      const kind = a.kind;
      let text, name;
      if (kind === "ACTION_KIND_DECLARE") {
        const combo = K.reason(a.combo).replace("combo ", "");
        text = `Declare ${combo[0].toUpperCase()}${combo.slice(1)}`;
        name = "DECLARE-" + combo.toUpperCase();
      } else if (kind === "ACTION_KIND_PASS") {
        text = "Pass"; name = "PASS";
      } else {
        if (!chosen || key(a.cards || []) !== chosen) return;
        text = label[kind]; name = kind.replace("ACTION_KIND_", "");
      }
      buttons.push(K.el("button", { type: "button", class: "act", "data-action": name, disabled: Seat.sending,
        onclick: () => Seat.answer(r.request_id, index) }, text));
    });
    const hint = buttons.length ? null : K.el("span", { class: "hint", text: Seat.selected.size ? "These cards are not a legal play." : "Select cards." });
    return K.el("div", { class: "actions" }, buttons, hint);
  },

  async answer(requestId, index) {
    Seat.sending = true;
    try {
      await Seat.post(`/api/seats/${Seat.id}/action`, { request_id: requestId, index }, Seat.token);
      Seat.selected = new Set();
    } catch (err) {
      Seat.state.rejection = String(err.message || err);
    } finally {
      Seat.sending = false;
    }
    Seat.state.request = null; // the next state shows what happened
    Seat.draw();
  },

  async leave() {
    if (!confirm("Leave the table? Your side forfeits the match.")) return;
    try {
      await Seat.post(`/api/seats/${Seat.id}/leave`, {}, Seat.token);
    } catch (err) {
      Seat.state.rejection = String(err.message || err);
      Seat.draw();
    }
  },

  // The clock: the move's time, then the bank, counted down from the state's arrival.
  tick() {
    const box = document.getElementById("seat-clock");
    const r = Seat.state && Seat.state.request;
    if (!box) return;
    if (!r) { box.textContent = ""; return; }
    const used = r.elapsed_ms + (performance.now() - Seat.fetchedAt);
    const move = Math.max(0, r.move_ms - used);
    const bank = Math.max(0, r.time_bank_ms - Math.max(0, used - r.move_ms));
    const secs = (ms) => Math.ceil(ms / 1000);
    box.textContent = move > 0 ? `Your clock: ${secs(move)} s for this move, then ${secs(bank)} s of bank`
      : `Your clock: the move's time is spent; ${secs(bank)} s of bank left`;
    box.classList.toggle("low", move <= 0);
  },

  scores() {
    const s = Seat.state;
    const names = Seat.names();
    const rows = s.deal_ends.map((d) => ({
      deal: (d.deal_index || 0) + 1,
      text: d.voided ? "voided" : (d.scores || []).map((x) => `${Story.sideName(names, x.side || 0)}: ${x.card_points || 0} points, +${x.penalty || 0} → ${x.penalty_total || 0}`).join(" · "),
    }));
    if (!rows.length) return K.el("p", { class: "muted", text: "No deal finished yet." });
    return K.el("section", { "aria-label": "deals" }, K.el("h2", { text: "Deals (penalty points; reaching the limit loses)" }),
      K.table([{ key: "deal", label: "Deal", num: true }, { key: "text", label: "Card points, penalty and total per side" }], rows));
  },

  ending() {
    const s = Seat.state;
    const box = K.el("section", { id: "seat-end", class: "seat-end", role: "status" }, K.el("h2", { text: "Match over" }));
    if (s.end) {
      const options = ((s.match.ruleset || {}).options) || {};
      const o = Story.outcome(s.end.result, Seat.names(), { limit: options.limit, fixed_deals: options.fixed_deals }, options.game === "money");
      box.append(K.el("p", { class: "result", "data-winner": o.winner || "", text: o.text }));
      if (s.end.replay_id) box.append(K.el("p", {}, K.el("a", { class: "replay-link", href: "/matches/" + encodeURIComponent(s.end.replay_id), text: "Watch the replay" })));
    } else {
      box.append(K.el("p", { class: "notice error", text: s.error }));
    }
    box.append(K.el("p", {}, K.link("Play again", "/play")));
    return box;
  },

  logBox() {
    const names = Seat.names();
    const who = (n) => (names[n || 0] || {}).name || `seat ${n || 0}`;
    const line = (e) => {
      if (e.played) return `${who(e.played.seat)} ${K.reason(e.played.kind).replace("action kind ", "")}: ${(e.played.cards || []).map(Cards.text).join(" ") || K.count(e.played.count || 0, "card") + " face down"}`;
      if (e.trick_taken) return `${who(e.trick_taken.trick.winner)} takes the trick`;
      if (e.declared) return `${who(e.declared.seat)} declares ${K.reason(e.declared.combo).replace("combo ", "")}`;
      if (e.notice) return `${who(e.notice.seat)}: ${K.reason(e.notice.kind).replace("notice kind ", "")}`;
      if (e.drawn) return e.drawn.cards && e.drawn.cards.length ? `you draw ${e.drawn.cards.map(Cards.text).join(" ")}` : "cards are drawn";
      if (e.deal_start) return `deal ${(e.deal_start.deal_index || 0) + 1} is dealt`;
      if (e.deal_end) return `deal ${(e.deal_end.deal_index || 0) + 1} ends`;
      return "";
    };
    const items = Seat.state.log.slice(-12).map(line).filter(Boolean).reverse();
    return K.el("section", { class: "seat-log", "aria-label": "what happened" }, K.el("h2", { text: "What happened (newest first)" }),
      K.el("ol", { tabindex: 0 }, items.map((t) => K.el("li", { text: t }))));
  },
};

(function () {
  const parts = location.pathname.split("/").filter(Boolean);
  (parts.length > 1 ? Seat.run(parts[1]) : Seat.form()).catch(K.fail);
})();
