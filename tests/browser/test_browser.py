"""The built site in Chromium: math, instant navigation, no foreign requests, search, palettes.

Uses conftest's session fixtures (``built_site``: one ``mkdocs build --strict``; ``site_url``:
a server on 127.0.0.1) and the Chromium session from tests/browser_helpers.py. Each page
is opened once per palette; the tests below read what that visit recorded.
"""

from __future__ import annotations

import pytest

pytest.register_assert_rewrite("browser_helpers")

from browser_helpers import (  # noqa: E402
    NAV,
    NAV_URLS,
    Recorder,
    new_context,
    page_id,
    save_screenshot,
    sitemap_urls,
    type_search,
    wait_for_page,
)

pytest_plugins = ["browser_helpers"]
pytestmark = pytest.mark.browser

PAGES = [pytest.param(url, id=page_id(url)) for url in NAV_URLS]
NOTEBOOK_URLS = {url for _, src, url in NAV if src.endswith(".ipynb")}


def test_every_nav_page_is_in_the_sitemap(built_site, site_url):
    """The pages these tests visit (mkdocs.yml's nav) are exactly the pages the site has."""
    assert set(sitemap_urls(built_site, site_url)) == set(NAV_URLS), (
        "nav and sitemap.xml differ; a page outside the nav escapes these tests"
    )
    kinds = {src.rsplit(".", 1)[-1] for _, src, _ in NAV}
    assert {"md", "ipynb"} <= kinds, "the nav should hold the notebook pages too"
    assert "interview/" in NAV_URLS, "the question bank is part of the visited pages"


@pytest.mark.parametrize("path", PAGES)
def test_katex_renders(site, path):
    """Math typeset by the local KaTeX: .katex for every arithmatex span, no raw TeX left."""
    r = site.report(path)
    math = r["math"]
    assert math["katex"] >= math["arithmatex"], f"{math['arithmatex'] - math['katex']} formulas not typeset"
    if math["arithmatex"]:
        assert math["katex"] > 0
    assert not math["errors"], f"KaTeX parse errors: {math['errors']}"
    assert not r["raw_tex"], f"raw TeX in the visible text (outside code): {r['raw_tex']}"
    if path not in NOTEBOOK_URLS:  # notebook markdown has no arithmatex; its math is raw $...$
        assert not math["unprotected"], (
            "math typeset from text that arithmatex did not protect, so Markdown may have eaten "
            f"backslashes (e.g. \\! -> !); put display math on its own lines: {math['unprotected']}"
        )


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


def test_search_box_finds_gradient_vanishing(chromium_browser, site_url, built_site):
    """Typing 梯度消失 in the search box lists the page that contains it, first."""
    containing = {
        url for url in NAV_URLS
        if "梯度消失" in (built_site / url / "index.html").read_text(encoding="utf-8")
    }
    assert containing, "no page mentions 梯度消失"
    ctx = new_context(chromium_browser)
    page = ctx.new_page()
    try:
        page.goto(site_url)
        wait_for_page(page)
        links = type_search(page, "梯度消失")
        pages = [link.split("?")[0].split("#")[0][len(site_url):] for link in links]
        assert pages, "no results"
        assert pages[0] in containing, f"first result {pages[0]} does not contain 梯度消失 ({containing})"
        assert "chapters/01-why-attention/" in pages
    finally:
        ctx.close()


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_home_page_screenshot(chromium_browser, site_url, scheme):
    """test-output/screenshots/home-<scheme>.png, in the palette the reader's system asks for."""
    ctx = new_context(chromium_browser, scheme)
    page = ctx.new_page()
    try:
        page.goto(site_url)
        wait_for_page(page)
        expected = "slate" if scheme == "dark" else "default"
        assert page.evaluate("document.body.getAttribute('data-md-color-scheme')") == expected
        path = save_screenshot(page, f"home-{scheme}")
        assert path.stat().st_size > 10_000
        # Material's palette toggle flips to the other scheme
        page.locator("form[data-md-component=palette] label:visible").first.click()
        other = "default" if scheme == "dark" else "slate"
        page.wait_for_function(
            "s => document.body.getAttribute('data-md-color-scheme') === s", arg=other, timeout=5_000
        )
    finally:
        ctx.close()
