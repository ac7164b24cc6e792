"""Typesetting a reader sees (issue 11), at 1280 px and at 390 px, on every page.

- Text sizes: admonitions, the interview questions (<details>, titled by their <summary>) and
  tables are at most one step smaller than the body text; one step is a factor of 0.9
  (docs/assets/extra.css says so where it sets them).
- Display formulas: no more than 2 em of white between a formula and the paragraph above or
  below it (there were about 60 px, nearly 4 em), and the two never overlap.
- Abbreviations: the dotted underline marks a term's first use on the page only
  (sitebuild/hooks/abbrfirst.py).

The measurements come from the shared page visit (tests/browser/helpers.py, TYPESETTING_JS).
"""

from __future__ import annotations

import pytest

from tests.browser.helpers import CHAPTER_URLS, NAV_URLS, page_id

WIDTHS = ("desktop", "mobile")
PAGE_WIDTHS = [pytest.param(url, width, id=f"{page_id(url)}-{width}") for url in NAV_URLS for width in WIDTHS]


def _measure(site, path: str, width: str) -> dict:
    return site.report(path)["typesetting"][width]


@pytest.mark.parametrize(("path", "width"), PAGE_WIDTHS)
def test_text_at_most_one_step_smaller_than_the_body(site, path, width):
    """Admonitions, question titles and tables: font size >= 0.9 x the body's."""
    sizes = _measure(site, path, width)["sizes"]
    assert not sizes["offenders"], f"{width}: text more than one step (0.9x) below the body: {sizes}"


@pytest.mark.parametrize(("path", "width"), PAGE_WIDTHS)
def test_display_formulas_sit_close_to_the_text(site, path, width):
    """Between a display formula and the paragraph next to it: at most 2 body em of white, no overlap."""
    r = _measure(site, path, width)
    gaps = r["gaps"]
    assert not gaps["offenders"], f"{width}: body {r['body']}px, gaps over 2 em or overlapping: {gaps}"


@pytest.mark.parametrize(("path", "width"), PAGE_WIDTHS)
def test_abbreviations_underlined_at_first_use_only(site, path, width):
    """Per term, the first <abbr> of the page is underlined and no later one is."""
    abbr = _measure(site, path, width)["abbr"]
    assert not abbr["offenders"], f"{width}: {abbr}"


@pytest.mark.parametrize("width", WIDTHS)
def test_typesetting_checks_see_what_they_check(site, width):
    """Chapter 1's pages have every kind of element the checks above look at, and the checks saw
    them: admonitions, questions with titles, tables, formulas between paragraphs, repeated terms."""
    reports = [_measure(site, url, width) for url in CHAPTER_URLS if url.startswith(CHAPTER_URLS[0])]
    assert len(reports) >= 4 and all(r["body"] >= 14 for r in reports), [r["body"] for r in reports]
    checked = {kind: sum(r["sizes"]["checked"][kind] for r in reports) for kind in ("admonition", "details", "summary", "table")}
    assert all(checked.values()), checked
    assert sum(r["gaps"]["checked"] for r in reports) > 20, [r["gaps"] for r in reports]
    assert max(r["abbr"]["terms"] for r in reports) > 3, [r["abbr"] for r in reports]
    assert sum(r["abbr"]["repeats"] for r in reports) > 20, [r["abbr"] for r in reports]


def test_abbrfirst_marks_every_use_after_the_first_per_term():
    """The hook itself, on a snippet: per term, uses after the first get the class (added to one
    already there), the first keeps its markup untouched, and other terms count on their own."""
    from sitebuild.hooks.abbrfirst import mark_repeats

    html = ('<p><abbr title="r">RNN</abbr> <abbr title="f">FFN</abbr></p>'
            '<p><abbr title="r">RNN</abbr> <abbr class="x" title="r">RNN</abbr> <abbr title="f">FFN</abbr></p>')
    assert mark_repeats(html) == (
        '<p><abbr title="r">RNN</abbr> <abbr title="f">FFN</abbr></p>'
        '<p><abbr class="abbr-repeat" title="r">RNN</abbr> <abbr class="x abbr-repeat" title="r">RNN</abbr> '
        '<abbr class="abbr-repeat" title="f">FFN</abbr></p>'
    )
