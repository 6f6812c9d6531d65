// Match lists with the API's filters (ladder, bot, time, end reason, status) and paging.
"use strict";
(async function () {
  const params = new URLSearchParams(location.search);
  const main = K.main();
  main.append(K.el("h1", { text: "Matches" }));
  const field = (name, label, type, options) => {
    const input = options
      ? K.el("select", { name }, options.map(([v, t]) => K.el("option", { value: v, text: t })))
      : K.el("input", { name, type, maxlength: 64 });
    input.value = params.get(name) || "";
    return K.el("label", {}, label, input);
  };
  const form = K.el("form", { class: "filters", method: "get", action: "/matches" },
    field("ladder", "Ladder", "text"), field("bot", "Bot", "text"),
    field("since", "Started after (UTC)", "datetime-local"), field("until", "Started before (UTC)", "datetime-local"),
    field("reason", "End reason", null, [["", "any"], ["MATCH_END_REASON_LIMIT", "limit"], ["MATCH_END_REASON_FIXED_DEALS", "fixed deals"], ["MATCH_END_REASON_FORFEIT", "forfeit"]]),
    field("status", "Status", null, [["", "any"], ["finished", "finished"], ["running", "running"], ["aborted", "aborted"]]),
    K.el("button", { type: "submit", text: "Filter" }));
  main.append(form);
  const list = K.el("div", { class: "list" });
  const more = K.el("button", { type: "button", text: "More", hidden: true });
  main.append(list, more);
  const query = new URLSearchParams();
  for (const key of ["ladder", "bot", "reason", "status"]) if (params.get(key)) query.set(key, params.get(key));
  for (const key of ["since", "until"]) if (params.get(key)) query.set(key, params.get(key) + (params.get(key).length <= 16 ? ":00Z" : ""));
  let rows = [];
  async function page(cursor) {
    const q = new URLSearchParams(query);
    q.set("limit", "50");
    if (cursor) q.set("cursor", cursor);
    const data = await K.api("/api/matches?" + q.toString());
    rows = rows.concat(data.matches);
    list.replaceChildren(rows.length ? K.matchRows(rows) : K.el("p", { class: "muted", text: "No match matches these filters." }));
    more.hidden = !data.next_cursor;
    more.onclick = () => page(data.next_cursor).catch(K.fail);
  }
  try { await page(null); } catch (error) { K.fail(error); }
})();
