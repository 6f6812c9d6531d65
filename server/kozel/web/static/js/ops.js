// The operators' page refreshes itself every few seconds while its box is ticked (a person
// can stop it: no meta refresh); the choice stays in the address (?auto=0).
"use strict";
(function () {
  const box = document.querySelector("[data-refresh]");
  if (!box) return;
  const off = new URLSearchParams(location.search).get("auto") === "0";
  box.checked = !off;
  let timer = null;
  const arm = () => {
    clearTimeout(timer);
    if (box.checked) timer = setTimeout(() => location.replace("/ops"), 1000 * +box.dataset.refresh);
  };
  box.addEventListener("change", () => { history.replaceState(null, "", box.checked ? "/ops" : "/ops?auto=0"); arm(); });
  arm();
})();
