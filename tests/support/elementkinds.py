"""The kinds of element a page's article shows (tag, and tag.class for each class), read from the
built HTML, and the fewest pages that together show every kind the site's articles use.

Colours come from the theme's CSS by element kind; the pages choose only which kinds appear. So
axe's colour rules, in both palettes (tests/browser/test_pages.py), run on this cover rather than
on every page; its other rules run on every page.
"""

from __future__ import annotations

import re
from pathlib import Path

START_TAG = re.compile(r"<([a-z][a-z0-9-]*)([^>]*)>")
CLASS = re.compile(r'\bclass="([^"]*)"')
# KaTeX's inner spans (mord, vlist, …) take the text colour of the formula: one kind for all
KATEX = re.compile(r'<span class="katex">.*?</annotation></semantics></math></span>', re.S)


def article(html: str) -> str:
    start = html.find('<article class="md-content__inner')
    end = html.find("</article>", start)
    return html[start:end] if start >= 0 and end >= 0 else ""


def element_kinds(html: str) -> set[str]:
    kinds = set()
    for tag, attrs in START_TAG.findall(KATEX.sub('<span class="katex">', article(html))):
        kinds.add(tag)
        m = CLASS.search(attrs)
        for cls in (m.group(1).split() if m else []):
            if not re.search(r"\d", cls):  # ids in classes (highlight line numbers) are not kinds
                kinds.add(f"{tag}.{cls}")
    return kinds


def covering_pages(site: Path, urls: list[str]) -> list[str]:
    """The fewest pages (greedy) whose articles together show every element kind of ``urls``."""
    kinds = {url: element_kinds((site / url / "index.html").read_text(encoding="utf-8")) for url in urls}
    left = set().union(*kinds.values())
    chosen = []
    while left:
        best = max(urls, key=lambda u: (len(kinds[u] & left), -urls.index(u)))
        chosen.append(best)
        left -= kinds[best]
    return chosen
