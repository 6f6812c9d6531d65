// Tournament pages: the list of events, and one event (stage, round, pairings with live and
// finished games, standings, knockout brackets drawn as SVG, the crosstable, the winners).
// Every name is set as text (textContent), never as markup.
"use strict";
(async function () {
  const parts = location.pathname.split("/").filter(Boolean);
  const name = parts.length > 1 ? decodeURIComponent(parts[1]) : "";
  try {
    if (!name) return await list();
    await event(name);
  } catch (error) { K.fail(error); }

  async function list() {
    const events = await K.api("/api/tournaments");
    const main = K.main();
    main.append(K.el("h1", { text: "Tournaments" }));
    if (!events.length) { main.append(K.el("p", { class: "muted", text: "No tournament yet." })); return; }
    main.append(K.table([
      { key: "name", label: "Event", render: (e) => K.link(e.name, "/tournaments/" + encodeURIComponent(e.name)) },
      { key: "stages", label: "Stages", render: (e) => e.stages.join(" → ") },
      { key: "bots", label: "Bots", num: true },
      { key: "games_finished", label: "Games played", num: true },
      { key: "done", label: "State", render: (e) => e.done ? "over" : "under way" },
    ], events, { class: "tournaments" }));
  }

  async function event(name) {
    const data = await K.api("/api/tournaments/" + encodeURIComponent(name));
    const main = K.main();
    main.append(K.el("h1", {}, "Tournament: ", K.el("span", { class: "event-name", text: data.name })));
    const where = data.current
      ? `stage ${data.current.stage + 1} (${data.stages[data.current.stage].format}), round ${data.current.round ?? "-"}`
      : "over";
    main.append(K.el("p", { class: "event-state" },
      `${data.planned_stages.join(" then ")} · ${data.players} a table · ${data.groups} seed group(s) a pairing · `,
      K.el("strong", { text: where })));
    if (Object.keys(data.winners).length) {
      main.append(K.el("p", { class: "winners" }, "Winners: ",
        Object.entries(data.winners).map(([rule, who], i) => [i ? " · " : "", `${rule.replace(/_/g, " ")}: `, K.el("strong", { text: who ?? "—" })])));
    }
    main.append(K.el("p", {}, K.link("Download every replay (zip)", `/api/tournaments/${encodeURIComponent(name)}/replays.zip`)));
    for (const st of data.stages) main.append(stage(st));
    main.append(crosstable(data.crosstable));
    if (!data.done) setTimeout(() => event(name).catch(K.fail), 5000);
  }

  function stage(st) {
    const box = K.el("section", { class: "stage" });
    box.append(K.el("h2", { text: `${st.name}: ${st.format.replace(/_/g, " ")}${st.done ? "" : " (under way)"}` }));
    box.append(standings(st), luckNote());
    if (st.format === "knockout") box.append(bracket(st.bracket));
    for (const rnd of st.rounds.slice().reverse()) box.append(round(st, rnd));
    return box;
  }

  function standings(st) {
    const keys = st.standings.length ? Object.keys(st.standings[0].tie_breaks) : [];
    const knockout = st.format === "knockout";
    return K.table([
      { key: "rank", label: "#", num: true, render: (r) => String(knockout ? r.place : r.rank) },
      { key: "name", label: "Bot", render: (r) => K.el("span", {}, r.name, r.withdrawn ? K.el("em", { text: " (withdrawn)" }) : "") },
      { key: "score", label: knockout ? "Pairings won" : "Score", num: true },
      { key: "wdl", label: "W-D-L", render: (r) => `${r.wins}-${r.draws}-${r.losses}` },
      { key: "game_points", label: "Game points", num: true },
      { key: "games", label: "Games", num: true },
      { key: "forfeits", label: "Forfeits", num: true },
      ...keys.map((k) => ({ key: k, label: k.replace(/_/g, " "), num: true, render: (r) => String(r.tie_breaks[k]) })),
      { key: "luck_corrected", label: "Luck-corrected", num: true, render: (r) => r.luck_corrected === null ? "—" : K.luckEstimate(r.luck_corrected) },
    ], st.standings, { class: "standings" });
  }

  function luckNote() {
    return K.el("p", { class: "muted", text: "Luck-corrected: the mean game points per game (1 the best side, 0 the worst) " +
      "minus the part the cards gave (its luck), ± its 95 % interval over seed groups; it reads like game points. " +
      "Scores, standings and winners stay on the games' results." });
  }

  function round(st, rnd) {
    const box = K.el("details", { class: "round", open: !rnd.done || null });
    box.append(K.el("summary", { text: `${st.format === "knockout" ? "Bracket " : "Round "}${rnd.label}${rnd.done ? "" : " — playing"}` }));
    if (rnd.byes.length) box.append(K.el("p", { class: "muted", text: "Bye: " + rnd.byes.join(", ") }));
    box.append(K.table([
      { key: "label", label: "Pairing", render: (p) => p.label || p.key.split(".").pop() },
      { key: "order", label: "Bots", render: (p) => p.order.map((n, i) => [i ? " vs " : "", K.el(p.winner === n ? "strong" : "span", { text: n })]) },
      { key: "points", label: "Game points", render: (p) => p.game_points ? p.order.map((n) => p.game_points[n]).join(" – ") : "" },
      { key: "games", label: "Games", render: (p) => K.el("span", { class: "games" }, p.games.map(game)) },
    ], rnd.pairings, { class: "pairings" }));
    return box;
  }

  function game(g) {
    const title = `${g.seats.join(" · ")} (${g.status})`;
    if (g.live) return K.el("a", { class: "game live", href: "/live/" + g.match_id, title, text: "▶" });
    if (g.replay) return K.el("a", { class: "game done", href: "/matches/" + g.match_id, title, text: "●" });
    return K.el("span", { class: "game " + g.status, title, text: g.status === "decided" ? "×" : "○" });
  }

  function bracket(matches) {
    const NS = "http://www.w3.org/2000/svg";
    const cols = [...new Set(matches.map((m) => m.side === "F" ? m.id : m.side + m.round))];
    const rows = {};
    for (const m of matches) {
      const col = m.side === "F" ? m.id : m.side + m.round;
      (rows[col] = rows[col] || []).push(m);
    }
    const W = 170, H = 46, GAP = 14;
    const height = Math.max(...Object.values(rows).map((r) => r.length)) * (H + GAP) + 30;
    const svg = document.createElementNS(NS, "svg");
    svg.setAttribute("class", "bracket");
    svg.setAttribute("width", String(cols.length * (W + 30)));
    svg.setAttribute("height", String(height));
    const text = (x, y, value, cls) => {
      const t = document.createElementNS(NS, "text");
      t.setAttribute("x", String(x)); t.setAttribute("y", String(y));
      if (cls) t.setAttribute("class", cls);
      t.textContent = value;
      svg.append(t);
    };
    cols.forEach((col, c) => {
      const x = c * (W + 30) + 4;
      text(x, 14, col, "col");
      const list = rows[col];
      const step = (height - 30) / list.length;
      list.forEach((m, i) => {
        const y = 24 + i * step + (step - H) / 2;
        const g = document.createElementNS(NS, "g");
        g.setAttribute("data-match", m.id);
        const rect = document.createElementNS(NS, "rect");
        for (const [k, v] of Object.entries({ x, y, width: W, height: H, rx: 4 })) rect.setAttribute(k, String(v));
        g.append(rect);
        svg.append(g);
        const unneeded = m.id === "GF2" && m.a === "" && m.b === "";
        const label = (who, from) => unneeded ? "not needed" : who === null ? `(${from})` : who === "" ? "bye" : who;
        text(x + 6, y + 18, label(m.a, m.a_from), m.winner && m.winner === m.a ? "won" : "");
        text(x + 6, y + 38, label(m.b, m.b_from), m.winner && m.winner === m.b ? "won" : "");
        text(x + W - 34, y + 12, m.id, "id");
      });
    });
    return K.el("div", { class: "scroll bracket-box" }, svg);
  }

  function crosstable(ct) {
    const box = K.el("section", { class: "crosstable" });
    box.append(K.el("h2", { text: "Crosstable" }));
    box.append(K.el("p", { class: "muted", text: "The row bot's score against the column bot over their games, its 95 % interval, and P(row beats column); seed groups are the observations. Below, the same score corrected for luck, ± its 95 % interval." }));
    const head = K.el("tr", {}, K.el("th", { text: "" }), ct.names.map((n) => K.el("th", { scope: "col", text: n })));
    const body = ct.names.map((row) => K.el("tr", {}, K.el("th", { scope: "row", text: row }), ct.names.map((col) => {
      const c = (ct.cells[row] || {})[col];
      if (row === col || !c) return K.el("td", { class: "empty", text: row === col ? "—" : "" });
      const cls = c.p_beats >= 0.95 ? "beats" : c.p_beats <= 0.05 ? "beaten" : "";
      return K.el("td", { class: "cell " + cls, title: `${c.games} games, ${c.groups} seed groups` },
        K.el("div", { class: "score", text: c.score.toFixed(2) }),
        K.el("div", { class: "ci", text: `[${c.low.toFixed(2)}, ${c.high.toFixed(2)}]` }),
        K.el("div", { class: "p", text: `P ${c.p_beats.toFixed(2)}` }),
        c.luck_corrected ? K.el("div", { class: "corrected" }, "corrected ", K.luckEstimate(c.luck_corrected)) : "");
    })));
    box.append(K.el("div", { class: "scroll" }, K.el("table", { class: "cross" }, K.el("thead", {}, head), K.el("tbody", {}, body))));
    return box;
  }
})();
