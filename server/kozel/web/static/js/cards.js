// Cards: a code is rank then suit ("TH" is the ten of hearts). Each card element carries its
// code in data-card ("back" for a card shown face down), which the browser tests read.
"use strict";

const Cards = {
  SUITS: { S: "♠", C: "♣", D: "♦", H: "♥" },
  SUIT_NAMES: { S: "spades", C: "clubs", D: "diamonds", H: "hearts" },
  RANKS: { T: "10" },

  shokha: true, // the 6♠ beats every card (the ruleset's `shokha` knob); pages set it

  // A card as text: "10♥".
  text(code) { return (Cards.RANKS[code[0]] || code[0]) + (Cards.SUITS[code[1]] || code[1]); },

  // A card face; a trump and the super-trump say so in text (a mark and the label), not only
  // by colour.
  card(code, trump, small) {
    const rank = code[0], suit = code[1];
    const red = suit === "D" || suit === "H";
    const superTrump = Cards.shokha && code === "6S";
    const isTrump = trump && suit === trump;
    const label = Cards.text(code) + (superTrump ? " super-trump" : isTrump ? " trump" : "");
    return K.el("span", {
      class: "card" + (red ? " red" : "") + (isTrump ? " trump" : "") + (superTrump ? " super" : "") + (small ? " small" : ""),
      "data-card": code, title: label + " (" + Cards.SUIT_NAMES[suit] + ")", role: "img", "aria-label": label,
    }, K.el("span", { class: "rank", text: Cards.RANKS[rank] || rank }), K.el("span", { class: "suit", text: Cards.SUITS[suit] }),
    superTrump ? K.el("span", { class: "mark", "aria-hidden": "true", text: "super" }) : isTrump ? K.el("span", { class: "mark", "aria-hidden": "true", text: "trump" }) : null);
  },

  back(small) {
    return K.el("span", { class: "card back" + (small ? " small" : ""), "data-card": "back", title: "face down", role: "img", "aria-label": "face down" });
  },

  // Face-up cards, then `hidden` backs.
  hand(codes, hidden, trump, small) {
    const out = codes.map((c) => Cards.card(c, trump, small));
    for (let i = 0; i < hidden; i++) out.push(Cards.back(small));
    return out;
  },

  suit(letter) {
    const red = letter === "D" || letter === "H";
    return K.el("span", { class: red ? "card-suit red" : "card-suit", style: null, text: Cards.SUITS[letter] + " " + Cards.SUIT_NAMES[letter] });
  },
};
