"""MkDocs hook (``hooks:`` in mkdocs.yml and mkdocs-offline.yml): the article's blocks, ready
for ``content-visibility`` while the page is still arriving.

docs/assets/extra.css skips the layout of the article's blocks while they are off screen. What
the browser cannot work out cheaply about those blocks is settled here, from the built HTML; the
page gets a rule of its own in ``<head>`` (``<style id="cv-blocks">``), and no block's markup
changes but a table's:

* **The blocks a phone opens on are rendered from the first frame** (a skipped block shown a
  frame late moves the page). How many is estimated from the HTML: a lower bound of each block's
  height on a phone (:func:`phone_height`), counting every block whose estimated top is above
  the fold of the tallest common phone. An underestimate only renders more. Rules here are
  forward ``:nth-child()`` only: ``:nth-last-child()`` matches every block as the parser appends it.
* **The first paint waits for the first screen** (``<link rel="expect" blocking="render">`` to
  the last block a 390 × 844 phone opens on, by the same estimate): otherwise Chromium paints
  once the header is parsed and then lays the article out a few blocks a frame, each frame a
  long task on a phone. Not past ``PAINT_CHARS`` of the article (a notebook page is one block of
  800 KB). Chromium 124 and later honour the link; other browsers ignore it.
* **Tables come in Material's scroll wrapper** (``div.md-typeset__scrollwrap >
  div.md-typeset__table``) with the class ``table-prewrapped``, so that Material's script, which
  moves every ``table:not([class])`` into that wrapper when it starts, leaves them alone: on a
  page that opens on a table, that move laid the first screen out again in one long task.
  docs/assets/extra.css gives the class
  Material's table rules (tests/site/test_contentblocks.py checks they match). A table directly
  under the article also gets a ``div.table-block``, so that the article's children are the same
  blocks for the ``:nth-child`` rules, with a placeholder height of its own for while it is
  skipped (:func:`table_placeholder`).

No block is rendered for being last: extra.css stacks the footer above the article, so a
checker reading colours at load (Lighthouse's axe) does not see a skipped block's text over the
footer. What each of these measured: tools/history.md.
"""

from __future__ import annotations

import html as html_lib
import math
import re

from mkdocs.exceptions import PluginError

STYLE_ID = "cv-blocks"  # the page's own rule, in its <head>
# The phone the estimate is for: the tallest common screen (430 × 932), with the widest text
# column, so that it gives the fewest lines. px at Material's 16 px body text.
FOLD = 932
HEADER = 48  # the article starts below the header at least
LINE = 25.6  # body line height (1.6)
CHARS_PER_LINE = 26  # CJK characters on a line of the widest phone column (398 px / 16 px = 24.9)
GAP = 12  # between blocks (their margins are 16 px or more)
EM = 19.36  # KaTeX's 1.21em of 16 px: its struts' heights are in these
PAINT_FOLD = 844  # the first paint holds the blocks a 390 × 844 phone opens on ...
PAINT_CHARS = 100_000  # ... that end within this many characters of the article (parsed before it)
PAINT_ID = "first-screen-end"  # the id the last of them gets, unless it has one
TABLE_CLASS = "table-block"  # the block around a table directly under the article
PREWRAPPED = "table-prewrapped"  # a table already in Material's scroll wrapper
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


def lead_count(html: str, blocks: list[tuple[int, int, str]], fold: int = FOLD) -> int:
    """How many of the first blocks a phone may show on its first screen (see FOLD)."""
    top, count = HEADER, 0
    for begin, end, tag in blocks:
        if top >= fold:
            break
        count += 1
        top += phone_height(tag, html[begin:end]) + GAP
    return count


def first_screen(html: str) -> str:
    """The page up to the end of the article's first blocks that are always rendered
    (:func:`lead_count`): what the browser lays out first. Every later block is
    ``content-visibility: auto``, laid out only when it comes near the viewport."""
    m = ARTICLE_OPEN.search(html)
    if m is None:
        return html
    blocks, _ = top_level_blocks(html, m.end())
    lead = lead_count(html, blocks)
    return html[:blocks[lead - 1][1]] if lead else html[:m.end()]


def style(lead: int) -> str:
    """The page's rule: its first ``lead`` blocks are always rendered. A forward ``:nth-child()``:
    appending a block does not change what it matches."""
    return f'<style id="{STYLE_ID}">.md-content__inner > :nth-child(-n+{lead}){{content-visibility:visible}}</style>'


def prepare(html: str) -> str:
    """The page with its article's tables wrapped and, in its ``<head>``, the rule that renders
    its first screen on a phone and the link that holds the first paint until that screen is parsed."""
    m = ARTICLE_OPEN.search(html)
    if m is None:
        return html
    blocks, close = top_level_blocks(html, m.end())
    if not html.startswith("</article>", close):
        raise ValueError(f"the article's blocks end at offset {close}, not at </article>")
    painted = paint_count(html, blocks, m.end())
    head = style(lead_count(html, blocks))
    out, pos = [], 0
    for i, (begin, end, tag) in enumerate(blocks):
        target = i == painted - 1
        if tag == "table":  # the block is the wrapper now (see prewrap_tables)
            own = f' id="{PAINT_ID}"' if target else ""
            size = f' style="contain-intrinsic-size:auto {table_placeholder(html[begin:end])}px"'
            out += [html[pos:begin], f'<div class="{TABLE_CLASS}"{own}{size}>', html[begin:end], "</div>"]
            pos, name = end, PAINT_ID
        elif target:
            tag_end = html.index(">", begin) + 1
            start, name = with_id(html[begin:tag_end], tag)
            out += [html[pos:begin], start]
            pos = tag_end
        if target:
            head += f'<link rel="expect" href="#{name}" blocking="render">'
    out.append(html[pos:])
    return prewrap_tables("".join(out)).replace("</head>", head + "</head>", 1)


def prewrap_tables(html: str) -> str:
    """Every ``<table>`` of the article in Material's scroll wrapper, with the class
    ``PREWRAPPED``. A table with attributes of its own (a widget's) is left alone, as Material
    leaves it; comments and script text are not markup."""
    out, pos, opened = [], 0, []  # opened: for each open table, whether it is wrapped
    scan = ARTICLE_OPEN.search(html).end()
    while (m := TAG.search(html, scan)) is not None:
        scan = m.end()
        closing, name = m.group(1), (m.group(2) or "").lower()
        if name in RAW and not closing:
            scan = html.index(">", html.index(f"</{name}", scan)) + 1
        elif name == "article" and closing:
            break
        elif name == "table" and not closing:
            opened.append(m.group(0) == "<table>")
            if opened[-1]:
                out += [html[pos:m.start()], '<div class="md-typeset__scrollwrap"><div class="md-typeset__table">',
                        f'<table class="{PREWRAPPED}">']
                pos = m.end()
        elif name == "table" and closing and opened.pop():
            out += [html[pos:m.end()], "</div></div>"]
            pos = m.end()
    out.append(html[pos:])
    return "".join(out)


def paint_count(html: str, blocks: list[tuple[int, int, str]], article_start: int) -> int:
    """How many first blocks the first paint waits for: those a 390 × 844 phone opens on (the
    estimate of :func:`lead_count`), as long as they end within ``PAINT_CHARS`` of the article;
    none if the last of them is a script or an empty element (nothing to wait for)."""
    count = lead_count(html, blocks, PAINT_FOLD)
    while count and blocks[count - 1][1] - article_start > PAINT_CHARS:
        count -= 1
    if count and (blocks[count - 1][2] in RAW or blocks[count - 1][2] in VOID):
        return 0
    return count


OWN_ID = re.compile(r"""\sid=["']?([^"'\s>]+)""")


def with_id(start_tag: str, tag: str) -> tuple[str, str]:
    """A block's start tag with an id, and the id: its own (a heading's), else PAINT_ID."""
    own = OWN_ID.search(start_tag)
    if own:
        return start_tag, own[1]
    return f'<{tag} id="{PAINT_ID}"' + start_tag[len(tag) + 1:], PAINT_ID


MATHML = re.compile(r'<span class="katex-mathml">.*?</math></span>', re.S)
STRUT = re.compile(r'class="strut" style="height:([0-9.]+)em')
MARKUP = re.compile(r"<[^>]+>")
HEADINGS = {"h1": (32, 1.3, 20), "h2": (25, 1.4, 30), "h3": (20, 1.5, 24)}  # font px, line height, margin


def text_width(fragment: str) -> float:
    """The fragment's visible text, in widths of a CJK character (Latin, digits and math: half)."""
    text = html_lib.unescape(MARKUP.sub("", MATHML.sub("", fragment))).replace("\u00b6", "")
    return sum(1 if ord(ch) >= 0x2E80 else 0.5 for ch in text if not ch.isspace())


def lines(width: float, per_line: float) -> int:
    return max(1, math.ceil(width / per_line))


def phone_height(tag: str, block: str) -> float:
    """A lower bound of the block's height in px on a phone (see FOLD), from its HTML alone."""
    if tag in HEADINGS:
        size, leading, margin = HEADINGS[tag]
        return lines(text_width(block), CHARS_PER_LINE * 16 / size) * size * leading + margin
    if tag == "hr" or tag in RAW:  # a notebook's scripts and styles take no room
        return 0
    if tag == "table":
        return block.count("<tr") * 28
    if tag == "figure":
        return 60  # an image of unknown height: a figure is at least its caption
    start = block[:block.index(">") + 1]
    if "highlight" in start:  # a code block: one line per line of code
        return (block.count("\n") + 1) * 18
    if 'class="arithmatex"' in start:  # display math: its tallest strut
        return max((float(h) for h in STRUT.findall(block)), default=1) * EM
    if tag == "details" and " open" not in start:
        return 40  # closed: the summary
    if "admonition" in start or tag == "details":  # smaller text in a box
        return 30 + lines(text_width(block), CHARS_PER_LINE * 16 / 12.8 - 3) * 20
    if tag in ("ul", "ol"):
        return max(block.count("<li"), lines(text_width(block), CHARS_PER_LINE - 2)) * LINE
    return lines(text_width(block), CHARS_PER_LINE) * LINE


TABLE_ROW = re.compile(r"<tr\b.*?</tr>", re.S)
TABLE_CELL = re.compile(r"<t[dh]\b.*?</t[dh]>", re.S)
TABLE_FONT = 11.52  # px: tables are .72rem (extra.css)
# What the row model below misses (numbers and code that do not break, formulas taller than a
# line, columns of unequal width), measured over the site's tables at 390 px (tools/history.md,
# 2026-12-04); tests/browser/test_pages.py checks on every page that no table outgrows it.
TABLE_MARGIN = 2.5


def table_placeholder(table: str) -> int:
    """A table's height on a 390 px phone, estimated generously from its HTML (px): the size its
    block takes while skipped. Asked where a link inside a skipped block is, Chromium lays the block
    out at its real height over the blocks placed after its placeholder, and Lighthouse's
    target-size check then found a table's links under the next questions (chapter 10's 面试追问).
    Each row: its tallest cell's lines (a column gets 358 px / columns, at least
    Material's 6.5em on phones) at 19 px, plus the cell padding; times TABLE_MARGIN."""
    height = 2
    for row in TABLE_ROW.findall(table):
        cells = TABLE_CELL.findall(row)
        column = max(6.5 * TABLE_FONT, 358 / max(1, len(cells)))
        height += 24 + 19 * max((lines(text_width(c) * TABLE_FONT, column) for c in cells), default=1)
    return math.ceil(height * TABLE_MARGIN)


def on_post_page(output: str, page, config, **kwargs) -> str:
    try:
        return prepare(output)
    except ValueError as exc:
        raise PluginError(f"contentblocks: {page.file.src_uri}: {exc}") from None
