"""Every built page stays within the element budget: at most 10,000 elements.

A phone's main thread is blocked while a page's elements are parsed, styled and laid out (README,
"Phone performance"): as one page a chapter had 15,000–52,000 and blocked taps for over a second,
and the verification list, one page for every claim, had 11,600 at six chapters of thirteen. So a
long page is split (CONVENTIONS: a chapter's pages; sitebuild/refpages.py: the reference pages a
chapter each). Counted statically in the built HTML, as the browser's parser creates them before any
script runs: every start tag of every ``*.html`` file under site/, the header, the nav and the
typeset math included.
"""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from tests.support.builtpage import replay

LIMIT = 10_000


class _Count(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements = 0

    def handle_starttag(self, tag, attrs) -> None:
        self.elements += 1

    def handle_startendtag(self, tag, attrs) -> None:
        self.elements += 1


def elements(html: str) -> int:
    """The elements of an HTML document: its start tags (``<br>``, ``<path/>`` included); the text of
    scripts, styles and comments holds none."""
    parser = _Count()
    parser.feed(html)
    parser.close()
    return parser.elements


def test_elements_counts_tags_not_text():
    html = ('<!doctype html><html><head><script>if (a<b) x = "<div>";</script><style>p>a{}</style></head>'
            '<body><!-- <p>not one</p> --><p>a &lt;b&gt; <br>c<svg><path d="M0"/></svg></p></body></html>')
    assert elements(html) == 9  # html head script style body p br svg path


@pytest.fixture(scope="module")
def counts(built_site, built_pages) -> dict[str, int]:
    """{built file, relative to site/: its elements} for every page of the build."""
    return {f.relative_to(built_site).as_posix(): replay(_Count(), f).elements
            for f in built_pages}


def test_every_built_page_is_within_the_element_budget(counts):
    assert len(counts) >= 50 and "verification/ch01/index.html" in counts and "404.html" in counts
    over = {page: n for page, n in counts.items() if n > LIMIT}
    assert over == {}, f"pages over {LIMIT:,} elements: split them (CONVENTIONS, Chapters)"
