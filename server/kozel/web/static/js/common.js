// Helpers shared by every page. Text from the server (bot names, ladder names, ids) is only
// ever put into the page as text nodes (textContent), never as markup.
"use strict";

const K = {};

K.el = function (tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = String(value);
    else if (key === "href") node.setAttribute("href", value);
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
};

K.main = function () {
  const main = document.getElementById("main");
  main.replaceChildren();
  return main;
};

K.api = async function (path) {
  const response = await fetch(path, { headers: { Accept: "application/json" } });
  if (!response.ok) {
    let detail = response.statusText;
    try { detail = (await response.json()).detail; } catch (e) { /* not JSON */ }
    throw new Error(`${response.status}: ${typeof detail === "string" ? detail : JSON.stringify(detail)}`);
  }
  return response.json();
};

K.fail = function (error) {
  const main = K.main();
  main.append(K.el("p", { class: "notice error", text: String(error.message || error) }));
};

// The last path segment, decoded (a bot or ladder name, a match id).
K.pathArg = function () {
  const parts = location.pathname.split("/").filter(Boolean);
  return decodeURIComponent(parts[parts.length - 1] || "");
};

K.link = function (text, href) { return K.el("a", { href, text }); };
K.botLink = function (name) { return K.link(name, "/bots/" + encodeURIComponent(name)); };
K.ladderLink = function (name) { return K.link(name, "/ladders/" + encodeURIComponent(name)); };
K.matchLink = function (id, text) { return K.link(text || id.slice(0, 12), "/matches/" + encodeURIComponent(id)); };

K.when = function (iso) {
  if (!iso) return "";
  const d = new Date(iso);
  return isNaN(d) ? String(iso) : d.toISOString().replace("T", " ").slice(0, 19) + " UTC";
};
K.num = function (x, digits) { return x === null || x === undefined ? "" : Number(x).toFixed(digits ?? 2); };
K.count = function (n, noun) { return `${n} ${noun}${n === 1 ? "" : "s"}`; };
K.reason = function (r) { return (r || "").replace("MATCH_END_REASON_", "").toLowerCase().replace(/_/g, " "); };

// A table; columns are {key, label, num, render(row)}; sortable when asked.
K.table = function (columns, rows, options) {
  const opts = options || {};
  const tbody = K.el("tbody");
  const head = K.el("tr");
  let sortKey = opts.sortKey || null, sortDir = opts.sortDir || 1;
  const fill = () => {
    let data = rows.slice();
    if (sortKey) {
      data.sort((a, b) => {
        const x = a[sortKey], y = b[sortKey];
        return (typeof x === "number" && typeof y === "number" ? x - y
          : String(x).localeCompare(String(y))) * sortDir;
      });
    }
    tbody.replaceChildren(...data.map((row) => K.el("tr", {},
      columns.map((c) => K.el("td", { class: c.num ? "num" : c.wrap ? "wrap" : null },
        c.render ? c.render(row) : (c.num && typeof row[c.key] === "number" && c.digits !== undefined
          ? K.num(row[c.key], c.digits) : row[c.key]))))));
    for (const th of head.children) {
      th.setAttribute("aria-sort", th.dataset.key === sortKey ? (sortDir > 0 ? "ascending" : "descending") : "none");
    }
  };
  for (const c of columns) {
    const th = K.el("th", { class: (c.num ? "num " : "") + (opts.sortable ? "sortable" : ""), "data-key": c.key, text: c.label, scope: "col" });
    if (opts.sortable) {
      th.tabIndex = 0;
      const sort = () => {
        if (sortKey === c.key) sortDir = -sortDir; else { sortKey = c.key; sortDir = c.num ? -1 : 1; }
        fill();
      };
      th.addEventListener("click", sort);
      th.addEventListener("keydown", (e) => { if (e.key === "Enter") sort(); });
    }
    head.append(th);
  }
  fill();
  return K.el("div", { class: "scroll" }, K.el("table", { class: opts.class || null }, K.el("thead", {}, head), tbody));
};

// A ladder's state in words (the API's /api/ladders row): running, stopped, or running but
// stalled with the scheduler's reason; "no referee serves it" when none publishes it.
K.ladderState = function (l) {
  if (l.state === null || l.state === undefined) return "no referee serves it";
  return l.state === "running" && l.stalled ? "running, stalled: " + l.stalled : l.state;
};

// A scroll box (.scroll) wider inside than on the screen says so ("overflows": the shadows
// and a hint in words, site.css) and takes the keyboard's focus, so it scrolls without a
// mouse; every one the pages add is watched.
K.overflowed = function (box) {
  const over = box.scrollWidth > box.clientWidth + 1;
  box.classList.toggle("overflows", over);
  if (over) box.tabIndex = 0; else box.removeAttribute("tabindex");
};
K.scrolls = new ResizeObserver((entries) => {
  for (const e of entries) { const box = e.target.closest(".scroll"); if (box) K.overflowed(box); }
});
new MutationObserver(() => {
  for (const box of document.querySelectorAll(".scroll:not([data-watched])")) {
    box.dataset.watched = "";
    K.scrolls.observe(box);
    if (box.firstElementChild) K.scrolls.observe(box.firstElementChild);
  }
}).observe(document.body, { childList: true, subtree: true });

// "1 of 6 pairs" (or groups, past two players) of the waiting bots at their meeting cap.
K.capped = function (l) {
  if (l.capped_groups === null || l.capped_groups === undefined || !l.groups) return "";
  return `${l.capped_groups} of ${l.groups} ${l.groups === 1 ? "group" : "groups"}`;
};

K.seatNames = function (seats) {
  return seats.map((s) => s.bot).join(" · ");
};

K.matchRows = function (matches) {
  return K.table([
    { key: "started_at", label: "Started", render: (m) => K.matchLink(m.match_id, K.when(m.started_at)) },
    { key: "ladder", label: "Ladder", render: (m) => m.ladder ? K.ladderLink(m.ladder) : "" },
    { key: "seats", label: "Seats (rank)", wrap: true, render: (m) => K.el("span", {}, m.seats.map((s, i) => [i ? " · " : "", K.botLink(s.bot), s.rank ? ` (${s.rank})` : ""])) },
    { key: "status", label: "Status", render: (m) => m.status === "running" ? K.link("running ▶", "/live/" + m.match_id) : m.status },
    { key: "reason", label: "End", render: (m) => K.reason(m.reason) },
  ], matches, { class: "matches" });
};

// A luck-corrected score with its 95 % interval (docs/luck.md), as text.
K.luckEstimate = function (e) {
  if (!e) return "";
  const range = e.low === null ? "" : ` ± ${K.num((e.high - e.low) / 2, 2)}`;
  const title = `95 % interval [${K.num(e.low, 2)}, ${K.num(e.high, 2)}] over ${e.matches} matches; plain score ${K.num(e.plain, 2)}`;
  return K.el("span", { "data-luck": "", class: "luck-estimate", title }, K.num(e.value, 2) + range);
};

K.luckNote = function () {
  return K.el("p", { class: "muted", text: "Corrected score: the mean match score (1 win, ½ draw, 0 loss) " +
    "minus the part the cards gave (its luck), ± its 95 % interval. It reads like a score; the rating stays openskill on results." });
};

// Two bots to compare on a ladder: a link to their matchup page.
K.matchupForm = function (ladder, bots) {
  const pick = (name, chosen) => K.el("select", { name, "aria-label": name === "a" ? "first bot" : "second bot" },
    bots.map((b, i) => K.el("option", { value: b, selected: i === chosen }, b)));
  const a = pick("a", 0), b = pick("b", Math.min(1, bots.length - 1));
  const go = K.el("a", { class: "button", "data-matchup": "", text: "Compare" });
  const update = () => go.setAttribute("href", `/ladders/${encodeURIComponent(ladder)}/matchup?a=${encodeURIComponent(a.value)}&b=${encodeURIComponent(b.value)}`);
  a.addEventListener("change", update); b.addEventListener("change", update); update();
  return K.el("p", { class: "matchup-form" }, "Matchup: ", a, " vs ", b, " ", go);
};
