// The live page: follows a running match through /api/live/<id>/events (Server-Sent Events,
// each one a WatchMatch SpectatorEvent). It shows what the stream carries and nothing more:
// in the public view hands are backs (plus the cards everyone knows), in the full view (held
// back by the referee's delay) every hand. Events are buffered and shown at a chosen pace
// (a bot match can play 70 events in 5 s); "catch up" shows everything that waits.
"use strict";
(function () {
  const id = K.pathArg();
  const full = new URLSearchParams(location.search).get("full") === "1";
  const main = K.main();
  const dot = K.el("span", { class: "live-dot", "data-live-dot": "on", role: "img", "aria-label": "live" });
  const label = K.el("span", { text: "Live: " });
  const head = K.el("h1", {}, dot, label, K.el("span", { class: "mid", text: id }));
  const status = K.el("p", { class: "status muted", "data-status": "connecting", text: "connecting…" });
  const result = K.el("p", { class: "result", "data-result": "", "aria-live": "polite" });
  const pace = Pace();
  const switcher = K.el("p", {}, full ? K.link("public view", location.pathname) : K.link("full view (delayed)", location.pathname + "?full=1"));
  const dealLine = K.el("p", { class: "deal-line", "data-deal-line": "" });
  const board = K.el("div", { class: "board", "data-board": "" });
  const log = K.el("div", { class: "log", "data-log": "", role: "log", tabindex: "0", "aria-label": "events, newest first" });
  main.append(head, status, result, switcher, pace.controls, dealLine, board, K.el("h2", { text: "Events" }), log);

  const st = { names: [], players: 0, trump: "", trumpCard: "", dealer: 0, deal: 0, sizes: [], known: [],
               hands: null, trick: [], last: null, talon: 0, totals: [], events: 0, over: false, winner: null,
               seats: [], rules: null, money: false, toAct: [], turnAt: 0, moveMs: 0, points: [], won: [], banks: [] };
  // Penalty totals by side, or chips by seat in the money game, as a deal starts.
  const totalsOf = (d) => (st.money ? d.chips : d.penalty_totals) || [];
  const seatName = (s) => st.names[s || 0] || `seat ${s || 0}`;

  function note(text) {
    log.prepend(K.el("div", { text }));
    while (log.childElementCount > 200) log.lastChild.remove();
  }

  // A play as the stream has it (proto JSON leaves out zeros), as the table draws it.
  const playOf = (p) => ({ seat: p.seat || 0, kind: (p.kind || "").replace("ACTION_KIND_", "").toLowerCase(),
    cards: p.cards || [], count: p.count || 0 });
  const sideOf = (s) => (st.sides || [])[s] || 0;

  // The shared drawing of the table (table.js), from what the stream has told so far.
  function draw() {
    const seats = [];
    const acting = st.over ? [] : st.toAct;
    const clock = st.moveMs ? st.moveMs - (performance.now() - st.turnAt) : undefined;
    for (let s = 0; s < st.players; s++) {
      const shown = st.hands ? st.hands[s] || [] : st.known[s] || [];
      seats.push({ seat: s, name: seatName(s), side: sideOf(s), dealer: st.dealer === s, toAct: acting.includes(s),
        cards: shown, hidden: Math.max(0, (st.sizes[s] || 0) - shown.length), clock, bank: st.banks[s],
        facts: `${K.count(st.sizes[s] || 0, "card")} · ${K.count(st.won[s] || 0, "trick")}`
          + (st.banks[s] === undefined ? "" : ` · bank ${(st.banks[s] / 1000).toFixed(1)} s`) });
    }
    const last = st.last;
    Table.draw(board, {
      players: st.players, names: st.names, teams: st.players === 4 && new Set(st.sides).size === 2, bottom: 0, seats,
      trump: st.trump, trumpCard: st.trumpCard, talon: st.talon,
      trick: st.trick.length ? { plays: st.trick.map(playOf), note: "" } : null, trickEmpty: st.over ? "match over" : "—",
      last: last && { plays: (last.plays || []).map(playOf), winner: last.winner || 0,
        note: `won by ${seatName(last.winner)} · ${last.known_points || 0} points seen` },
      standing: st.players ? Story.standing(st.seats, st.totals.length ? st.totals : null, st.points, st.rules, st.money) : null,
    });
    dealLine.textContent = st.players ? `Deal ${st.deal + 1} · ${seatName(st.dealer)} deals` + (acting.length ? ` · ${acting.map(seatName).join(", ")} to act` : "") : "";
    board.dataset.events = st.events;
  }

  function fromObservation(obs) {
    st.players = obs.players || st.players;
    st.trump = obs.trump || ""; st.trumpCard = obs.trump_card || ""; st.dealer = obs.dealer || 0;
    st.talon = obs.talon || 0;
    st.sizes = (obs.seats || []).map((s) => s.hand_size || 0);
    st.known = (obs.seats || []).map((s) => s.known_cards || []);
    st.trick = obs.trick ? obs.trick.plays || [] : [];
    const tricks = obs.tricks || [];
    st.last = tricks.length ? tricks[tricks.length - 1] : null;
    st.toAct = obs.to_act || []; st.turnAt = performance.now();
    st.won = (obs.seats || []).map((s) => s.tricks_won || 0);
    st.points = [];
    for (const s of obs.seats || []) st.points[sideOf(s.seat || 0)] = (st.points[sideOf(s.seat || 0)] || 0) + (s.known_points || 0);
  }

  function handle(kind, ev) {
    st.events++;
    if (ev.hands) { st.hands = []; for (const h of ev.hands) st.hands[h.seat || 0] = h.cards || []; }
    if (ev.turn) { // its clock starts as it is shown
      st.toAct = ev.turn.seats || []; st.turnAt = performance.now();
      if (ev.turn.bank_ms) st.banks = ev.turn.bank_ms;
    }
    if (kind === "snapshot") {
      const snap = ev.snapshot, m = snap.match || {};
      st.players = m.players || 0;
      const opts = (m.ruleset && m.ruleset.options) || {};
      st.deckSize = 36 - (opts.removed_cards || []).length;
      st.names = []; st.sides = [];
      for (const p of m.seating || []) { st.names[p.seat || 0] = p.name || ""; st.sides[p.seat || 0] = p.side || 0; }
      st.seats = st.names.map((name, i) => ({ name, side: st.sides[i] || 0 }));
      st.rules = { limit: opts.limit, fixed_deals: opts.fixed_deals };
      st.money = opts.game === "money";
      st.moveMs = (m.time_control && m.time_control.move_ms) || 0;
      Cards.shokha = opts.shokha !== false;
      if (snap.deal) fromObservation(snap.deal);
      if (snap.deal_start) { st.deal = snap.deal_start.deal_index || 0; st.totals = totalsOf(snap.deal_start); }
      status.textContent = `${st.players} players · ${m.ruleset && m.ruleset.preset || "classic"}` + (snap.ladder ? ` · ladder ${snap.ladder}` : "") + (snap.full ? ` · full view, ${snap.delay_ms} ms behind` : " · public view");
      note("watching " + st.names.join(", "));
    } else if (kind === "deal_start") {
      const d = ev.deal_start;
      st.deal = d.deal_index || 0; st.trump = d.trump; st.trumpCard = d.trump_card; st.dealer = d.dealer || 0;
      st.trick = []; st.last = null; st.known = []; st.totals = totalsOf(d); st.points = []; st.won = [];
      const active = d.active_seats || [];
      const deal = st.deckSize || 36;
      st.sizes = Array.from({ length: st.players }, (_, s) => (active.includes(s) ? 4 : 0));
      st.talon = Math.max(0, deal - 4 * active.length);
      note(`deal ${st.deal + 1}: ${seatName(st.dealer)} deals, trump ${Cards.SUITS[st.trump] || st.trump}`);
    } else if (kind === "event") {
      const e = ev.event;
      if (e.played) {
        const p = e.played;
        st.trick.push(p);
        st.sizes[p.seat || 0] = Math.max(0, (st.sizes[p.seat || 0] || 0) - (p.count || 0));
        if (st.known[p.seat || 0] && p.cards) st.known[p.seat || 0] = st.known[p.seat || 0].filter((c) => !p.cards.includes(c));
        note(`${seatName(p.seat)} ${(p.kind || "").replace("ACTION_KIND_", "").toLowerCase()} ${(p.cards || []).map(Cards.text).join(" ") || `(${p.count} face down)`}`);
      } else if (e.trick_taken) {
        st.last = e.trick_taken.trick; st.trick = [];
        const w = st.last.winner || 0;
        st.won[w] = (st.won[w] || 0) + 1;
        st.points[sideOf(w)] = (st.points[sideOf(w)] || 0) + (st.last.known_points || 0);
        note(`trick to ${seatName(st.last.winner)}, ${st.last.known_points || 0} points seen`);
      } else if (e.drawn) {
        (e.drawn.counts || []).forEach((n, s) => { st.sizes[s] = (st.sizes[s] || 0) + (n || 0); });
        st.talon = e.drawn.talon || 0;
      } else if (e.declared) {
        note(`${seatName(e.declared.seat)} declares ${(e.declared.combo || "").replace("COMBO_", "").toLowerCase()}`);
      } else if (e.notice) {
        note(`${seatName(e.notice.seat)}: ${(e.notice.kind || "").replace("NOTICE_KIND_", "").toLowerCase()}`);
      }
    } else if (kind === "deal_end") {
      const d = ev.deal_end;
      note(`deal ${(d.deal_index || 0) + 1} ends: ` + (d.scores || []).map((s) => `side ${s.side || 0} ${s.card_points || 0} points, penalty ${s.penalty || 0}`).join("; "));
      st.totals = st.money ? d.chips || [] : (d.scores || []).map((s) => s.penalty_total || 0);
      st.toAct = [];
    } else if (kind === "match_end") {
      ended(ev.match_end);
    } else if (kind === "dropped") {
      status.textContent = "the referee dropped this stream: " + ev.dropped;
    }
    draw();
  }

  // The end: the dot goes off, the heading says so, the winner is named with the rule.
  function ended(end) {
    st.over = true; st.toAct = [];
    const r = end.result || {};
    status.textContent = `the match has ended: ${K.reason(r.reason)}`;
    status.dataset.status = "ended";
    const o = Story.outcome(r, st.seats, st.rules, st.money);
    result.textContent = o.text;
    result.dataset.winner = o.winner || "";
    dot.dataset.liveDot = "off"; dot.setAttribute("aria-label", "ended"); label.textContent = "Ended: ";
    if (end.replay_id) main.insertBefore(K.el("p", {}, K.link("Open the replay →", "/matches/" + encodeURIComponent(end.replay_id))), board);
    note("match over");
  }

  const source = new EventSource(`/api/live/${encodeURIComponent(id)}/events${full ? "?full=true" : ""}`);
  for (const kind of ["snapshot", "deal_start", "event", "deal_end", "match_end", "dropped"]) {
    source.addEventListener(kind, (msg) => {
      if (status.dataset.status === "connecting") status.dataset.status = "live";
      const ev = JSON.parse(msg.data);
      if (kind === "snapshot" || kind === "dropped") handle(kind, ev); else pace.push(kind, ev);
      if (kind === "match_end" || kind === "dropped") source.close();
    });
  }
  let streamClosed = false;
  const closedNote = () => {
    if (!st.over) { status.textContent = "the stream closed (the match may have ended)"; status.dataset.status = "closed"; }
  };
  source.onerror = () => {
    streamClosed = true;
    if (!pace.waiting()) closedNote(); // else once what waits has been shown
    source.close();
  };
  draw();

  // The buffer between the stream and the page: one event that changes the table per tick
  // (the others, such as cards drawn, go along with the next), at a speed people choose.
  function Pace() {
    const SPEEDS = [["0.5", "½ event a second"], ["1", "1 event a second"], ["2", "2 events a second"],
      ["4", "4 events a second"], ["0", "as they come"]];
    const queue = [];
    let timer = null, received = 0;
    const waitingEl = K.el("span", { class: "muted", "data-queued": "0", "aria-live": "off", text: "" });
    const speed = K.el("select", { "aria-label": "speed", "data-action": "pace", onchange: () => restart() },
      SPEEDS.map(([v, t]) => K.el("option", { value: v, text: t })));
    speed.value = "2";
    const catchUp = K.el("button", { type: "button", "data-action": "catch up", text: "catch up »", onclick: () => flush() });
    const controls = K.el("p", { class: "controls pace sticky" }, K.el("label", {}, "Pace ", speed), catchUp, waitingEl);
    const shown = (kind, ev) => kind !== "event" || !ev.event || ev.event.played || ev.event.trick_taken || ev.event.declared;
    function step() {
      while (queue.length) {
        const [kind, ev] = queue.shift();
        handle(kind, ev);
        if (shown(kind, ev)) break;
      }
      tell();
      if (!queue.length) drained();
    }
    function flush() { while (queue.length) handle(...queue.shift()); tell(); drained(); }
    function drained() { stop(); if (streamClosed) closedNote(); }
    function tell() {
      waitingEl.dataset.queued = queue.length; waitingEl.dataset.received = received;
      waitingEl.textContent = queue.length ? ` ${K.count(queue.length, "event")} waiting` : "";
    }
    function stop() { clearInterval(timer); timer = null; }
    function restart() { stop(); if (queue.length) start(); }
    function start() {
      const per = +speed.value;
      if (!per) { flush(); return; }
      timer = setInterval(step, 1000 / per);
    }
    function push(kind, ev) {
      queue.push([kind, ev]); received++;
      if (+speed.value === 0) flush();
      else if (!timer) start();
      tell();
    }
    return { controls, push, waiting: () => queue.length > 0 };
  }
})();
