"""MkDocs hook (``hooks:`` in mkdocs.yml and mkdocs-offline.yml): the article's blocks, ready
for ``content-visibility`` while the page is still arriving.

docs/assets/extra.css skips the layout of the article's blocks while they are off screen. Two
things about those blocks are settled here, in the HTML, rather than in the browser:

* **The last blocks are marked** ``cv-tail``, and extra.css always renders them (a skipped
  block taller than its estimate would reach over the footer). The CSS rule was
  ``:nth-last-child(-n+4)``, but while the parser is still appending blocks, every new block is
  one of the last four, so each was styled and laid out once on arrival and skipped at the
  next, and each append restyled all the blocks before it: on a phone about 0.1 s of main
  thread per page load (``make audit``, ch01 lstm and two 推导 pages, 9 of 9 loads).
* **Tables are wrapped** in ``div.table-block``. Material moves every ``table:not([class])``
  into a scroll wrapper when it starts; done directly under the article, that change of the
  article's children restyled every block after the table (extra.css's ``:nth-child`` rules),
  about 2,700–3,300 elements. Inside the wrapper it stays local.
"""

from __future__ import annotations

import re

from mkdocs.exceptions import PluginError

TAIL = 4  # how many of the article's last blocks are always rendered
TAIL_CLASS = "cv-tail"
TABLE_CLASS = "table-block"
ARTICLE_OPEN = re.compile(r'<article class="md-content__inner md-typeset">')
TAG = re.compile(r"<!--.*?-->|<(/?)([a-zA-Z][a-zA-Z0-9-]*)\b[^>]*?(/?)>", re.S)
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
RAW = {"script", "style", "textarea"}  # their text is not markup


def top_level_blocks(html: str, start: int) -> tuple[list[tuple[int, int, str]], int]:
    """The element children of the element whose content begins at ``start``.

    Returns ``[(begin, end, tag), ...]`` (offsets of each child's start tag and of the end of
    its end tag) and the offset of the parent's end tag. Void elements and ``<x/>`` (SVG,
    MathML) have no end tag; text between the children is not a block.
    """
    blocks, depth, pos, open_at = [], 0, start, None
    while True:
        m = TAG.search(html, pos)
        if m is None:
            raise ValueError(f"unclosed element after offset {start}")
        pos = m.end()
        closing, name, selfclosing = m.group(1), (m.group(2) or "").lower(), m.group(3)
        if not name:  # a comment
            continue
        if closing:
            if depth == 0:
                return blocks, m.start()
            depth -= 1
            if depth == 0:
                blocks.append((open_at, m.end(), tag_name))
            continue
        if name in VOID or selfclosing:
            if depth == 0:
                blocks.append((m.start(), m.end(), name))
            continue
        if name in RAW:
            end = html.find(f"</{name}", pos)
            pos = html.find(">", end) + 1
            if depth == 0:
                blocks.append((m.start(), pos, name))
            continue
        if depth == 0:
            open_at, tag_name = m.start(), name
        depth += 1


def add_class(start_tag: str, cls: str) -> str:
    """``<p id="x">`` -> ``<p id="x" class="cls">``; an existing class attribute is extended."""
    m = re.search(r'\bclass="([^"]*)"', start_tag)
    if m:
        return start_tag[:m.start(1)] + (m.group(1) + " " + cls).strip() + start_tag[m.end(1):]
    return re.sub(r"^<([a-zA-Z0-9-]+)", lambda t: f'<{t.group(1)} class="{cls}"', start_tag, count=1)


def prepare(html: str) -> str:
    """The page with its article's tables wrapped and its last ``TAIL`` blocks marked."""
    m = ARTICLE_OPEN.search(html)
    if m is None:
        return html
    blocks, close = top_level_blocks(html, m.end())
    if not html.startswith("</article>", close):
        raise ValueError(f"the article's blocks end at offset {close}, not at </article>")
    tail = {b[0] for b in blocks[-TAIL:]}
    out, pos = [], 0
    for begin, end, tag in blocks:
        start_tag_end = html.index(">", begin) + 1
        out.append(html[pos:begin])
        if tag == "table":  # the wrapper is the block now: it takes the mark, the table keeps no class
            wrapper = add_class("<div>", TABLE_CLASS)
            if begin in tail:
                wrapper = add_class(wrapper, TAIL_CLASS)
            out.append(wrapper + html[begin:end] + "</div>")
        elif begin in tail:
            out.append(add_class(html[begin:start_tag_end], TAIL_CLASS) + html[start_tag_end:end])
        else:
            out.append(html[begin:end])
        pos = end
    out.append(html[pos:])
    return "".join(out)


def on_post_page(output: str, page, config, **kwargs) -> str:
    try:
        return prepare(output)
    except ValueError as exc:
        raise PluginError(f"contentblocks: {page.file.src_uri}: {exc}") from None
