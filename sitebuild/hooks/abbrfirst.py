"""MkDocs hook (``hooks:`` in mkdocs.yml and mkdocs-offline.yml): an abbreviation is underlined once.

The ``abbr`` extension (docs/includes/abbreviations.md, appended to every page) wraps every
occurrence of RNN, FFN, ... in ``<abbr title>``, and Material draws a dotted underline under
each: a chapter had 157 of them. The reader needs the cue where a term first appears; after
that it is noise. CSS cannot tell the first occurrence from the others, so this hook marks the
later ones ``class="abbr-repeat"`` (docs/assets/extra.css drops their underline; the title
stays, so hovering still explains the term). "First" is per page, in document order, with
the included question sections counted where they stand.
"""

from __future__ import annotations

import re

ABBR = re.compile(r"<abbr\b([^>]*)>(.*?)</abbr>", re.S)
CLASS = re.compile(r'\bclass="([^"]*)"')
REPEAT = "abbr-repeat"


def mark_repeats(html: str) -> str:
    """``html`` with every ``<abbr>`` after the first of the same text marked ``abbr-repeat``."""
    seen: set[str] = set()

    def mark(m: re.Match) -> str:
        attrs, text = m[1], m[2]
        key = text.strip()
        if key not in seen:
            seen.add(key)
            return m[0]
        if CLASS.search(attrs):
            attrs = CLASS.sub(lambda c: f'class="{c[1]} {REPEAT}"', attrs, count=1)
        else:
            attrs = f' class="{REPEAT}"{attrs}'
        return f"<abbr{attrs}>{text}</abbr>"

    return ABBR.sub(mark, html)


def on_page_content(html: str, page, config, files) -> str:
    return mark_repeats(html)
