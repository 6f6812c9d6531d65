// The card table, one drawing for the replay viewer and the live page: the seats around the
// table (two facing, three around, four with partners opposite), each side in its colour and
// named in text, the trick in the middle with the trump, the talon, the last trick and the
// standing. The pages turn what they know into a plain model and call Table.draw; names are
// put into the page as text only (K.el).
"use strict";

const Table = {
  // Where each seat sits, counted round the table from the seat at the bottom.
  PLACES: { 2: ["bottom", "top"], 3: ["bottom", "left", "right"], 4: ["bottom", "left", "top", "right"] },

  place(players, seat, bottom) {
    const places = Table.PLACES[players] || Table.PLACES[4];
    return places[(seat - (bottom || 0) + players) % players] || "bottom";
  },

  // "side 1" or, at four players in teams, "team 1"; the colour is the same cue.
  sideLabel(side, teams) { return `${teams ? "team" : "side"} ${side}`; },

  // One play of a trick: who, what kind, the cards (face-down ones as backs).
  play(p, names, trump) {
    return K.el("span", { class: "play", "data-seat": p.seat, "data-kind": p.kind },
      K.el("span", { class: "by", text: `${names[p.seat]} · ${p.kind}` }),
      p.cards.length ? Cards.hand(p.cards, 0, trump, true) : Cards.hand([], p.count, trump, true));
  },

  // A seat's panel. `s`: { seat, name, side, dealer, toAct, out, you, cards, hidden, facts,
  // clock (ms left on the move clock, counted down while shown), bank (its time bank, ms, as
  // the turn began), extra (a node) }.
  seat(t, s) {
    const teams = t.teams;
    return K.el("section", {
      class: `seat side-${s.side % 4} at-${Table.place(t.players, s.seat, t.bottom)}` + (s.toAct ? " to-act" : "") + (s.out ? " out" : ""),
      "data-seat": s.seat, "data-side": s.side, "data-place": Table.place(t.players, s.seat, t.bottom),
      "aria-label": `${s.name}, seat ${s.seat}, ${Table.sideLabel(s.side, teams)}` + (s.toAct ? ", to act" : ""),
    },
    K.el("div", { class: "who" },
      K.el("span", { class: "name", text: s.name }),
      K.el("span", { class: "tag side", text: `seat ${s.seat} · ${Table.sideLabel(s.side, teams)}` }),
      s.dealer ? K.el("span", { class: "tag", text: "dealer" }) : null,
      s.toAct ? K.el("span", { class: "tag act", "data-to-act": "", text: "to act" }) : null,
      s.toAct && s.clock !== undefined ? Table.clock(s.clock, s.bank) : null,
      s.you ? K.el("span", { class: "tag", text: "you" }) : null,
      s.out ? K.el("span", { class: "tag", text: "out" }) : null),
    K.el("div", { class: "hand", "data-hand": s.seat }, Cards.hand(s.cards, s.hidden, t.trump, false)),
    K.el("div", { class: "facts", "data-facts": s.seat, text: s.facts }),
    s.extra || null);
  },

  // The move clock of the seat to act, counted down from `ms`, then its bank (Table.tick
  // updates it).
  clock(ms, bank) {
    const el = K.el("span", { class: "tag clock", "data-clock": "", "data-deadline": performance.now() + ms, role: "timer" });
    if (bank !== undefined) el.dataset.bank = bank;
    Table.showClock(el);
    return el;
  },

  showClock(el) {
    const left = +el.dataset.deadline - performance.now();
    el.dataset.left = Math.round(left);
    const bank = el.dataset.bank === undefined ? undefined : +el.dataset.bank;
    const secs = (ms) => (Math.max(0, ms) / 1000).toFixed(1);
    if (left >= 0) el.textContent = `clock ${secs(left)} s left` + (bank === undefined ? "" : ` · bank ${secs(bank)} s`);
    else el.textContent = bank === undefined ? `clock: on its bank for ${secs(-left)} s` : `clock: on its bank, ${secs(bank + left)} s left`;
    el.classList.toggle("over", left < 0);
  },

  tick() {
    const clocks = document.querySelectorAll("[data-clock]");
    for (const el of clocks) Table.showClock(el);
    if (!clocks.length) { clearInterval(Table.timer); Table.timer = null; }
  },

  box(label, attrs, ...children) {
    return K.el("div", Object.assign({ class: "box" }, attrs || {}), K.el("div", { class: "label", text: label }), ...children);
  },

  // The middle of the table: the trick in play, the trump, the talon, the last trick and the
  // standing. t.trick / t.last: { plays, note } or null.
  center(t) {
    const names = t.names;
    return K.el("section", { class: "center", "aria-label": "the middle of the table" },
      Table.box("Trick in play", { class: "box trick", "data-trick": "" },
        t.trick && t.trick.plays.length ? [t.trick.plays.map((p) => Table.play(p, names, t.trump)), K.el("div", { text: t.trick.note })]
          : K.el("div", { class: "muted-w", text: t.trickEmpty || "—" })),
      Table.box("Trump", { "data-trump": t.trump },
        t.trumpCard ? Cards.card(t.trumpCard, t.trump, false) : null,
        t.trump ? K.el("div", { class: "muted-w", text: `${Cards.SUITS[t.trump]} ${Cards.SUIT_NAMES[t.trump]} are trump${t.trumpDrawn ? " (card drawn)" : ""}` }) : "—",
        Cards.shokha ? K.el("div", { class: "muted-w", text: "6♠ is the super-trump" }) : null),
      Table.box("Talon", { "data-talon": t.talon }, t.talon ? Cards.back(false) : null, ` ${t.talon} left`),
      Table.box(t.lastLabel || "Last trick", { "data-last": "" },
        t.last ? [t.last.plays.map((p) => Table.play(p, names, t.trump)), K.el("div", { "data-last-winner": t.last.winner, text: t.last.note })]
          : K.el("div", { text: "—" })),
      t.standing ? Table.box("Standing", { class: "box standing", "data-standing": t.standing.leader ?? "" },
        K.el("div", { text: t.standing.text })) : null);
  },

  // Draws the model `t` into `board`: { players, names, teams, bottom, trump, trumpCard,
  // trumpDrawn, talon, seats, trick, trickEmpty, last, lastLabel, standing }.
  draw(board, t) {
    board.className = `board table p${t.players}`;
    board.replaceChildren(Table.center(t), ...t.seats.map((s) => Table.seat(t, s)));
    if (board.querySelector("[data-clock]") && !Table.timer) Table.timer = setInterval(Table.tick, 100);
  },
};
