// A bot's page: its ladders, its ordinal over time (the figure standings sort by, mu − 3
// sigma, with mu and its band of plus or minus sigma; drawn with uPlot, whole-number ticks),
// its latest matches with each result and rating change, results against each opponent.
"use strict";
(async function () {
  const name = K.pathArg();
  try {
    const bot = await K.api("/api/bots/" + encodeURIComponent(name));
    const main = K.main();
    main.append(K.el("h1", {}, "Bot ", K.el("span", { class: "bot-name", text: bot.name })));
    main.append(K.el("p", { class: "muted", text: `status ${bot.status}` + (bot.created_at ? ` · registered ${K.when(bot.created_at)}` : "") }));
    main.append(K.el("p", { class: "play-link" }, K.link("Play it by hand", "/play?opponent=own"), ": open a table with a seat it joins by the table id (never rated)"));
    main.append(await people(bot));
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
      chart(box, hist.points);
    }
    main.append(K.el("h2", { text: "Latest matches" }));
    main.append(bot.recent_matches.length ? recent(bot.name, bot.recent_matches) : K.el("p", { class: "muted", text: "None yet." }));
    main.append(K.el("p", {}, K.link("All matches of this bot →", "/matches?bot=" + encodeURIComponent(bot.name))));
    main.append(K.el("h2", { text: "Against each opponent" }));
    main.append(K.table([
      { key: "opponent", label: "Opponent", render: (r) => K.botLink(r.opponent) },
      { key: "matches", label: "Matches", num: true }, { key: "wins", label: "Won", num: true },
      { key: "losses", label: "Lost", num: true }, { key: "draws", label: "Drawn", num: true },
    ], bot.opponents, { sortable: true, class: "opponents" }));
  } catch (error) { K.fail(error); }

  // Whether people may play it, and while it is connected a way to sit down against it.
  async function people(bot) {
    const box = K.el("p", { class: "plays-people", id: "plays-people" });
    if (!bot.plays_people) {
      box.append("Plays people: no (its author has not allowed it)");
      return box;
    }
    box.append("Plays people: yes. ");
    let opts = null;
    try { opts = await K.api("/api/seats/options"); } catch (_) { /* no seats here */ }
    const here = opts && opts.enabled ? (opts.bots || []).find((b) => b.name === bot.name) : null;
    if (!here) box.append(K.el("span", { class: "muted", text: "It is not connected now: you can play it while it is." }));
    else {
      box.append(K.link("Play this bot", "/play?opponent=" + encodeURIComponent("bot:" + bot.name)));
      box.lastChild.id = "play-this-bot";
      box.append(here.free ? ": open a table against it (never rated)" : ": it is busy with its matches now; your table waits for its next free match slot");
    }
    return box;
  }

  // Ticks at whole numbers only (uPlot picks among these steps), written on the box as well.
  function whole(box, axis) {
    return { incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000],
      values: (u, splits) => { box.dataset[axis] = splits.join(" "); return splits.map((v) => String(v)); } };
  }

  function chart(box, points) {
    const xs = points.map((p, i) => i + 1);
    const ordinal = points.map((p) => p.mu - 3 * p.sigma);
    box.dataset.lastOrdinal = K.num(ordinal[ordinal.length - 1]);
    const width = Math.max(280, Math.min(box.clientWidth - 16, 1100));
    new uPlot({
      width, height: 260, scales: { x: { time: false } },
      axes: [{ label: "rated match", ...whole(box, "xTicks") }, { label: "rating", ...whole(box, "yTicks") }],
      series: [{ label: "match" },
        { label: "ordinal (mu − 3 sigma)", stroke: "#0b5cad", width: 2 },
        { label: "mu + sigma", stroke: "rgba(120,120,120,.35)", width: 1 },
        { label: "mu", stroke: "#777", width: 1, dash: [4, 4] },
        { label: "mu − sigma", stroke: "rgba(120,120,120,.35)", width: 1 }],
      bands: [{ series: [2, 4], fill: "rgba(120,120,120,.12)" }],
    }, [xs, ordinal, points.map((p) => p.mu + p.sigma), points.map((p) => p.mu), points.map((p) => p.mu - p.sigma)], box);
  }

  // The bot's latest matches: each one's result for this bot and its rating change (mu).
  function recent(me, matches) {
    const mine = (m) => m.seats.find((s) => s.bot === me) || {};
    const result = (m) => {
      const s = mine(m);
      if (m.status !== "finished" || !s.rank) return m.status;
      const firsts = m.seats.filter((x) => x.rank === 1 && x.side !== s.side).length;
      const sides = new Set(m.seats.map((x) => x.side)).size;
      return s.rank === 1 ? (firsts ? "drawn" : "won") : sides > 2 ? `lost (rank ${s.rank} of ${sides})` : "lost";
    };
    const change = (m) => {
      const s = mine(m);
      if (s.mu_before === null || s.mu_before === undefined || s.mu_after === null || s.mu_after === undefined) return "not rated";
      const d = s.mu_after - s.mu_before;
      return `${K.num(s.mu_before)} → ${K.num(s.mu_after)} (${d >= 0 ? "+" : "−"}${K.num(Math.abs(d))})`;
    };
    return K.table([
      { key: "started_at", label: "Started", render: (m) => K.matchLink(m.match_id, K.when(m.started_at)) },
      { key: "ladder", label: "Ladder", render: (m) => m.ladder ? K.ladderLink(m.ladder) : "" },
      { key: "seats", label: "Against", render: (m) => K.el("span", {}, m.seats.filter((s) => s.bot !== me).map((s, i) => [i ? " · " : "", K.botLink(s.bot)])) },
      { key: "result", label: "Result", render: (m) => K.el("span", { "data-result": m.match_id, text: result(m) }) },
      { key: "penalty", label: "Penalty", num: true, render: (m) => mine(m).penalty ?? "" },
      { key: "change", label: "Rating (mu)", render: (m) => K.el("span", { "data-change": m.match_id, text: change(m) }) },
    ], matches, { class: "matches recent" });
  }
})();
