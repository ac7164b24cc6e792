"""sitebuild/contentblocks.py: the article's blocks found in the HTML, tables wrapped, the page's rules.

The browser side (the same blocks as Chromium's DOM, on every page) is
tests/browser/test_reader.py::test_tables_are_wrapped_at_build_time.
"""

from __future__ import annotations

import re

import pytest

from sitebuild.contentblocks import FOLD, HEADER, phone_height, prepare, top_level_blocks

OPEN = '<article class="md-content__inner md-typeset">'


def page(body: str) -> str:
    return f"<html><head></head><body><main>{OPEN}{body}</article><footer><p>f</p></footer></main></body></html>"


def rules(html: str) -> int:
    """How many first blocks the page's <style> renders."""
    m = re.search(r'<style id="cv-blocks">\.md-content__inner > :nth-child\(-n\+(\d+)\)'
                  r"\{content-visibility:visible\}</style></head>", html)
    assert m, html[:300]
    return int(m[1])


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
    assert out.replace(f'<div class="table-block">{table}</div>', table) == BODY  # nothing else changed
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
