"""The built site in Chromium: math, instant navigation, no foreign requests, search.

Uses the session fixtures (``built_site``: the one ``mkdocs build --strict``; ``site_url``: a
server on 127.0.0.1; ``site``: each page opened once, both palettes and widths, in tests/browser/conftest.py).
The per-page reader checks (math, axe, anchors, copy buttons, images) are in test_reader.py;
the palette toggle (a first visit takes the system's palette) in test_palette.py.
"""

from __future__ import annotations

import pytest

from tests.browser.helpers import (
    NAV,
    NAV_URLS,
    Recorder,
    evaluate_within,
    new_context,
    page_id,
    sitemap_urls,
    wait_for_page,
)

PAGES = [pytest.param(url, id=page_id(url)) for url in NAV_URLS]


def test_an_async_check_that_never_settles_fails_instead_of_hanging(chromium_browser):
    """evaluate_within (every async page check of this suite) returns a settled result and fails a
    promise that never settles: Playwright alone would wait for it for ever."""
    ctx = new_context(chromium_browser)
    try:
        page = ctx.new_page()
        assert evaluate_within(page, "async (n) => n + 1", 41, seconds=5) == 42
        with pytest.raises(Exception, match="no result within 300 ms"):
            evaluate_within(page, "() => new Promise(() => {})", seconds=0.3)
    finally:
        ctx.close()


def test_every_nav_page_is_in_the_sitemap(built_site, site_url):
    """The pages these tests visit (mkdocs.yml's nav) are exactly the pages the site has."""
    assert set(sitemap_urls(built_site, site_url)) == set(NAV_URLS), (
        "nav and sitemap.xml differ; a page outside the nav escapes these tests"
    )
    kinds = {src.rsplit(".", 1)[-1] for _, src, _ in NAV}
    assert {"md", "ipynb"} <= kinds, "the nav should hold the notebook pages too"
    assert "interview/" in NAV_URLS, "the question bank is part of the visited pages"


def test_instant_navigation_keeps_the_page_and_renders_math(chromium_browser, site_url):
    """A nav click from the home page swaps the content without a reload; math renders there."""
    ctx = new_context(chromium_browser)
    page = ctx.new_page()
    rec = Recorder(page)
    try:
        page.goto(site_url)
        wait_for_page(page)
        page.evaluate("window.__marker = 1")
        target = next(url for url in NAV_URLS if url.startswith("chapters/"))
        link = page.locator(f"nav.md-nav--primary a.md-nav__link[href$='{target}']").first
        link.click()
        page.wait_for_url(site_url + target)
        wait_for_page(page)
        page.wait_for_function("() => document.querySelectorAll('.katex').length > 0", timeout=15_000)
        assert page.evaluate("window.__marker") == 1, "the click reloaded the page: instant navigation is off"
        assert page.evaluate("document.querySelectorAll('.katex .katex-mathml').length") > 0
        assert page.evaluate("location.pathname").endswith(target)
        assert not rec.console_errors, rec.console_errors
        # and back: the home page's own formulas come back typeset
        page.go_back()
        page.wait_for_url(site_url)
        wait_for_page(page)
        assert page.evaluate("document.querySelectorAll('.arithmatex:not(:has(.katex))').length") == 0
        assert page.evaluate("window.__marker") == 1
    finally:
        ctx.close()


@pytest.mark.parametrize("path", PAGES)
def test_no_request_leaves_the_site(site, path):
    """Every request of a visit (light and dark) goes to 127.0.0.1: no CDN, no web fonts."""
    for scheme in ("light", "dark"):
        r = site.report(path, scheme)
        assert r["request_count"] > 0
        assert not r["foreign_requests"], f"{scheme}: requests to other hosts: {r['foreign_requests']}"
