// Two bots on one ladder: their matches, results and luck, and each one's luck-corrected score.
"use strict";
(async function () {
  const parts = location.pathname.split("/").filter(Boolean);
  const ladder = decodeURIComponent(parts[1] || "");
  const q = new URLSearchParams(location.search);
  const a = q.get("a") || "", b = q.get("b") || "";
  try {
    const path = `/api/ladders/${encodeURIComponent(ladder)}/matchup?a=${encodeURIComponent(a)}&b=${encodeURIComponent(b)}`;
    const data = await K.api(path);
    document.title = `${a} vs ${b} · Kozel Arena`;
    const main = K.main();
    main.append(K.el("h1", {}, K.botLink(data.a), " vs ", K.botLink(data.b), " on ", K.ladderLink(data.ladder)));
    const perf = [data.a, data.b].map((bot) => ({ bot, est: data.performance[bot] || null }));
    main.append(K.table([
      { key: "bot", label: "Bot", render: (r) => K.botLink(r.bot) },
      { key: "matches", label: "Matches", num: true, render: (r) => r.est ? r.est.matches : "" },
      { key: "plain", label: "Score", num: true, render: (r) => r.est ? K.num(r.est.plain, 2) : "" },
      { key: "est", label: "Corrected score", num: true, render: (r) => K.luckEstimate(r.est) },
    ], perf, { class: "matchup-performance" }), K.luckNote());
    main.append(K.el("h2", { text: `Matches: ${data.matches.length}` }));
    const seat = (m, bot) => m.seats.find((s) => s.bot === bot) || {};
    const cell = (m, bot) => {
      const s = seat(m, bot);
      if (s.score === null || s.score === undefined) return s.rank ? `rank ${s.rank}` : "";
      return `${K.num(s.score, 1)} (luck ${s.luck >= 0 ? "+" : ""}${K.num(s.luck, 2)}, corrected ${K.num(s.corrected, 2)})`;
    };
    main.append(K.table([
      { key: "ended_at", label: "Ended", render: (m) => K.matchLink(m.match_id, K.when(m.ended_at)) },
      { key: "seats", label: "Seats (rank)", render: (m) => K.el("span", {}, m.seats.map((s, i) => [i ? " · " : "", K.botLink(s.bot), s.rank ? ` (${s.rank})` : ""])) },
      { key: "a", label: data.a, render: (m) => cell(m, data.a) },
      { key: "b", label: data.b, render: (m) => cell(m, data.b) },
      { key: "group", label: "Duplicate group", render: (m) => m.group === m.match_id ? "" : m.group.slice(0, 12) },
    ], data.matches, { class: "matchup-matches" }));
  } catch (error) { K.fail(error); }
})();
