"""The pages axe visits cover every element kind (tests/support/elementkinds.py)."""

from __future__ import annotations

from tests.support.elementkinds import covering_pages, element_kinds

PAGE = '<html><head><title>t</title></head><body><article class="md-content__inner md-typeset">{}</article><footer class="x"></footer></body></html>'


def _site(tmp_path, pages: dict[str, str]):
    for url, body in pages.items():
        (tmp_path / url).mkdir(parents=True)
        (tmp_path / url / "index.html").write_text(PAGE.format(body), encoding="utf-8")
    return tmp_path


def test_kinds_are_tags_classes_and_attribute_names_of_the_body():
    html = PAGE.format('<div class="admonition note"><p>x</p></div><a href="#a" tabindex="0">a</a>'
                       # KaTeX's order: the MathML copy, then the drawn spans (aria-hidden)
                       '<span class="katex"><span class="katex-mathml"><math><semantics><mi>a</mi>'
                       '<annotation>a</annotation></semantics></math></span><span class="katex-html" '
                       'aria-hidden="true"><span class="mord">a</span></span></span><span class="hll l12">y</span>')
    kinds = element_kinds(html)
    assert {"div", "div.admonition", "div.note", "p", "span.katex", "span.hll", "footer.x"} <= kinds
    assert {"a[href]", "a[tabindex]"} <= kinds  # attribute names, not their values
    assert "title" not in kinds  # the head is not shown
    assert "span.mord" not in kinds and "mi" not in kinds  # KaTeX's inside is one kind
    assert "span.l12" not in kinds  # numbered classes are not kinds


def test_the_cover_takes_a_page_for_every_new_kind_and_no_page_twice(tmp_path):
    site = _site(tmp_path, {"a/": "<p>x</p><table><tr><td>1</td></tr></table>", "b/": "<p>y</p>",
                            "c/": '<details class="question"><summary>q</summary></details>',
                            "d/": '<p role="note">z</p>'})
    assert covering_pages(site, ["a/", "b/", "c/"]) == ["a/", "c/"]
    assert covering_pages(site, ["b/"]) == ["b/"]
    assert covering_pages(site, ["a/", "b/", "c/", "d/"]) == ["a/", "c/", "d/"]  # p[role] is new
