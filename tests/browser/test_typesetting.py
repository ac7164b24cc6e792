"""Typesetting a reader sees (issue 11), at 390 px on every page, and at 1280 px (where only the
template decides) on the pages that together show every kind of element.

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

PHONE = [pytest.param(url, id=page_id(url)) for url in NAV_URLS]


def _measures(site, path: str | None = None) -> list[tuple[str, dict]]:
    """(where, measurements): the page at 390 px, or (no path) the cover pages at 1280 px."""
    if path is not None:
        return [(f"{path} 390 px", site.report(path)["typesetting"]["mobile"])]
    return [(f"{url} 1280 px", site.report(url)["typesetting"]["desktop"]) for url in site.axe_pages()]


def _sizes(measures) -> list[str]:
    return [f"{where}: text more than one step (0.9x) below the body: {m['sizes']}"
            for where, m in measures if m["sizes"]["offenders"]]


def _gaps(measures) -> list[str]:
    return [f"{where}: body {m['body']}px, gaps over 2 em or overlapping: {m['gaps']}"
            for where, m in measures if m["gaps"]["offenders"]]


def _abbr(measures) -> list[str]:
    return [f"{where}: {m['abbr']}" for where, m in measures if m["abbr"]["offenders"]]


@pytest.mark.parametrize("path", PHONE)
def test_text_at_most_one_step_smaller_than_the_body(site, path):
    """Admonitions, question titles and tables: font size >= 0.9 x the body's."""
    assert not (faults := _sizes(_measures(site, path))), "\n".join(faults)


@pytest.mark.parametrize("path", PHONE)
def test_display_formulas_sit_close_to_the_text(site, path):
    """Between a display formula and the paragraph next to it: at most 2 body em of white, no overlap."""
    assert not (faults := _gaps(_measures(site, path))), "\n".join(faults)


@pytest.mark.parametrize("path", PHONE)
def test_abbreviations_underlined_at_first_use_only(site, path):
    """Per term, the first <abbr> of the page is underlined and no later one is."""
    assert not (faults := _abbr(_measures(site, path))), "\n".join(faults)


def test_typesetting_at_the_desktop_width(site):
    """The three checks above at 1280 px, on the pages that show every kind of element."""
    measures = _measures(site)
    assert not (faults := _sizes(measures) + _gaps(measures) + _abbr(measures)), "\n".join(faults)


@pytest.mark.parametrize("width", ("desktop", "mobile"))
def test_typesetting_checks_see_what_they_check(site, width):
    """The pages checked at each width have every kind of element the checks above look at, and
    the checks saw them: admonitions, questions with titles, tables, formulas between paragraphs,
    repeated terms (at 390 px chapter 1's pages; at 1280 px the cover pages)."""
    reports = ([site.report(url)["typesetting"]["mobile"] for url in CHAPTER_URLS if url.startswith(CHAPTER_URLS[0])]
               if width == "mobile" else [m for _, m in _measures(site)])
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
