"""sitebuild/hooks/contentblocks.py: the article's blocks found in the HTML, tables wrapped, the page's rules;
and, over the built site, what each page's <head> does before Material's bundle starts.

Measured (field harness, interleaved with builds lacking one of them): each of these kept a
heavy section page within the phone budget that it broke without it. Here, the static facts.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from sitebuild.config import nav_pages
from sitebuild.hooks.contentblocks import (ARTICLE_OPEN, FOLD, HEADER, PAINT_CHARS, PAINT_FOLD, PAINT_ID, PREWRAPPED,
                                            TABLE_CLASS, TABLE_MARGIN, phone_height, prepare, table_placeholder,
                                            top_level_blocks)

ROOT = Path(__file__).resolve().parents[2]
OPEN = '<article class="md-content__inner md-typeset">'
SCROLLWRAP = '<div class="md-typeset__scrollwrap"><div class="md-typeset__table">'


def page(body: str) -> str:
    return f"<html><head></head><body><main>{OPEN}{body}</article><footer><p>f</p></footer></main></body></html>"


def rules(html: str) -> int:
    """How many first blocks the page's <style> renders."""
    m = re.search(r'<style id="cv-blocks">\.md-content__inner > :nth-child\(-n\+(\d+)\)'
                  r"\{content-visibility:visible\}</style>(<link [^>]*>)?</head>", html)
    assert m, html[:300]
    return int(m[1])


def paint_target(html: str) -> str | None:
    """The id the first paint waits for (its <link rel="expect"> in <head>), or None."""
    links = re.findall(r'<link rel="expect" href="#([^"]+)" blocking="render">', html.split("</head>", 1)[0])
    assert len(links) <= 1, links
    return links[0] if links else None


def article(html: str) -> str:
    return html.split(OPEN, 1)[1].split("</article>", 1)[0]


BODY = (
    "<h1>标题</h1>\n"
    '<p>文字 <span class="katex"><svg width="1"><path d="M0 0"/></svg><br></span></p>\n'
    "<!-- <table> in a comment is no block -->\n"
    "<hr>\n"
    "<table><tr><td>1</td></tr></table>\n"
    '<div class="admonition"><table><tr><td>inside</td></tr></table></div>\n'
    "<script>if (a < b) document.write('<p>')</script>\n"
    '<ul class="x"><li>a</li></ul>\n'
    "<p>最后</p>\n"
)


def test_blocks_are_the_articles_element_children():
    html = page(BODY)
    blocks, close = top_level_blocks(html, html.index(OPEN) + len(OPEN))
    assert [tag for _, _, tag in blocks] == ["h1", "p", "hr", "table", "div", "script", "ul", "p"]
    assert html.startswith("</article>", close)
    assert html[blocks[1][0]:blocks[1][1]].endswith("<br></span></p>")


def test_tables_of_the_article_are_wrapped_and_the_first_screen_counted():
    html = prepare(page(BODY))
    out = article(html)
    wrapped = f'{SCROLLWRAP}<table class="{PREWRAPPED}"><tr><td>%s</td></tr></table></div></div>'
    # a block of its own under the article; the admonition's table stays where it is; both come
    # in Material's scroll wrapper with a class, so that Material's script leaves them alone
    block = '<div class="table-block" style="contain-intrinsic-size:auto 113px">'  # (2 + one row of 43) × 2.5
    assert f'{block}{wrapped % 1}</div>' in out
    assert f'<div class="admonition">{wrapped % "inside"}</div>' in out
    assert out.count("<table>") == 1  # in the comment
    # nothing else changed but the id of the last block, which the first paint waits for
    assert paint_target(html) == PAINT_ID
    unwrapped = (out.replace(f'{block}{wrapped % 1}</div>', "<table><tr><td>1</td></tr></table>")
                 .replace(wrapped % "inside", "<table><tr><td>inside</td></tr></table>"))
    assert unwrapped == BODY.replace("<p>最后</p>", f'<p id="{PAINT_ID}">最后</p>')
    assert rules(html) == 8  # 8 blocks, all above the fold


def test_a_page_without_the_article_is_left_alone():
    html = "<html><body><p>x</p></body></html>"
    assert prepare(html) == html


def test_unbalanced_markup_is_an_error_not_a_guess():
    with pytest.raises(ValueError, match="not at </article>"):
        prepare(page("<div><p>x</p>"))  # the div swallows </article>: its end is the footer's
    with pytest.raises(ValueError, match="unclosed"):
        prepare(f"<html><body>{OPEN}<div>")


def formula(height_em: float) -> str:
    return (f'<div class="arithmatex"><span><span class="katex-display"><span class="katex"><span class="katex-html">'
            f'<span class="base"><span class="strut" style="height:{height_em}em;vertical-align:-1em;"></span>'
            f'x</span></span></span></span></span></div>')


def test_height_estimates_are_lower_bounds_of_what_a_phone_shows():
    """px on a 430 px phone (the widest text column, so the fewest lines); the real heights
    (Chromium, 412 px) are larger: h2 35 + margin, a 3-line paragraph 77, a 15em formula 298."""
    assert phone_height("h2", "<h2>方程</h2>") == 25 * 1.4 + 30
    assert phone_height("p", "<p>" + "字" * 52 + "</p>") == 2 * 25.6  # 26 a line
    assert phone_height("p", "<p>" + "x" * 52 + "</p>") == 25.6  # Latin: half as wide
    assert phone_height("div", formula(15.04)) == pytest.approx(15.04 * 19.36)
    assert phone_height("div", '<div class="highlight"><pre><code>a\nb\nc</code></pre></div>') == 3 * 18
    assert phone_height("details", '<details class="question"><summary>问</summary><p>' + "答" * 500 + "</p></details>") == 40
    assert phone_height("table", "<table><tr><td>1</td></tr><tr><td>2</td></tr></table>") == 56


def test_the_blocks_above_the_fold_are_rendered_first_and_no_more():
    body = "<h1>标题</h1>" + formula(46) + "<p>在折线下面</p>" * 6
    assert HEADER + 40 * 1.3 + 20 < FOLD < HEADER + 46 * 19.36  # the formula starts above the fold and ends below
    assert rules(prepare(page(body))) == 2


def paragraphs(count: int) -> str:
    return "".join(f"<p>{i}{'字' * 40}</p>" for i in range(count))  # 2 lines each: 51.2 + 12 px


def test_the_first_paint_waits_for_the_last_block_of_a_phones_first_screen():
    """<link rel="expect" blocking="render"> names the last block whose estimated top is above a
    390 × 844 phone's fold: the first paint shows that screen whole, not the header alone."""
    html = prepare(page("<h1>标题</h1>" + paragraphs(30)))
    tops = [HEADER + 1 * 32 * 1.3 + 20 + 12 + i * (2 * 25.6 + 12) for i in range(30)]
    last = max(i for i, top in enumerate(tops) if top < PAINT_FOLD)
    assert 5 < last < 29
    assert paint_target(html) == PAINT_ID
    assert f'<p id="{PAINT_ID}">{last}字' in article(html)
    assert article(html).count(f'id="{PAINT_ID}"') == 1


def test_a_block_with_its_own_id_is_named_as_it_is():
    html = prepare(page('<h2 id="setup">设定</h2>'))
    assert paint_target(html) == "setup"
    assert article(html) == '<h2 id="setup">设定</h2>'


def test_a_table_is_waited_for_by_its_wrapper():
    html = prepare(page("<p>a</p><table><tr><td>1</td></tr></table>"))
    assert paint_target(html) == PAINT_ID
    assert f'<div class="table-block" id="{PAINT_ID}" style="contain-intrinsic-size:auto 113px">{SCROLLWRAP}' in article(html)


def test_a_skipped_tables_placeholder_counts_its_rows_and_their_lines():
    """A table block's placeholder height (px, while content-visibility skips it): each row's
    tallest cell in lines, times TABLE_MARGIN. tests/browser/test_pages.py checks on every page
    that no table is taller at 390 px than its placeholder."""
    one_line = "<tr><td>post-LN</td><td>LLaMA</td><td><a href='#'>05 章</a></td></tr>"
    two_lines = "<tr><td>" + "字" * 20 + "</td><td>x</td><td>y</td></tr>"  # 230 px of text in a 119 px column
    assert table_placeholder(f"<table>{one_line}</table>") == math.ceil((2 + 43) * TABLE_MARGIN)
    assert table_placeholder(f"<table>{two_lines}</table>") == math.ceil((2 + 24 + 2 * 19) * TABLE_MARGIN)
    assert table_placeholder(f"<table>{one_line * 10}</table>") == math.ceil((2 + 430) * TABLE_MARGIN)


def test_a_table_with_a_class_of_its_own_is_left_alone():
    """A widget's table (class="widget-pe-table") is styled by its widget, not as an article table."""
    body = '<figure class="widget"><table class="widget-pe-table"><tr><td>1</td></tr></table></figure>'
    assert article(prepare(page(body))) == body.replace("<figure ", f'<figure id="{PAINT_ID}" ', 1)


def test_material_table_rules_hold_for_the_prewrapped_class(built_site):
    """Material styles only table:not([class]): each of its rules for that selector (the built
    site's main.css) is in extra.css for table.table-prewrapped, declaration for declaration.
    Fails when a Material upgrade changes its table rules, or when extra.css loses one."""
    def squeeze(css: str) -> str:
        css = re.sub(r"/\*.*?\*/", "", css, flags=re.S)
        return re.sub(r"\s+", "", css).replace(";}", "}")
    material = next((built_site / "assets" / "stylesheets").glob("main.*.min.css")).read_text(encoding="utf-8")
    extra = squeeze((ROOT / "docs" / "assets" / "extra.css").read_text(encoding="utf-8"))
    rules = re.findall(r"([^{}]*table:not\(\[class\]\)[^{}]*)\{([^}]*)\}", material)
    assert len(rules) >= 10, rules
    missing = []
    for selector, body in rules:
        twin = squeeze(selector.replace("table:not([class])", f"table.{PREWRAPPED}") + "{" + body + "}")
        if twin not in extra:
            missing.append(twin)
    assert missing == []


def test_the_first_paint_does_not_wait_for_a_long_parse():
    """A first block that ends past PAINT_CHARS of the article (a notebook page is one block of
    800 KB) is not waited for; one that ends before it is."""
    long = "<div>" + "<p>字</p>" * (PAINT_CHARS // 8) + "</div>"
    assert len(long) > PAINT_CHARS
    assert paint_target(prepare(page(long))) is None
    assert paint_target(prepare(page("<p>短</p>" + long))) == PAINT_ID  # the short one before it
    assert paint_target(prepare(page("<p>a</p><script>var x = 1;</script>"))) is None  # nothing to wait for


def material_pages(built_site) -> list[tuple[str, str]]:
    """(name, html) of every page Material rendered (not a notebook's raw download)."""
    pages = []
    for path in sorted(built_site.rglob("*.html")):
        text = path.read_text(encoding="utf-8")
        if "</body>" in text and 'id="__config"' in text:
            pages.append((str(path.relative_to(built_site)), text))
    assert len(pages) >= len(nav_pages()), f"only {len(pages)} Material pages found"
    return pages


def test_every_built_article_has_its_rule_its_tables_wrapped_and_its_first_screen_named(built_site):
    """What the browser suite read from the DOM, read from the built HTML: each article page has
    one <style id="cv-blocks">; no table is a block of the article (each sits in a
    div.table-block) and every table without a class of its own comes in Material's scroll
    wrapper already; the first paint waits for
    an element that exists among the article's blocks, before the end of the first PAINT_CHARS."""
    offenders, articles = [], 0
    for name, text in material_pages(built_site):
        head = text.split("</head>", 1)[0]
        m = ARTICLE_OPEN.search(text)
        if m is None or name == "404.html":  # mkdocs renders 404.html from a template, past the page hooks
            continue
        articles += 1
        rules = head.count('<style id="cv-blocks">')
        if rules != 1:
            offenders.append(f"{name}: {rules} cv-blocks rules")
        blocks, _ = top_level_blocks(text, m.end())
        if any(tag == "table" for _, _, tag in blocks):
            offenders.append(f"{name}: a table is a block of the article")
        wrappers = [text[b:e] for b, e, tag in blocks if text.startswith(f'<div class="{TABLE_CLASS}"', b)]
        if any(not re.match(rf'<div class="table-block"[^>]*>{SCROLLWRAP}<table', w) for w in wrappers):
            offenders.append(f"{name}: a div.table-block that holds no table in Material's scroll wrapper")
        if "<table>" in text[m.end():text.index("</article>", m.end())]:
            offenders.append(f"{name}: a table without a class, which Material's script would move at start")
        target = paint_target(text)
        if target is not None:
            starts = [text[b:text.index(">", b) + 1] for b, _, _ in blocks]
            index = next((i for i, st in enumerate(starts) if f'id="{target}"' in st), None)
            if index is None:
                offenders.append(f"{name}: the first paint waits for #{target}, which is no block of the article")
            elif blocks[index][1] - m.end() > PAINT_CHARS:
                offenders.append(f"{name}: the first paint waits for a block past {PAINT_CHARS} characters")
    assert offenders == []
    assert articles >= len(nav_pages())


def test_extra_css_skips_the_articles_blocks_off_screen_and_stacks_the_footer_above():
    """The rules contentblocks' <style> and wrappers go with (docs/assets/extra.css)."""
    css = (ROOT / "docs" / "assets" / "extra.css").read_text(encoding="utf-8")
    assert re.search(r"\.md-content__inner > :where\([^)]*\.table-block\)\s*\{\s*content-visibility: auto;", css)
    assert re.search(r"\.md-footer \{\s*position: relative;\s*z-index: 1;", css)
    assert re.search(r"\.md-content__inner > :nth-child\(-n\+16\) \{\s*content-visibility: visible;", css)


def test_head_does_before_the_bundle_what_the_bundle_would_do_later(built_site):
    """The template override (docs/assets/overrides): in <head>, before any script file, the
    search index request is held back until the reader reaches for search, the stylesheet links
    are made absolute and <html> gets the bundle's classes; the palette form is run by the
    inline palette script, not by Material's bundle (which would restyle the whole page)."""
    offenders = []
    for name, text in material_pages(built_site):
        head, body = text.split("</head>", 1)
        for what, needle in [("search-on-demand", "XMLHttpRequest.prototype.send = function"),
                             ("absolute-urls", "link.href = link.href"),
                             ("script-classes", 'classList.add("js-focus-visible")')]:
            if needle not in head:
                offenders.append(f"{name}: no {what} in <head>")
        if re.search(r'<script[^>]+src="[^"]', head):
            offenders.append(f"{name}: a script file in <head> runs before the inline scripts")
        form = re.search(r"<form class=\"md-header__option\" data-md-palette>.*?</form>\s*<script>(.*?)</script>", body, re.S)
        if form is None or "__md_set(\"__palette\"" not in form.group(1):
            offenders.append(f"{name}: the palette form is not followed by its inline script")
        if 'data-md-component="palette"' in text:
            offenders.append(f"{name}: Material's bundle would run the palette")
    assert offenders == []
