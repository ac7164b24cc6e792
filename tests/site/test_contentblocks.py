"""sitebuild/contentblocks.py: the article's blocks found in the HTML, tables wrapped, the last marked.

The browser side (the same blocks as Chromium's DOM, on every page) is
tests/browser/test_reader.py::test_last_blocks_are_marked_and_tables_wrapped_at_build_time.
"""

from __future__ import annotations

import re

import pytest

from sitebuild.contentblocks import TAIL_CLASS, prepare, top_level_blocks

OPEN = '<article class="md-content__inner md-typeset">'


def page(body: str) -> str:
    return f"<html><body><main>{OPEN}{body}</article><footer><p>f</p></footer></main></body></html>"


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


def test_tables_of_the_article_are_wrapped_and_the_last_blocks_marked():
    out = article(prepare(page(BODY)))
    assert out.count('<div class="table-block"><table>') == 1  # the admonition's table stays where it is
    assert '<div class="admonition cv-tail"><table>' in out
    marked = re.findall(rf'<(\w+)[^>]*\bclass="([^"]*\b{TAIL_CLASS}\b[^"]*)"', out)
    assert marked == [("div", "admonition cv-tail"), ("script", "cv-tail"), ("ul", "x cv-tail"), ("p", "cv-tail")]
    assert "<table" in out and "<table class" not in out  # Material styles and wraps table:not([class])


def test_a_table_among_the_last_blocks_marks_its_wrapper():
    out = article(prepare(page("<p>a</p><table><tr><td>1</td></tr></table>")))
    assert out == '<p class="cv-tail">a</p><div class="table-block cv-tail"><table><tr><td>1</td></tr></table></div>'


def test_a_page_without_the_article_is_left_alone():
    html = "<html><body><p>x</p></body></html>"
    assert prepare(html) == html


def test_unbalanced_markup_is_an_error_not_a_guess():
    with pytest.raises(ValueError, match="not at </article>"):
        prepare(page("<div><p>x</p>"))  # the div swallows </article>: its end is the footer's
    with pytest.raises(ValueError, match="unclosed"):
        prepare(f"<html><body>{OPEN}<div>")
