// The home page: ladders, live matches, latest results.
"use strict";
(async function () {
  try {
    const [ladders, live, latest] = await Promise.all([
      K.api("/api/ladders"), K.api("/api/live"), K.api("/api/matches?limit=15&status=finished"),
    ]);
    const main = K.main();
    main.append(K.el("h1", { text: "Kozel Arena" }));
    main.append(K.el("h2", { text: "Ladders" }));
    const box = K.el("div", { "data-ladders": "" });
    const refresh = K.el("button", { type: "button", "data-action": "refresh ladders", text: "refresh",
      onclick: async () => { try { ladderTable(box, await K.api("/api/ladders")); } catch (error) { K.fail(error); } } });
    main.append(box, K.el("p", {}, refresh));
    ladderTable(box, ladders);
    main.append(K.el("h2", {}, K.el("span", { class: "live-dot" }), "Live matches"));
    main.append(live.matches.length ? K.table([
      { key: "match_id", label: "Match", render: (m) => K.link(m.match_id.slice(0, 12), "/live/" + m.match_id) },
      { key: "ladder", label: "Where", render: (m) => m.ladder ? K.ladderLink(m.ladder) : (m.table_id ? "table " + m.table_id : "queue") },
      { key: "seats", label: "Seats", render: (m) => m.seats.join(" · ") },
      { key: "deal", label: "Deal", num: true, render: (m) => m.deal === null ? "" : m.deal + 1 },
      { key: "started_at", label: "Started", render: (m) => K.when(m.started_at) },
    ], live.matches, { class: "live" }) : K.el("p", { class: "muted", text: "No match is running." }));
    main.append(K.el("h2", { text: "Latest results" }));
    main.append(latest.matches.length ? K.matchRows(latest.matches) : K.el("p", { class: "muted", text: "No match has finished yet." }));
    main.append(K.el("p", {}, K.link("All matches →", "/matches")));
  } catch (error) { K.fail(error); }

  // Each ladder: its state (running, stopped, or why waiting bots get no match), bots waiting,
  // matches played and running, when the latest ended.
  function ladderTable(box, ladders) {
    box.replaceChildren(ladders.length ? K.table([
      { key: "name", label: "Ladder", render: (l) => K.ladderLink(l.name) },
      { key: "state", label: "State", render: (l) => K.el("span", { "data-state": l.state || "", text: K.ladderState(l) }) },
      { key: "waiting_bots", label: "Bots waiting", num: true, render: (l) => l.waiting_bots ?? "" },
      { key: "capped_groups", label: "At the meeting cap", render: (l) => K.capped(l) },
      { key: "bots", label: "Bots rated", num: true },
      { key: "finished", label: "Matches played", num: true, render: (l) => l.matches.finished || 0 },
      { key: "running", label: "Running", num: true, render: (l) => l.matches.running || 0 },
      { key: "last_match_at", label: "Last match ended", render: (l) => K.when(l.last_match_at) },
    ], ladders, { class: "ladders" }) : K.el("p", { class: "muted", text: "No ladders on this referee." }));
  }
})();
