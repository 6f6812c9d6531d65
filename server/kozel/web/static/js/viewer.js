// The replay viewer. It draws the frames of the replay JSON (kozel-replay-json/1): the server
// built every frame with the engine's observation filter, "all" for everything and seats[n]
// for what seat n knew, so this script only draws what it is given.
// Position: deal d, frame f (frame 0 is the deal as dealt, frame k follows step k).
// Link: #d=<deal>&s=<step>&v=<all|0..3>. Keys: see KEYS.
"use strict";

const Viewer = (function () {
  const KEYS = "← → one play · ↑ ↓ one trick · PgUp PgDn one deal · Home/End first/last · space play/pause · + − speed · a everything · 0–3 as seat";
  const SPEEDS = [0.25, 0.5, 1, 2, 4, 8];

  function start(data, root) {
    const st = { d: 0, f: 0, view: "all", playing: false, speed: 2, timer: null };
    Cards.shokha = !data.rules || data.rules.shokha;
    const names = data.seats.map((s) => s.name);
    const deals = data.deals;

    const parseHash = () => {
      const p = new URLSearchParams(location.hash.slice(1));
      const d = parseInt(p.get("d"), 10), s = parseInt(p.get("s"), 10), v = p.get("v");
      if (d >= 0 && d < deals.length) st.d = d;
      const frames = deals[st.d].frames.length;
      if (s >= 0) st.f = Math.min(s, Math.max(frames - 1, 0));
      if (v === "all" || (v !== null && /^[0-9]$/.test(v) && +v < data.players)) st.view = v;
    };

    // -- layout ---------------------------------------------------------------------------
    const header = Story.header(data, data.detail, Boolean(data.download));
    const summary = K.el("p", { class: "summary muted" });
    const btn = (label, text, fn) => K.el("button", { type: "button", "aria-label": label, title: label, "data-action": label, onclick: fn, text });
    const playBtn = btn("play/pause", "▶ play", () => toggle());
    const speedSel = K.el("select", { "aria-label": "speed", "data-action": "speed", onchange: () => { st.speed = +speedSel.value; if (st.playing) { stop(); play(); } } },
      SPEEDS.map((x) => K.el("option", { value: x, text: x + "× " })));
    const viewSel = K.el("select", { "aria-label": "view", "data-action": "view", onchange: () => { st.view = viewSel.value; draw(); } },
      K.el("option", { value: "all", text: "Everything" }),
      names.map((n, i) => K.el("option", { value: String(i), text: `As seat ${i} (${n}) saw it` })));
    const where = K.el("span", { class: "where", "data-where": "" });
    const permalink = K.el("a", { class: "permalink", href: "#", text: "link to this step" });
    const controls = K.el("div", { class: "controls sticky" },
      btn("previous deal", "◀ deal", () => moveDeal(-1)), btn("previous trick", "◀ trick", () => moveTrick(-1)),
      btn("previous play", "◀ play", () => move(-1)), playBtn,
      btn("next play", "play ▶", () => move(1)), btn("next trick", "trick ▶", () => moveTrick(1)),
      btn("next deal", "deal ▶", () => moveDeal(1)), speedSel, viewSel, where, permalink);
    const stepInfo = K.el("div", { class: "stepinfo", "data-stepinfo": "", "aria-live": "polite" });
    const board = K.el("div", { class: "board", "data-board": "" });
    const trickHead = K.el("h2", { "data-tricks-head": "" });
    const trickBody = K.el("tbody");
    const pointsHead = K.el("th", { scope: "col", class: "num", "data-points-head": "" });
    const trickList = K.el("div", { class: "scroll" }, K.el("table", { class: "tricks", "data-tricks": "" },
      K.el("thead", {}, K.el("tr", {}, ["#", "Leader", "Plays", "Winner"].map((h) => K.el("th", { scope: "col", text: h })),
        pointsHead, K.el("th", { scope: "col", text: "Why it won" }))), trickBody));
    const extras = K.el("div", { class: "extras", "data-extras": "" }); // panels of other modules
    const listeners = []; // told (deal, frame) after every draw
    const scores = K.el("div", { class: "scores" });
    const keys = K.el("p", { class: "keys", text: "Keys: " + KEYS });
    const downloads = data.download ? K.el("p", {}, K.link("download .kzr", data.download.kzr), " · ", K.link("JSON", data.download.json)) : null;
    root.replaceChildren(...[...header, summary, controls, stepInfo, board, trickHead, trickList, extras, keys, K.el("h2", { text: "Deals" }), scores, downloads].filter(Boolean));

    summary.textContent = [
      `${data.players} players`, `ruleset ${data.preset}`,
      data.time_control ? `clock ${data.time_control.move_ms} ms a move + ${data.time_control.bank_ms} ms bank` : "",
      data.started_at ? K.when(data.started_at) : "",
    ].filter(Boolean).join(" · ");

    // -- drawing --------------------------------------------------------------------------
    const frameOf = () => {
      const deal = deals[st.d];
      const fr = deal.frames[st.f];
      if (!fr) return null;
      return st.view === "all" ? fr.all : fr.seats[+st.view];
    };

    const teams = data.players === 4 && new Set(data.seats.map((x) => x.side)).size === 2;

    // The model of the shared drawing (table.js) at this frame, as the view saw it.
    function drawBoard(deal, fr) {
      const view = st.view === "all" ? null : +st.view;
      const acting = (seat) => fr.to_act.includes(seat) && !fr.over;
      const seats = fr.seats.map((s) => {
        const own = view === s.seat;
        const shown = own ? fr.hand : s.known;
        return { seat: s.seat, name: names[s.seat], side: data.seats[s.seat].side, dealer: deal.dealer === s.seat,
          toAct: acting(s.seat), out: !s.active, you: own, cards: shown, hidden: Math.max(0, s.hand_size - shown.length),
          facts: `${K.count(s.hand_size, "card")} · ${K.count(s.tricks, "trick")} · ${s.points} card points seen`,
          extra: Think.strip(deal, s.seat, st, data, (f) => { st.f = f; draw(); }) };
      });
      const trick = fr.trick, last = fr.last;
      Table.draw(board, {
        players: data.players, names, teams, bottom: view ?? 0, seats,
        trump: deal.trump, trumpCard: deal.trump_card, trumpDrawn: fr.trump_card_drawn, talon: fr.talon,
        trick: trick && { plays: trick.plays, note: `${names[trick.winner]} is winning the trick` + (trick.combo ? ` · ${trick.combo}` : "") },
        trickEmpty: fr.over ? "deal over" : "—",
        last: last && { plays: last.plays, winner: last.winner, note: `won by ${names[last.winner]} · ${last.points} points${view === null ? "" : " seen"}` },
        lastLabel: fr.tricks ? `Last trick: trick ${fr.tricks} of the deal` : "Last trick",
        standing: standingAt(deal, fr),
      });
    }

    // Penalties (or chips) before this deal, and the card points each side has seen won in it.
    function standingAt(deal, fr) {
      const before = st.d > 0 ? deals[st.d - 1].totals_after : null;
      const sides = Math.max(...data.seats.map((x) => x.side)) + 1;
      const totals = data.money ? null : before && before.length ? before : Array(sides).fill(0);
      const points = Array(sides).fill(0);
      for (const s of fr.seats) points[data.seats[s.seat].side] += s.points;
      return Story.standing(data.seats, totals, points, data.rules, data.money);
    }

    function drawStep(deal) {
      const tc = data.time_control || {};
      if (st.f === 0) {
        stepInfo.replaceChildren(...[K.el("div", { text: `Deal ${deal.index + 1}: dealt by ${names[deal.dealer]}, ${names[deal.first_leader]} leads first.` }),
          deal.error ? K.el("div", { class: "error", text: deal.error }) : null, ending()].filter(Boolean));
        return;
      }
      const step = deal.steps[st.f - 1];
      const kind = step.action.kind;
      if (st.view !== "all" && +st.view !== step.seat && (kind === "pass" || kind === "declare")) {
        // A declaration window is sealed: the other seats learn only the combination led next.
        stepInfo.replaceChildren(K.el("div", { class: "muted", text: `(a sealed declaration window: ${names[+st.view]} does not see ${names[step.seat]}'s answer)` }));
        return;
      }
      const move = tc.move_ms || 0;
      const share = move ? Math.min(1, step.think_ms / Math.max(move, 1)) : 0;
      const cls = step.timeout ? "timeout" : step.think_ms > move ? "over" : "";
      const cards = step.action.cards;
      stepInfo.replaceChildren(
        K.el("div", {}, K.el("strong", { text: names[step.seat] }), ` ${step.action.kind}${step.action.combo ? " " + step.action.combo : ""} `,
          st.view === "all" || +st.view === step.seat || step.action.kind !== "discard"
            ? Cards.hand(cards, 0, deal.trump, true) : Cards.hand([], cards.length, deal.trump, true),
          step.timeout ? K.el("span", { class: "error", text: " timed out: default action" }) : null,
          step.rejections ? K.el("span", { class: "error", text: ` (${step.rejections} refused first)` }) : null),
        K.el("div", { class: "think", "data-think": step.think_ms,
          text: `think ${step.think_ms} ms of ${move} ms a move · bank left ${step.bank_left_ms} ms` }),
        K.el("div", { class: "clockbar" }, K.el("span", { class: cls, style: null })), ending() || []);
      stepInfo.querySelector(".clockbar span").style.width = (share * 100).toFixed(0) + "%";
    }

    // At the last frame of the last deal: who won the match, and how.
    function ending() {
      if (st.d !== deals.length - 1 || st.f !== last(st.d)) return null;
      return K.el("div", { class: "final", "data-ending": "", text: "Match over: " + Story.outcome(data.result, data.seats, data.rules, data.money).text });
    }

    function drawTricks(deal) {
      const n = (deal.tricks_done || []).length;
      trickHead.textContent = `Tricks of deal ${deal.index + 1} (${K.count(n, "trick")})` + (st.view === "all" ? "" : `, as ${names[+st.view]} saw them`);
      trickBody.replaceChildren(...Story.trickRows(deal, st.view, st.f, names, (f) => { st.f = f; draw(); }));
      // A seat counts only the cards it saw: others' face-down discards are not among them.
      pointsHead.textContent = st.view === "all" ? "Points" : "Points seen";
      pointsHead.title = st.view === "all" ? "card points in the trick" : "card points of the cards this seat saw (not others' face-down discards)";
    }

    function drawScores() {
      const sides = [...new Set(data.seats.map((s) => s.side))].sort();
      const side = (i) => data.seats.filter((s) => s.side === i).map((s) => s.name).join(" + ");
      const rows = deals.map((d) => ({
        deal: d.index + 1, points: d.card_points.join(" / "), tricks: d.tricks.join(" / "),
        pen: d.voided ? "voided" : data.money ? (d.pot_winners.length ? "pot: " + d.pot_winners.map((s) => names[s]).join(", ") : "") : d.penalties.join(" / "),
        total: data.money ? "" : (d.totals_after || []).join(" / "),
      }));
      const table = K.table([
        { key: "deal", label: "Deal", num: true, render: (r) => K.link(String(r.deal), "#d=" + (r.deal - 1) + "&s=0&v=" + st.view) },
        { key: "points", label: "Card points" }, { key: "tricks", label: "Tricks" },
        { key: "pen", label: data.money ? "Pot" : "Penalties" }, { key: "total", label: data.money ? "" : "Totals" },
      ], rows);
      const result = data.result || {};
      const totals = data.money ? (result.chips || []).map((c, i) => `${names[i]} ${c >= 0 ? "+" : ""}${c}`).join(" · ")
        : (result.penalty_totals || []).map((p, i) => `${side(i)}: ${p}`).join(" · ");
      const o = Story.outcome(data.result, data.seats, data.rules, data.money);
      scores.replaceChildren(K.el("p", { text: "Sides: " + sides.map((i) => `${i} = ${side(i)}`).join(" · ") }), table,
        K.el("p", { class: "final", "data-final": "", text: `Final: ${totals}${totals ? ". " : ""}${o.text}` }));
    }

    function draw() {
      const deal = deals[st.d];
      const fr = frameOf();
      viewSel.value = st.view;
      where.textContent = ` deal ${st.d + 1}/${deals.length} · step ${st.f}/${Math.max(deal.frames.length - 1, 0)}`;
      where.dataset.deal = st.d; where.dataset.step = st.f; where.dataset.view = st.view;
      const hash = `#d=${st.d}&s=${st.f}&v=${st.view}`;
      permalink.setAttribute("href", hash);
      if (location.hash !== hash) history.replaceState(null, "", hash);
      if (!fr) { board.replaceChildren(K.el("p", { text: deal.error || "no frames" })); stepInfo.replaceChildren(); return; }
      drawBoard(deal, fr);
      drawStep(deal);
      drawTricks(deal);
      for (const fn of listeners) fn(st.d, st.f);
    }

    // -- moving ---------------------------------------------------------------------------
    const last = (d) => Math.max(deals[d].frames.length - 1, 0);
    function move(n) {
      if (n > 0) {
        if (st.f < last(st.d)) st.f++;
        else if (st.d < deals.length - 1) { st.d++; st.f = 0; } else { stop(); return false; }
      } else {
        if (st.f > 0) st.f--;
        else if (st.d > 0) { st.d--; st.f = last(st.d); }
      }
      draw();
      return true;
    }
    const tricksAt = (f) => { const fr = deals[st.d].frames[f]; return fr ? fr.all.tricks : 0; };
    function moveTrick(n) {
      const frames = deals[st.d].frames.length;
      if (n > 0) {
        const now = tricksAt(st.f);
        let f = st.f + 1;
        while (f < frames && tricksAt(f) === now) f++;
        if (f >= frames) { if (st.d < deals.length - 1) { st.d++; st.f = 0; } else st.f = last(st.d); }
        else st.f = f;
      } else {
        let f = st.f - 1;
        while (f > 0 && tricksAt(f) === tricksAt(f - 1)) f--;
        if (f < 0) { if (st.d > 0) { st.d--; st.f = last(st.d); } else st.f = 0; } else st.f = f;
      }
      draw();
    }
    function moveDeal(n) {
      if (n > 0) { if (st.d < deals.length - 1) { st.d++; st.f = 0; } else st.f = last(st.d); }
      else if (st.f > 0) st.f = 0;
      else if (st.d > 0) st.d--;
      draw();
    }
    function play() {
      st.playing = true; playBtn.textContent = "❚❚ pause";
      st.timer = setInterval(() => { if (!move(1)) stop(); }, 1000 / st.speed);
    }
    function stop() { st.playing = false; playBtn.textContent = "▶ play"; clearInterval(st.timer); st.timer = null; }
    function toggle() { if (st.playing) stop(); else play(); }

    document.addEventListener("keydown", (e) => {
      if (e.target.tagName === "INPUT" || e.target.tagName === "SELECT" || e.altKey || e.ctrlKey || e.metaKey) return;
      const k = e.key;
      // Space and Enter on a focused control press it (the browser's own action), not the viewer's.
      if ((k === " " || k === "Enter") && e.target.closest("button, a, summary, [role=button], [tabindex]")) return;
      const act = {
        ArrowRight: () => move(1), ArrowLeft: () => move(-1), ArrowDown: () => moveTrick(1), ArrowUp: () => moveTrick(-1),
        PageDown: () => moveDeal(1), PageUp: () => moveDeal(-1), " ": () => toggle(),
        Home: () => { st.d = 0; st.f = 0; draw(); }, End: () => { st.d = deals.length - 1; st.f = last(st.d); draw(); },
        "+": () => { speedSel.selectedIndex = Math.min(speedSel.selectedIndex + 1, SPEEDS.length - 1); speedSel.onchange(); },
        "-": () => { speedSel.selectedIndex = Math.max(speedSel.selectedIndex - 1, 0); speedSel.onchange(); },
        a: () => { st.view = "all"; draw(); },
      }[k] || (/^[0-9]$/.test(k) && +k < data.players ? () => { st.view = k; draw(); } : null);
      if (act) { e.preventDefault(); act(); }
    });
    speedSel.onchange = () => { st.speed = +speedSel.value; if (st.playing) { stop(); play(); } };
    window.addEventListener("hashchange", () => { parseHash(); draw(); });

    parseHash();
    speedSel.value = String(st.speed);
    drawScores();
    draw();
    root.dataset.ready = "1";
    const goto = (d, f) => { if (d >= 0 && d < deals.length) { st.d = d; st.f = Math.min(Math.max(f, 0), last(d)); draw(); } };
    const onDraw = (fn) => { listeners.push(fn); fn(st.d, st.f); };
    return { move, moveTrick, moveDeal, goto, onDraw, extras, state: st };
  }

  async function boot() {
    const root = K.main();
    const embedded = document.getElementById("replay-data");
    try {
      let data;
      if (embedded) data = JSON.parse(embedded.textContent);
      else {
        const id = K.pathArg();
        const detail = await K.api("/api/matches/" + encodeURIComponent(id));
        if (detail.sealed) throw new Error("This match is the first half of a duplicate pair: its replay stays sealed until its twin has been played.");
        if (detail.status === "running") { location.replace("/live/" + encodeURIComponent(id)); return; }
        data = await K.api("/api/matches/" + encodeURIComponent(id) + "/replay.json");
        data.download = { kzr: `/api/matches/${id}/replay.kzr`, json: `/api/matches/${id}/replay.json` };
        data.detail = detail;
      }
      document.title = "Match " + data.match_id.slice(0, 12) + " · Kozel Arena";
      Viewer.instance = start(data, root);
      if (typeof Analysis !== "undefined") Analysis.attach(Viewer.instance, data); // analysis.js
      if (typeof Luck !== "undefined" && !embedded) Luck.attach(Viewer.instance, data); // luck.js
    } catch (error) { K.fail(error); }
  }

  return { start, boot };
})();

Viewer.boot();
