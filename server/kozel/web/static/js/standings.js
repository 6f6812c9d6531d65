// A ladder's standings, sortable by any column.
"use strict";
(async function () {
  const ladder = K.pathArg();
  try {
    const data = await K.api("/api/ladders/" + encodeURIComponent(ladder) + "/standings");
    const main = K.main();
    main.append(K.el("h1", {}, "Standings: ", K.el("span", { class: "ladder-name", text: data.ladder })));
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
})();
