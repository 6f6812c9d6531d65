"""Every page on a 390 px wide touch screen, in Chromium: nothing overflows the screen
sideways (wide tables scroll in their box, which says so and takes the keyboard's focus), no
table cell breaks a word, the viewer's and the live page's controls stay on screen while the
page scrolls, and the key hints are hidden. A screenshot of each page is saved under
tests/web/screenshots/ (phone-*.png)."""

from __future__ import annotations

from urllib.parse import quote

from tests.web.conftest import LADDER, OPS_TOKEN, Arena, shot
from tests.web.test_live import _table

BROKEN_WORDS = """() => {
  const bad = [];
  for (const cell of document.querySelectorAll("main td, main th")) {
    const walk = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let n = walk.nextNode(); n; n = walk.nextNode()) {
      for (const m of n.data.matchAll(/\\S+/g)) {
        const r = document.createRange();
        r.setStart(n, m.index); r.setEnd(n, m.index + m[0].length);
        if (new Set([...r.getClientRects()].map((x) => Math.round(x.top))).size > 1) bad.push(m[0]);
      }
    }
  }
  return bad;
}"""


TRICK_AND_HANDS = """() => [
  document.querySelector("[data-trick]").getBoundingClientRect().bottom,
  [...document.querySelectorAll("[data-hand]")].map((h) => h.getBoundingClientRect().top),
]"""


def _finished(arena: Arena) -> str:
    rows = [m.id for m in arena.store.matches(ladder=LADDER, limit=50) if m.status == "finished"]
    assert rows
    return rows[0]


def _phone(browser):
    return browser.new_context(
        viewport={"width": 390, "height": 844},
        is_mobile=True,
        has_touch=True,
        device_scale_factor=2,
        http_credentials={"username": "ops", "password": OPS_TOKEN},  # the /ops page asks
    )


def _fits(page, path: str) -> None:
    width = page.evaluate("() => document.documentElement.scrollWidth")
    assert width <= 391, (path, width)
    assert page.evaluate(BROKEN_WORDS) == [], path
    for box in page.locator(".scroll.overflows").all():  # a box that scrolls says so
        assert box.get_attribute("tabindex") == "0"
        hint = box.evaluate("b => getComputedStyle(b, '::before').content")
        assert "scroll sideways" in hint, (path, hint)


def _sticky(page, controls: str) -> None:
    page.evaluate("() => window.scrollTo(0, document.body.scrollHeight)")
    page.wait_for_function("() => window.scrollY > 300")
    top = page.evaluate(f"() => document.querySelector({controls!r}).getBoundingClientRect().top")
    assert 0 <= top < 5, top  # still at the top of the screen


def test_every_page_on_a_phone(arena: Arena, browser) -> None:
    match_id = _finished(arena)
    context = _phone(browser)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        assert page.evaluate("() => matchMedia('(hover: none)').matches")  # a touch screen
        pages = (
            ("/", "phone-home", "table.ladders"),
            ("/matches", "phone-matches", "main table"),
            (f"/ladders/{LADDER}", "phone-standings", "table.standings"),
            ("/bots/greedy-a", "phone-bot", "table.recent"),
            (f"/bots/{quote('<img src=x onerror=alert(1)>', safe='')}", "phone-bot-hostile", "h1"),
            ("/tournaments", "phone-tournaments", "main h1"),
            ("/no/such/page", "phone-404", "main h1"),
            ("/ops", "phone-ops", "main h1"),
            ("/play", "phone-play", "#opponents select"),
            (f"/ladders/{LADDER}/matchup?a=greedy-a&b=greedy-b", "phone-matchup", "main h1"),
        )
        for path, name, ready in pages:
            page.goto(arena.url(path))
            page.wait_for_selector(ready)
            page.wait_for_function("() => !document.querySelector('main .loading')")
            _fits(page, path)
            shot(page, name)
        page.goto(arena.url(f"/matches/{match_id}#d=0&s=5&v=0"))
        page.wait_for_selector("main[data-ready]")
        _fits(page, "viewer")
        assert not page.is_visible(".keys")  # no keys on a touch screen
        shot(page, "phone-viewer")
        _sticky(page, ".controls.sticky")
        page.click("button[data-action='next play']")  # the controls work from down there
        assert page.get_attribute("[data-where]", "data-step") == "6"
        assert errors == [], errors
    finally:
        context.close()


def test_the_live_page_on_a_phone(arena: Arena, browser) -> None:
    context = _phone(browser)
    page = context.new_page()
    try:
        for match_id, _ in _table(arena, 0.25):
            page.goto(arena.url(f"/live/{match_id}"))
            page.wait_for_selector("[data-status=live]", timeout=30_000)
            page.wait_for_selector("section.seat [data-to-act]", timeout=60_000)
            _fits(page, "live")
            # Measured in one go: the board is drawn anew with each event.
            trick_bottom, hand_tops = page.evaluate(TRICK_AND_HANDS)
            assert hand_tops and all(trick_bottom <= top for top in hand_tops)
            shot(page, "phone-live")
            _sticky(page, ".controls.pace")
            page.select_option("select[data-action=pace]", "0")  # to the end, then the bot ends
            page.wait_for_selector("[data-status=ended]", timeout=120_000)
    finally:
        context.close()
