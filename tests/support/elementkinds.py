"""The kinds of element a built page shows (tag, tag.class for each class, tag[attribute] for each
attribute name), read from its HTML, and the fewest pages that together show every kind.

axe-core judges an element by its kind: its tag, its classes (which decide its colours through
the theme's CSS) and which attributes it carries (role, aria-*, tabindex, alt, …). The pages only
choose which kinds appear, and the values axe reads from the content (alt text, link and button
names, ids) are checked on every built page without a browser (tests/site/test_built_pages.py).
So axe runs, in both palettes, on this cover rather than on every page (tests/browser/test_pages.py).
"""

from __future__ import annotations

import re
from pathlib import Path

START_TAG = re.compile(r"<([a-z][a-z0-9-]*)([^>]*)>")
CLASS = re.compile(r'\bclass="([^"]*)"')
ATTRIBUTE = re.compile(r"""\s([a-zA-Z_:][-a-zA-Z0-9_:.]*)(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s>]+))?""")
# A formula's inner spans (its MathML copy, then mord, vlist, sqrt, … under the aria-hidden
# katex-html) are KaTeX's markup, the same on every page, in the formula's text colour: one kind
# for all, span.katex.
KATEX = '<span class="katex">'
SPAN_TAG = re.compile(r"<(/?)span\b")


def body(html: str) -> str:
    start = html.find("<body")
    return html[start:] if start >= 0 else html


def without_formula_insides(html: str) -> str:
    """Every ``<span class="katex">`` element emptied (its balanced inside cut)."""
    out, i = [], 0
    while (start := html.find(KATEX, i)) >= 0:
        inside, depth = start + len(KATEX), 1
        for m in SPAN_TAG.finditer(html, inside):
            depth += -1 if m.group(1) else 1
            if depth == 0:
                break
        out.append(html[i:inside])
        i = m.start()  # the formula's own closing tag
    out.append(html[i:])
    return "".join(out)


def element_kinds(html: str) -> set[str]:
    kinds = set()
    for tag, attrs in START_TAG.findall(without_formula_insides(body(html))):
        kinds.add(tag)
        m = CLASS.search(attrs)
        for cls in (m.group(1).split() if m else []):
            if not re.search(r"\d", cls):  # ids in classes (highlight line numbers) are not kinds
                kinds.add(f"{tag}.{cls}")
        kinds.update(f"{tag}[{name}]" for name in ATTRIBUTE.findall(attrs) if name != "class")
    return kinds


def covering_pages(site: Path, urls: list[str]) -> list[str]:
    """The fewest pages (greedy) that together show every element kind of ``urls``."""
    kinds = {url: element_kinds((site / url / "index.html").read_text(encoding="utf-8")) for url in urls}
    left = set().union(*kinds.values())
    chosen = []
    while left:
        best = max(urls, key=lambda u: (len(kinds[u] & left), -urls.index(u)))
        chosen.append(best)
        left -= kinds[best]
    return chosen
