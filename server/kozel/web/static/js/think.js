// The viewer's think-time strip: under each seat, one bar per decision of the deal, as tall
// as its think time against the move clock; a timeout is a red bar with a "×" and says so in
// its label, a think past the move clock (on the bank) an amber one with a "+". The summary
// line tells the same in words. A click on a bar goes to that step.
"use strict";

const Think = {
  // The seat's decisions in `deal` that the view shows (others' answers in a sealed
  // declaration window are not shown to a seat), as [step, frame] pairs.
  decisions(deal, seat, view) {
    const out = [];
    deal.steps.forEach((step, i) => {
      if (step.seat !== seat) return;
      const sealed = view !== "all" && +view !== seat && (step.action.kind === "pass" || step.action.kind === "declare");
      if (!sealed) out.push([step, i + 1]);
    });
    return out;
  },

  strip(deal, seat, st, data, goto) {
    const move = (data.time_control || {}).move_ms || 0;
    const decisions = Think.decisions(deal, seat, st.view);
    if (!decisions.length) return null;
    const longest = Math.max(...decisions.map(([step]) => step.think_ms || 0));
    const scale = Math.max(move, longest, 1);
    const timeouts = decisions.filter(([step]) => step.timeout).length;
    const over = decisions.filter(([step]) => !step.timeout && move && step.think_ms > move).length;
    const bars = decisions.map(([step, f]) => {
      const kind = step.timeout ? "timeout" : move && step.think_ms > move ? "over" : "";
      const label = `step ${f}: ${step.think_ms} ms` + (step.timeout ? ", timed out" : kind ? ", past the move clock" : "");
      const bar = K.el("span", { class: "bar" + (kind ? " " + kind : "") + (f === st.f ? " now" : ""),
        "data-step": f, "data-timeout": step.timeout ? "1" : null, title: label, onclick: () => goto(f),
        text: step.timeout ? "×" : kind ? "+" : "" });
      bar.style.height = Math.max(8, Math.round((100 * (step.think_ms || 0)) / scale)) + "%";
      return bar;
    });
    const words = [K.count(decisions.length, "decision"), `longest ${longest} ms`,
      timeouts ? K.count(timeouts, "timeout") : null, over ? `${over} past the move clock` : null].filter(Boolean).join(" · ");
    return K.el("div", { class: "think-strip", "data-strip": seat, "data-timeouts": timeouts },
      K.el("div", { class: "bars", "aria-hidden": "true" }, bars),
      K.el("div", { class: "think-words", text: "think: " + words }));
  },
};
