"""What a first visit of a built page transfers, read from the files: the page and everything it
asks for before a reader does anything, gzip-compressed as a static host serves text.

tests/site/test_first_visit.py holds every chapter page to the budget with it; the browser test
(tests/browser/test_template.py::test_first_visit_bytes_match_the_files) checks on one page that
Chromium fetches what this counts, and no more.
"""

from __future__ import annotations

import gzip
import re
from functools import cache
from pathlib import Path
from urllib.parse import urljoin, urlparse

BUDGET = 400 * 1024  # bytes a first visit of a chapter page may transfer, all types together
_REFS = [
    re.compile(r'<link rel="(?:stylesheet|icon)" href="([^"]+)"'),
    re.compile(r'<link rel="preload" href="([^"]+)" as="font"'),
    re.compile(r'<script src="([^"]+)"'),
]
TEXT = (".html", ".css", ".js", ".json", ".xml", ".svg")


@cache
def _size(file: Path) -> int:
    data = file.read_bytes()
    return len(gzip.compress(data, 6)) if file.suffix in TEXT else len(data)


def first_visit(site: Path, url: str) -> dict[str, int]:
    """{file, site-relative: bytes} of a first visit of ``url`` ("chapters/01-x/"): the page, its
    stylesheets, scripts, icon and preloaded fonts, and sitemap.xml (Material reads it for instant
    navigation). Images are lazy and the search index waits for the reader: neither counts."""
    page = site / url / "index.html" if url.endswith("/") or not url else site / url
    html = page.read_text(encoding="utf-8")
    base = "http://site.test/" + url
    files = {page.relative_to(site).as_posix(): _size(page), "sitemap.xml": _size(site / "sitemap.xml")}
    for pattern in _REFS:
        for href in pattern.findall(html):
            path = urlparse(urljoin(base, href)).path.lstrip("/")
            files[path] = _size(site / path)
    return files
