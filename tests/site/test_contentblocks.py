"""sitebuild/hooks/contentblocks.py: the article's blocks found in the HTML, tables wrapped, the page's rules.

The browser side (the same blocks as Chromium's DOM, on every page) is
tests/browser/test_reader.py::test_tables_are_wrapped_at_build_time.
"""

from __future__ import annotations

import re

import pytest

from sitebuild.hooks.contentblocks import FOLD, HEADER, PAINT_CHARS, PAINT_FOLD, PAINT_ID, phone_height, prepare, top_level_blocks

OPEN = '<article class="md-content__inner md-typeset">'


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
    assert out.count('<div class="table-block"><table>') == 1  # the admonition's table stays where it is
    assert '<div class="admonition"><table>' in out
    assert "<table" in out and "<table class" not in out  # Material styles and wraps table:not([class])
    table = "<table><tr><td>1</td></tr></table>"
    # nothing else changed but the id of the last block, which the first paint waits for
    assert paint_target(html) == PAINT_ID
    unwrapped = out.replace(f'<div class="table-block">{table}</div>', table)
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
    assert f'<div class="table-block" id="{PAINT_ID}"><table>' in article(html)


def test_the_first_paint_does_not_wait_for_a_long_parse():
    """A first block that ends past PAINT_CHARS of the article (a notebook page is one block of
    800 KB) is not waited for; one that ends before it is."""
    long = "<div>" + "<p>字</p>" * (PAINT_CHARS // 8) + "</div>"
    assert len(long) > PAINT_CHARS
    assert paint_target(prepare(page(long))) is None
    assert paint_target(prepare(page("<p>短</p>" + long))) == PAINT_ID  # the short one before it
    assert paint_target(prepare(page("<p>a</p><script>var x = 1;</script>"))) is None  # nothing to wait for
