// The match page's luck panel: each deal's card points split into luck (what the cards gave,
// docs/luck.md) and skill (the rest), by side. Hooked into the viewer (viewer.js).
"use strict";
const Luck = (function () {
  async function attach(viewer, replay) {
    let data;
    try { data = await K.api("/api/matches/" + encodeURIComponent(replay.match_id) + "/luck"); }
    catch (error) { return; } // the figures are an extra: the replay is shown all the same
    if (data.status === "none") return; // not a ladder match
    const panel = K.el("section", { class: "luck", "data-luck-panel": "" }, K.el("h2", { text: "Luck and skill" }));
    viewer.extras.append(panel);
    if (data.status === "pending") { panel.append(K.el("p", { class: "muted", text: "The luck of this match is being computed: reload in a moment." })); return; }
    if (data.error) { panel.append(K.el("p", { class: "muted", text: "No luck figures: " + data.error })); return; }
    const sides = [...new Set(replay.seats.map((s) => s.side))].sort();
    const names = (i) => replay.seats.filter((s) => s.side === i).map((s) => s.name).join(" + ");
    const signed = (x) => x === null || x === undefined ? "" : (x >= 0 ? "+" : "") + K.num(x, 1);
    const rows = data.deals.map((d, i) => {
      const row = { deal: i + 1 };
      for (const s of sides) {
        const p = d.points[s], l = d.luck[s];
        row["r" + s] = signed(p); row["l" + s] = signed(l);
        row["s" + s] = p === null || l === null ? "" : signed(p - l);
      }
      return row;
    });
    const columns = [{ key: "deal", label: "Deal", num: true }];
    for (const s of sides) {
      columns.push({ key: "r" + s, label: `${names(s)}: points`, num: true },
        { key: "l" + s, label: "luck", num: true }, { key: "s" + s, label: "skill", num: true });
    }
    const total = { deal: "all" };
    for (const x of data.sides) {
      total["r" + x.side] = signed(x.points); total["l" + x.side] = signed(x.points_luck);
      total["s" + x.side] = signed(x.points - x.points_luck);
    }
    const score = data.sides.map((x) =>
      `${names(x.side)}: ${K.num(x.score, 1)} − luck ${K.num(x.score_luck, 3)} = ${K.num(x.score - x.score_luck, 3)}`);
    panel.append(K.el("p", { class: "muted", text: "Card points of each side against the average side; luck is the part " +
      "the deal and the draws gave (version " + data.version + "), skill the rest (points − luck)." }),
    K.table(columns, rows.concat(data.sides.length ? [total] : []), { class: "luck-deals" }),
    K.el("p", { "data-luck-score": "", text: "Match score corrected for luck: " + score.join(" · ") }));
  }
  return { attach };
})();
