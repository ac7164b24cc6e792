"""The palette toggle and the stylesheet links, as the site runs them instead of Material's bundle.

Both exist for phone speed (docs/assets/overrides/partials/palette.js and absolute-urls.js): run
at the end of the page by Material's bundle, each made the browser restyle a whole chapter. These
tests pin what a reader sees: the system's palette before the first paint, a toggle that works
by pointer and by keyboard and is remembered, and stylesheets fetched once, kept across instant
navigation.
"""

from __future__ import annotations

import pytest

from tests.browser.helpers import (NAV_URLS, Recorder, goto_ready_for_instant_navigation, new_context, switch_palette,
                                  wait_for_page)

CHAPTER = next(url for url in NAV_URLS if url.startswith("chapters/"))

# Records every change of <body data-md-color-*> and of a stylesheet link's href, with whether
# the page's content existed yet (after it, each such change restyles the whole page).
WATCH_WRITES = """
window.__lateWrites = {palette: [], stylesheet: []};
new MutationObserver(records => {
  const late = document.querySelector('.md-content') !== null;
  for (const r of records) {
    if (!late || !r.attributeName) continue;
    if (r.target === document.body && r.attributeName.startsWith('data-md-color-'))
      window.__lateWrites.palette.push([r.attributeName, r.target.getAttribute(r.attributeName)]);
    if (r.target.matches('link[rel=stylesheet]') && r.attributeName === 'href')
      window.__lateWrites.stylesheet.push(r.target.getAttribute('href'));
  }
}).observe(document, {attributes: true, subtree: true});
"""

STATE = """() => ({
  scheme: document.body.getAttribute('data-md-color-scheme'),
  stored: JSON.parse(localStorage.getItem(__md_scope.pathname + '.__palette') || 'null'),
  labels: [...document.querySelectorAll('form[data-md-palette] label')].filter(l => !l.hidden).length,
  themeColor: (document.querySelector('meta[name=theme-color]') || {}).content,
  headerColor: getComputedStyle(document.querySelector('header')).backgroundColor,
  colorScheme: (document.querySelector('meta[name=color-scheme]') || {}).content,
  materialForm: document.querySelectorAll('[data-md-component=palette]').length,
})"""


def hex_of(rgb: str) -> str:
    return "#" + "".join(f"{int(c):02x}" for c in rgb[rgb.index("(") + 1:rgb.index(")")].split(",")[:3])


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_first_visit_gets_the_system_palette_before_the_content(chromium_browser, site_url, scheme):
    ctx = new_context(chromium_browser, scheme)
    ctx.add_init_script(WATCH_WRITES)
    page = ctx.new_page()
    try:
        page.goto(site_url + CHAPTER)
        wait_for_page(page)
        state = page.evaluate(STATE)
        expected = "slate" if scheme == "dark" else "default"
        assert state["scheme"] == expected
        assert state["materialForm"] == 0, "Material's bundle would run the palette a second time"
        assert state["labels"] == 1, "exactly one toggle button shows"
        assert state["themeColor"] == hex_of(state["headerColor"])
        assert state["colorScheme"] == ("dark" if scheme == "dark" else "light")
        late = page.evaluate("window.__lateWrites.palette")
        assert not late, f"the palette changed <body> after the content was parsed: {late}"
    finally:
        ctx.close()


def test_toggle_by_pointer_and_keyboard_is_remembered(chromium_browser, site_url):
    ctx = new_context(chromium_browser, "light")
    page = ctx.new_page()
    rec = Recorder(page)
    try:
        page.goto(site_url + CHAPTER)
        wait_for_page(page)
        switch_palette(page, "dark")
        state = page.evaluate(STATE)
        assert state["stored"]["color"]["scheme"] == "slate" and state["labels"] == 1
        assert state["themeColor"] == hex_of(state["headerColor"]) and state["colorScheme"] == "dark"
        page.wait_for_function("() => !document.body.hasAttribute('data-md-color-switching')", timeout=5_000)
        # a new page load keeps the reader's choice, although the system says light
        page.reload()
        wait_for_page(page)
        assert page.evaluate(STATE)["scheme"] == "slate"
        # keyboard: Enter on the focused option moves on to the next palette
        page.focus("form[data-md-palette] input:checked")
        page.keyboard.press("Enter")
        page.wait_for_function("() => document.body.getAttribute('data-md-color-scheme') === 'default'",
                               timeout=5_000)
        assert page.evaluate(STATE)["stored"]["color"]["scheme"] == "default"
        assert not rec.console_errors, rec.console_errors
    finally:
        ctx.close()


def test_stylesheets_are_fetched_once_and_survive_instant_navigation(chromium_browser, site_url):
    """The stylesheet links are absolute before Material's bundle starts (so it leaves them
    alone), each stylesheet is requested once, and instant navigation keeps the same links."""
    ctx = new_context(chromium_browser, "light")
    ctx.add_init_script(WATCH_WRITES)
    page = ctx.new_page()
    rec = Recorder(page)
    try:
        goto_ready_for_instant_navigation(page, site_url)  # a click before Material intercepts it reloads
        late = page.evaluate("window.__lateWrites.stylesheet")
        assert not late, f"stylesheet links re-assigned after the content was parsed (a whole-page restyle): {late}"
        hrefs = page.evaluate("[...document.querySelectorAll('link[rel=stylesheet]')].map(l => l.getAttribute('href'))")
        assert len(hrefs) >= 3 and all(h.startswith(site_url) for h in hrefs), hrefs
        css = [r.url for r in rec.requests if r.url.split("?")[0].endswith(".css")]
        assert sorted(css) == sorted(set(css)), f"a stylesheet was requested twice: {css}"
        page.evaluate("document.querySelectorAll('link[rel=stylesheet]').forEach(l => l.__kept = true)")
        page.locator(f"nav.md-nav--primary a.md-nav__link[href$='{CHAPTER}']").first.click()
        page.wait_for_url(site_url + CHAPTER)
        wait_for_page(page)
        kept = page.evaluate("[...document.querySelectorAll('link[rel=stylesheet]')].map(l => l.__kept === true)")
        assert kept and all(kept), "instant navigation replaced the stylesheets (the page is restyled from scratch)"
        assert not rec.console_errors, rec.console_errors
    finally:
        ctx.close()
