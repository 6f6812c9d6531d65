// The analysis panel of the replay viewer: every decision scored (kozel-analysis/1, see
// docs/analysis.md). It hangs off the viewer through three hooks only (viewer.extras, a
// place for the panel; viewer.onDraw, told the deal and frame after each draw; viewer.goto),
// so the viewer's layout can change without it. The analysis comes embedded in the page
// (kozel replay html --analysis) or from GET /api/matches/{id}/analysis, which answers 202
// with the progress until it is ready. Text from the server is only ever set as text.
"use strict";

const Analysis = (function () {
  const POLL_MS = 2000;
  const SVG = "http://www.w3.org/2000/svg";

  // The class of a loss: its label's thresholds, as the analysis gives them.
  function grade(loss, thresholds) {
    if (loss <= 0.5) return "best";
    if (loss >= thresholds.blunder) return "blunder";
    if (loss >= thresholds.mistake) return "mistake";
    if (loss >= thresholds.inaccuracy) return "inaccuracy";
    return "good";
  }

  function actionText(action) {
    const [kind, value] = Object.entries(action)[0];
    if (value === true) return kind;
    return kind + " " + (Array.isArray(value) ? value.map(Cards.text).join(" ") : value);
  }

  function actionEl(action, trump) {
    const [kind, value] = Object.entries(action)[0];
    return K.el("span", { class: "a-action" }, K.el("span", { class: "a-kind", text: kind }),
      Array.isArray(value) ? Cards.hand(value, 0, trump, true) : (value === true ? "" : " " + value));
  }

  function svg(tag, attrs) {
    const node = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
    return node;
  }

  function attach(viewer, replay) {
    const panel = K.el("section", { class: "analysis", "data-analysis": "" }, K.el("h2", { text: "Analysis" }));
    viewer.extras.append(panel);
    const embedded = document.getElementById("analysis-data");
    if (embedded) { show(viewer, replay, JSON.parse(embedded.textContent), panel); return; }
    const status = K.el("p", { class: "muted", "data-analysis-status": "" });
    const button = K.el("button", { type: "button", "data-action": "analyse", text: "Analyse this match",
      onclick: () => { button.disabled = true; poll(viewer, replay, panel, status); } });
    const ask = K.el("p", {}, button, " ", K.el("span", { class: "muted",
      text: "every decision scored: the value of each legal action, the loss of the one played" }));
    panel.append(ask, status);
  }

  async function poll(viewer, replay, panel, status) {
    const url = "/api/matches/" + encodeURIComponent(replay.match_id) + "/analysis";
    for (;;) {
      let response;
      try { response = await fetch(url, { headers: { Accept: "application/json" } }); }
      catch (error) { status.textContent = "the analysis cannot be fetched: " + error; return; }
      let body = null;
      try { body = await response.json(); } catch (e) { /* not JSON */ }
      if (response.status === 200 && body) {
        status.remove(); panel.querySelector("[data-action='analyse']").parentNode.remove();
        show(viewer, replay, body, panel); return;
      }
      if (response.status !== 202 || !body) {
        status.textContent = `no analysis: ${response.status} ${body && body.detail ? body.detail : response.statusText}`;
        status.className = "error";
        return;
      }
      const pct = body.total ? Math.round(100 * body.done / body.total) : 0;
      status.textContent = `analysis ${body.status}: ${body.done} of ${body.total} steps (${pct}%)`;
      status.dataset.done = body.done;
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }

  // -- the panel ----------------------------------------------------------------------------
  function show(viewer, replay, a, panel) {
    const names = replay.seats.map((s) => s.name);
    const position = new Map(replay.deals.map((d, i) => [d.index, i]));
    const byDeal = new Map(a.deals.map((d) => [d.index, d]));
    const t = a.thresholds;
    const decisionBox = K.el("div", { class: "a-decision", "data-a-decision": "" });
    const graph = K.el("div", { class: "a-graph", "data-a-graph": "" });
    panel.append(
      K.el("p", { class: "muted", text: `Values in card points the acting side takes from the decision to the end of the deal: ` +
        `"as known" averages the deals of the hidden cards that seat could not tell apart, "open" plays with every card seen. ` +
        `Loss: best minus played (as known). Labels: inaccuracy ≥ ${t.inaccuracy}, mistake ≥ ${t.mistake}, blunder ≥ ${t.blunder} points.` }),
      summaryTable(a, names), mistakes(a, names, viewer, position), K.el("h3", { text: "This decision" }), decisionBox,
      K.el("h3", { text: "Expected card points through the deal" }), graph,
      K.el("h3", { text: "Points lost through the match" }), matchGraph(a, replay, viewer, position, t));
    viewer.onDraw((d, f) => {
      const deal = byDeal.get(replay.deals[d].index);
      drawDecision(decisionBox, deal, f, replay.deals[d], names, t);
      drawGraph(graph, deal, f, replay, d, viewer, t);
    });
    panel.dataset.ready = "1";
  }

  function summaryTable(a, names) {
    const sideOf = Object.fromEntries(a.seats.map((s) => [String(s.seat), s.side]));
    const rows = Object.entries(a.summary).map(([seat, s]) => ({
      seat: +seat, name: names[+seat] || "", decisions: s.decisions, loss: s.loss,
      per: s.loss_per_decision, acc: s.accuracy, inacc: s.labels.inaccuracy || 0,
      mistake: s.labels.mistake || 0, blunder: s.labels.blunder || 0,
      luck: a.luck[String(sideOf[seat])],
    }));
    const fmt = (x, digits) => (x === null || x === undefined ? "n/a" : K.num(x, digits));
    return K.el("div", { class: "scroll", "data-a-summary": "" }, K.table([
      { key: "seat", label: "Seat", num: true }, { key: "name", label: "Bot" },
      { key: "decisions", label: "Choices", num: true },
      { key: "loss", label: "Points lost", num: true, render: (r) => fmt(r.loss, 1) },
      { key: "per", label: "Per choice", num: true, render: (r) => fmt(r.per, 2) },
      { key: "acc", label: "Accuracy %", num: true, render: (r) => fmt(r.acc, 1) },
      { key: "inacc", label: "Inaccuracies", num: true }, { key: "mistake", label: "Mistakes", num: true },
      { key: "blunder", label: "Blunders", num: true },
      { key: "luck", label: "Luck (side)", num: true, render: (r) => (r.luck === undefined ? "n/a" : (r.luck >= 0 ? "+" : "") + K.num(r.luck, 1)) },
    ], rows));
  }

  function mistakes(a, names, viewer, position) {
    const all = [];
    for (const deal of a.deals) for (const d of deal.decisions) if (d.label !== "good") all.push({ deal: deal.index, d });
    all.sort((x, y) => y.d.loss - x.d.loss);
    const items = all.slice(0, 10).map(({ deal, d }) => K.el("li", { class: "a-" + d.label },
      K.el("a", { href: "#", "data-a-goto": `${deal}:${d.step}`, text: `deal ${deal + 1}, step ${d.step}`,
        onclick: (e) => { e.preventDefault(); viewer.goto(position.get(deal), d.step); } }),
      `: ${names[d.seat]} played ${actionText(d.actions[d.played].action)}, best ${actionText(d.actions[d.best].action)} `,
      K.el("strong", { text: `−${K.num(d.loss, 1)} (${d.label})` })));
    return K.el("div", { "data-a-mistakes": "" }, K.el("h3", { text: "Biggest mistakes" }),
      items.length ? K.el("ol", {}, items) : K.el("p", { class: "muted", text: "none labelled" }));
  }

  function drawDecision(box, deal, f, replayDeal, names, t) {
    const d = deal && deal.decisions.find((x) => x.step === f);
    if (!deal) { box.replaceChildren(K.el("p", { class: "muted", text: "this deal was not analysed" })); return; }
    if (deal.error) { box.replaceChildren(K.el("p", { class: "error", text: deal.error })); return; }
    const prev = deal.decisions.find((x) => x.step === f - 1);
    const before = prev ? K.el("p", { "data-a-last": prev.label },
      `Last move: ${names[prev.seat]} ${actionText(prev.actions[prev.played].action)} — `,
      K.el("span", { class: "a-badge a-" + prev.label, text: prev.label === "good" ? "good" : `${prev.label} −${K.num(prev.loss, 1)}` })) : null;
    if (!d) {
      box.replaceChildren(...[before, K.el("p", { class: "muted", text: "No choice to score here (a single legal action, the end of the deal, or a seat not analysed)." })].filter(Boolean));
      return;
    }
    const values = d.actions.map((x) => (x.info ? x.info[0] : (x.open[0] + x.open[1]) / 2));
    const penalties = d.actions.some((x) => x.penalty !== undefined);
    const best = values[d.best];
    const rows = d.actions.map((x, i) => {
      const loss = best - values[i];
      const open = x.open ? (x.open[0] === x.open[1] ? String(x.open[0]) : `${x.open[0]}–${x.open[1]}`) : "";
      return K.el("tr", { class: "a-row a-" + grade(loss, t) + (i === d.played ? " a-played" : ""), "data-a-action": i,
        "data-a-played": i === d.played ? "1" : null },
        K.el("td", {}, actionEl(x.action, replayDeal.trump), i === d.played ? K.el("span", { class: "a-mark", text: " ◀ played" }) : null),
        K.el("td", { class: "num", text: x.info ? `${K.num(x.info[0], 1)} ± ${K.num(x.info[1], 1)}` : "—" }),
        K.el("td", { class: "num", text: open }),
        K.el("td", { class: "num", text: loss > 0.05 ? "−" + K.num(loss, 1) : "best" }),
        penalties ? K.el("td", { class: "num", text: x.penalty === undefined ? "" : K.num(x.penalty, 2) }) : null);
    });
    const info = d.basis === "infoset"
      ? `${d.deals} deals of the hidden cards${d.enumerated ? " (all of them)" : ""}, ${d.exact_deals} solved to the end`
      : "open-hand values only (the hidden cards are not modelled here)";
    box.replaceChildren(...[before,
      K.el("p", {}, K.el("strong", { text: `${names[d.seat]} to ${d.kind}` }), ` · ${info} · `,
        K.el("span", { class: "a-badge a-" + d.label, "data-a-label": d.label, text: d.label === "good" ? "good" : `${d.label} −${K.num(d.loss, 1)}` })),
      K.el("div", { class: "scroll" }, K.el("table", { class: "a-actions" },
        K.el("thead", {}, K.el("tr", {}, K.el("th", { text: "Action" }), K.el("th", { class: "num", text: "As known" }),
          K.el("th", { class: "num", text: "Open" }), K.el("th", { class: "num", text: "Loss" }),
          penalties ? K.el("th", { class: "num", text: "Penalty", title: "the side's expected penalty for the deal" }) : null)),
        K.el("tbody", {}, rows)))].filter(Boolean));
  }

  // A line per side: the card points it is expected to have at the end of the deal, after
  // each decision (as the acting seat knew it); dots coloured by the decision's label.
  function drawGraph(box, deal, f, replay, position, viewer, t) {
    if (!deal || !deal.decisions.length) { box.replaceChildren(); return; }
    const W = 640, H = 180, P = 24;
    const steps = Math.max(1, ...deal.decisions.map((d) => d.step));
    const x = (step) => P + (W - 2 * P) * step / steps;
    const y = (pts) => H - P - (H - 2 * P) * pts / 120;
    const g = svg("svg", { viewBox: `0 0 ${W} ${H}`, class: "a-svg", role: "img", "aria-label": "expected card points through the deal" });
    g.append(svg("line", { x1: P, x2: W - P, y1: y(60), y2: y(60), class: "a-half" }));
    const sides = [...new Set(replay.seats.map((s) => s.side))].sort();
    for (const side of sides) {
      const pts = deal.decisions.filter((d) => d.expected[String(side)] !== undefined).map((d) => [x(d.step), y(d.expected[String(side)])]);
      if (pts.length) g.append(svg("polyline", { points: pts.map((p) => p.join(",")).join(" "), class: "a-line a-side" + side }));
    }
    for (const d of deal.decisions) {
      const side = String(d.side);
      const dot = svg("circle", { cx: x(d.step), cy: y(d.expected[side]), r: d.step === f ? 6 : 4, class: "a-dot a-" + d.label, "data-a-step": d.step });
      dot.addEventListener("click", () => viewer.goto(position, d.step));
      const title = svg("title", {});
      title.textContent = `step ${d.step}: ${replay.seats[d.seat].name} ${actionText(d.actions[d.played].action)} (${d.label})`;
      dot.append(title);
      g.append(dot);
    }
    g.append(svg("line", { x1: x(f), x2: x(f), y1: P / 2, y2: H - P / 2, class: "a-now" }));
    const legend = sides.map((s) => K.el("span", { class: "a-legend a-side" + s, text: `side ${s}: ` +
      replay.seats.filter((x) => x.side === s).map((x) => x.name).join(" + ") }));
    box.replaceChildren(g, K.el("div", {}, legend, K.el("span", { class: "muted", text: " · the dashed line is 60 points" })));
  }

  // A line per seat: its points lost, added up decision by decision over the whole match;
  // a dot per labelled decision (a click goes there); a tick between deals.
  function matchGraph(a, replay, viewer, position, t) {
    const W = 640, H = 160, P = 24;
    const all = [];
    for (const deal of a.deals) for (const d of deal.decisions) all.push({ deal: deal.index, d });
    const box = K.el("div", { class: "a-graph", "data-a-match-graph": "" });
    if (!all.length) return box;
    const seats = [...new Set(all.map((x) => x.d.seat))].sort();
    const sum = Object.fromEntries(seats.map((s) => [s, 0]));
    const lines = Object.fromEntries(seats.map((s) => [s, []]));
    const dots = [];
    all.forEach((x, i) => { sum[x.d.seat] += x.d.loss; lines[x.d.seat].push([i, sum[x.d.seat]]); if (x.d.label !== "good") dots.push([i, x]); });
    const top = Math.max(1, ...seats.map((s) => sum[s]));
    const px = (i) => P + (W - 2 * P) * i / Math.max(1, all.length - 1);
    const py = (v) => H - P - (H - 2 * P) * v / top;
    const g = svg("svg", { viewBox: `0 0 ${W} ${H}`, class: "a-svg", role: "img", "aria-label": "points lost through the match" });
    all.forEach((x, i) => { if (i && x.deal !== all[i - 1].deal) g.append(svg("line", { x1: px(i), x2: px(i), y1: P / 2, y2: H - P / 2, class: "a-half" })); });
    for (const s of seats) {
      g.append(svg("polyline", { points: lines[s].map(([i, v]) => `${px(i)},${py(v)}`).join(" "), class: "a-line a-side" + replay.seats[s].side }));
    }
    for (const [i, x] of dots) {
      const dot = svg("circle", { cx: px(i), cy: py(lines[x.d.seat].find(([j]) => j === i)[1]), r: 4, class: "a-dot a-" + x.d.label });
      dot.addEventListener("click", () => viewer.goto(position.get(x.deal), x.d.step));
      const title = svg("title", {});
      title.textContent = `deal ${x.deal + 1}, step ${x.d.step}: ${replay.seats[x.d.seat].name} −${K.num(x.d.loss, 1)} (${x.d.label})`;
      dot.append(title);
      g.append(dot);
    }
    box.append(g, K.el("div", {}, seats.map((s) => K.el("span", { class: "a-legend a-side" + replay.seats[s].side,
      text: `${replay.seats[s].name}: ${K.num(sum[s], 1)}` })), K.el("span", { class: "muted", text: ` · most ${K.num(top, 1)} points; a line between deals` })));
    return box;
  }

  return { attach, grade };
})();
