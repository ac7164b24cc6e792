"""A first visit of any chapter page transfers at most 400 KB, gzip, everything included (the
page, CSS, JS, fonts, the sitemap), and the search index is not part of it: counted from the
built files (tests/support/firstvisit.py). The browser checks the count on one page."""

from __future__ import annotations

import pytest

from sitebuild.config import nav_pages
from tests.support.firstvisit import BUDGET, first_visit

CHAPTER_URLS = [url for _, _, url in nav_pages() if url.startswith("chapters/")]


@pytest.mark.parametrize("path", CHAPTER_URLS)
def test_first_visit_is_within_the_byte_budget(built_site, path):
    files = first_visit(built_site, path)
    total = sum(files.values())
    largest = sorted(files.items(), key=lambda kv: -kv[1])[:5]
    assert not [f for f in files if "search_index" in f], files
    assert total <= BUDGET, f"{path}: {total} bytes over the {BUDGET}-byte budget; largest {largest}"


def test_the_count_sees_fonts_and_scripts(built_site):
    """The count holds what every chapter page fetches: Material's bundle, its stylesheet, KaTeX's
    stylesheet and at least its main font."""
    files = first_visit(built_site, CHAPTER_URLS[0])
    names = " ".join(files)
    for part in ("bundle.", "main.", "katex.min.css", "KaTeX_Main-Regular.woff2", "sitemap.xml"):
        assert part in names, (part, files)
