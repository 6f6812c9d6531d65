// A bot's page: its ladders, rating over time (mu with a band of plus or minus sigma, drawn
// with uPlot), latest matches and results against each opponent.
"use strict";
(async function () {
  const name = K.pathArg();
  try {
    const bot = await K.api("/api/bots/" + encodeURIComponent(name));
    const main = K.main();
    main.append(K.el("h1", {}, "Bot ", K.el("span", { class: "bot-name", text: bot.name })));
    main.append(K.el("p", { class: "muted", text: `status ${bot.status}` + (bot.created_at ? ` · registered ${K.when(bot.created_at)}` : "") }));
    main.append(K.el("p", { class: "play-link" }, K.link("Play it by hand", "/play?opponent=own"), ": open a table with a seat it joins by the table id (never rated)"));
    main.append(K.el("h2", { text: "Ladders" }));
    main.append(K.table([
      { key: "ladder", label: "Ladder", render: (r) => K.ladderLink(r.ladder) },
      { key: "ordinal", label: "Ordinal", num: true, digits: 2 }, { key: "mu", label: "Mu", num: true, digits: 2 },
      { key: "sigma", label: "Sigma", num: true, digits: 2 }, { key: "matches", label: "Matches", num: true },
      { key: "wins", label: "Wins", num: true }, { key: "avg_penalty", label: "Avg penalty", num: true, digits: 2 },
      { key: "timeouts", label: "Timeouts", num: true }, { key: "forfeits", label: "Forfeits", num: true },
    ], bot.ladders));
    for (const lad of bot.ladders) {
      const hist = await K.api(`/api/bots/${encodeURIComponent(name)}/ratings?ladder=${encodeURIComponent(lad.ladder)}`);
      main.append(K.el("h2", {}, "Rating on ", K.el("span", { text: lad.ladder })));
      const box = K.el("div", { class: "chart", "data-chart": lad.ladder, "data-points": hist.points.length });
      main.append(box);
      if (!hist.points.length) { box.append(K.el("p", { class: "muted", text: "No rated match yet." })); continue; }
      const xs = hist.points.map((p, i) => i + 1);
      const mu = hist.points.map((p) => p.mu);
      const hi = hist.points.map((p) => p.mu + p.sigma);
      const lo = hist.points.map((p) => p.mu - p.sigma);
      const width = Math.max(280, Math.min(box.clientWidth - 16, 1100));
      new uPlot({
        width, height: 260, scales: { x: { time: false } },
        axes: [{ label: "rated match" }, { label: "mu" }],
        series: [{ label: "match" },
          { label: "mu + sigma", stroke: "rgba(11,92,173,.35)", width: 1 },
          { label: "mu", stroke: "#0b5cad", width: 2 },
          { label: "mu − sigma", stroke: "rgba(11,92,173,.35)", width: 1 }],
        bands: [{ series: [1, 3], fill: "rgba(11,92,173,.15)" }],
      }, [xs, hi, mu, lo], box);
    }
    main.append(K.el("h2", { text: "Latest matches" }));
    main.append(bot.recent_matches.length ? K.matchRows(bot.recent_matches) : K.el("p", { class: "muted", text: "None yet." }));
    main.append(K.el("p", {}, K.link("All matches of this bot →", "/matches?bot=" + encodeURIComponent(bot.name))));
    main.append(K.el("h2", { text: "Against each opponent" }));
    main.append(K.table([
      { key: "opponent", label: "Opponent", render: (r) => K.botLink(r.opponent) },
      { key: "matches", label: "Matches", num: true }, { key: "wins", label: "Won", num: true },
      { key: "losses", label: "Lost", num: true }, { key: "draws", label: "Drawn", num: true },
    ], bot.opponents, { sortable: true, class: "opponents" }));
  } catch (error) { K.fail(error); }
})();
