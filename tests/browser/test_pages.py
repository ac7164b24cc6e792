"""Per page, what the page's own content decides and only a layout engine can tell: nothing widens
the page at 390 px, a block that scrolls takes keyboard focus, and a visit makes no console error,
no failed load and no request to another host. At 1280 px, and for axe-core (light and dark),
the fewest pages that together show every kind of element the site has: there the template
decides, and axe judges an element by its kind; the values it reads from the content (alt text,
link names, ids) are checked on every built page without a browser (tests/site/test_built_pages.py).

Each page is opened once per run (tests/browser/helpers.py: Site); these tests read its report.
What the built HTML already decides (anchors, images and alt text, titles, math, font preloads) is
tested without a browser in tests/site/; what only the template decides (instant navigation, copy
buttons, search, the palette) once, in test_template.py and test_palette.py.
"""

from __future__ import annotations

import pytest

from tests.browser.helpers import AXE_JS, CHAPTER_URLS, NAV_URLS, page_id

PAGES = [pytest.param(url, id=page_id(url)) for url in NAV_URLS]


@pytest.mark.parametrize("path", PAGES)
def test_a_visit_is_clean_and_stays_on_the_site(site, path):
    """No console error, uncaught exception or failed load (axe and the palette switch included),
    and every request goes to 127.0.0.1: no CDN, no web fonts."""
    r = site.report(path)
    assert not r["console_errors"], "\n".join(r["console_errors"])
    assert not r["bad_responses"], "\n".join(r["bad_responses"])
    assert r["request_count"] > 0
    assert not r["foreign_requests"], f"requests to other hosts: {r['foreign_requests']}"


def _axe_lines(violations: list[dict]) -> str:
    return "\n".join(f"[{v['impact']}] {v['id']}: {v['help']} ({v['count']}x) e.g. {v['nodes'][:3]}"
                     for v in violations)


def test_axe_finds_nothing_serious_in_either_palette(site):
    """On the pages that together show every kind of element (tests/support/elementkinds.py),
    axe-core (node_modules) finds no serious or critical violation: all its rules in the light
    palette, and its colour rules again after the reader's toggle to the dark palette."""
    assert AXE_JS.is_file(), "run `make setup` (npm ci) for axe-core"
    pages = site.axe_pages()
    assert len(pages) >= 5, pages
    found = []
    for path in pages:
        light, dark = site.report(path), site.report(path, "dark")
        assert light["axe"] is not None, f"{path}: the visit ran no axe"
        assert dark["scheme"] == "slate", f"{path}: the palette toggle did not switch to the dark palette"
        found += [f"{path} (light):\n{_axe_lines(light['axe'])}"] * bool(light["axe"])
        found += [f"{path} (dark):\n{_axe_lines(dark['axe'])}"] * bool(dark["axe"])
    assert not found, "\n".join(found)


def _layout_faults(r: dict, width: str) -> list[str]:
    overflow, cue, focus, punct = r["overflow"], r["cue"], r["focus"], r["punct"]
    return ([f"{width}: page scrolls sideways by {overflow['page']} px: {overflow['offenders']}"] * (overflow["page"] > 0)
            + [f"{width}: display formulas that scroll without a scroll shadow: {cue}"] * bool(cue["without_cue"])
            + [f"{width}: blocks that scroll but take no keyboard focus: {focus}"] * bool(focus["unfocusable"])
            + [f"{width}: lines that start with punctuation: {punct['line_starts']}"] * bool(punct["line_starts"]))


@pytest.mark.parametrize("path", PAGES)
def test_layout_fits_the_phone_width(site, path):
    """At 390 px nothing widens the page; every display formula that scrolls shows a scroll
    shadow; every block that scrolls takes keyboard focus; no line starts with 。，；：、）」！？
    right after inline math, a claim badge or a link; no table is taller than the placeholder it
    takes while skipped. (Screenshots to look at: `make screenshots`.)"""
    report = site.report(path)["layout"]["mobile"]
    faults = _layout_faults(report, "390 px")
    # a table taller than its placeholder lies, while skipped, over the blocks after it (their
    # links under its links: Lighthouse's target-size, chapter 10's 面试追问)
    faults += [f"390 px: tables taller than their placeholder: {report['tables']['short']}"] * bool(report["tables"]["short"])
    assert not faults, "\n".join(faults)


def test_layout_fits_the_desktop_width(site):
    """The same at 1280 px, where only the template decides, on the pages that together show every
    kind of element (the axe pages)."""
    faults = [f"{path}: {f}" for path in site.axe_pages()
              for f in _layout_faults(site.report(path)["layout"]["desktop"], "1280 px")]
    assert not faults, "\n".join(faults)


def test_layout_checks_see_what_they_check(site):
    """The punctuation check looked at the places where such a line could start (chapter 1's
    pages have hundreds; so do the pages checked at 1280 px), and the scroll-cue and focus checks
    saw blocks that scroll at 390 px, and the placeholder check saw tables."""
    reports = [site.report(url)["layout"] for url in CHAPTER_URLS if url.startswith(CHAPTER_URLS[0])]
    assert sum(r["mobile"]["punct"]["checked"] for r in reports) > 200, [r["mobile"]["punct"] for r in reports]
    desktop = [site.report(url)["layout"]["desktop"] for url in site.axe_pages()]
    assert sum(r["punct"]["checked"] for r in desktop) > 200, [r["punct"] for r in desktop]
    assert sum(r["mobile"]["cue"]["wide"] for r in reports) > 0, [r["mobile"]["cue"] for r in reports]
    assert sum(r["mobile"]["focus"]["scrolling"] for r in reports) > 0, [r["mobile"]["focus"] for r in reports]
    assert sum(r["mobile"]["tables"]["checked"] for r in reports) > 0, [r["mobile"]["tables"] for r in reports]
