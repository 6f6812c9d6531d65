// A ladder's standings, sortable by any column, under the ladder's state (running or stopped,
// bots waiting, matches, the latest match's time) with a refresh button.
"use strict";
(async function () {
  const ladder = K.pathArg();
  try {
    const [data, ladders] = await Promise.all([
      K.api("/api/ladders/" + encodeURIComponent(ladder) + "/standings"), K.api("/api/ladders"),
    ]);
    const main = K.main();
    main.append(K.el("h1", {}, "Standings: ", K.el("span", { class: "ladder-name", text: data.ladder })));
    const box = K.el("div", { class: "ladder-state", "data-ladder-state": "", "aria-live": "polite" });
    const refresh = K.el("button", { type: "button", "data-action": "refresh state", text: "refresh",
      onclick: async () => { try { stateOf(box, await K.api("/api/ladders")); } catch (error) { K.fail(error); } } });
    main.append(box, K.el("p", {}, refresh));
    stateOf(box, ladders);
    main.append(K.el("p", { class: "muted", text: "Ordinal = mu − 3 sigma (openskill). Click a column to sort." }));
    for (const r of data.standings) r.corrected = r.luck ? r.luck.value : null;
    main.append(K.table([
      { key: "rank", label: "#", num: true },
      { key: "bot", label: "Bot", render: (r) => K.botLink(r.bot) },
      { key: "ordinal", label: "Ordinal", num: true, digits: 2 },
      { key: "mu", label: "Mu", num: true, digits: 2 },
      { key: "sigma", label: "Sigma", num: true, digits: 2 },
      { key: "matches", label: "Matches", num: true },
      { key: "wins", label: "Wins", num: true },
      { key: "avg_penalty", label: "Avg penalty", num: true, digits: 2 },
      { key: "timeouts", label: "Timeouts", num: true },
      { key: "forfeits", label: "Forfeits", num: true },
      { key: "corrected", label: "Corrected score", num: true, render: (r) => K.luckEstimate(r.luck) },
    ], data.standings, { sortable: true, class: "standings" }));
    main.append(K.luckNote(), K.matchupForm(ladder, data.standings.map((r) => r.bot)));
    main.append(K.el("p", {}, K.link("Matches of this ladder →", "/matches?ladder=" + encodeURIComponent(ladder))));
  } catch (error) { K.fail(error); }

  // The ladder's row of /api/ladders as a few facts in words.
  function stateOf(box, ladders) {
    const l = ladders.find((x) => x.name === ladder);
    if (!l) { box.replaceChildren(K.el("p", { class: "muted", text: "This ladder is not served now." })); return; }
    const m = l.matches || {};
    box.replaceChildren(K.el("dl", { class: "facts-list" },
      K.el("dt", { text: "State" }), K.el("dd", { "data-state": l.state || "", text: K.ladderState(l) }),
      K.el("dt", { text: "Bots connected and waiting" }), K.el("dd", { "data-waiting": l.waiting_bots ?? "", text: l.waiting_bots ?? "unknown" }),
      K.el("dt", { text: "Groups of them at the meeting cap" }), K.el("dd", { "data-capped": l.capped_groups ?? "", text: K.capped(l) || "none" }),
      K.el("dt", { text: "Matches" }), K.el("dd", { text: `${m.finished || 0} played · ${m.running || 0} running` }),
      K.el("dt", { text: "Last match ended" }), K.el("dd", { "data-last-match": l.last_match_at || "", text: K.when(l.last_match_at) || "none yet" })));
  }
})();
