"""KaTeX's fonts in the built site are cut down (sitebuild/hooks/katexfonts.py), and every character
a formula on some page draws keeps its glyph in every font that had one.

The characters are read here independently of the hook: the text inside KaTeX's visible output
(``<span class="katex-html">``) of every built page, parsed with the standard library
(tests/support/builtpage.py).
"""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

from fontTools.ttLib import TTFont

from tests.support.build import ROOT
from tests.support.builtpage import replay

ORIGINALS = ROOT / "docs" / "assets" / "katex" / "fonts"  # make setup copies them from node_modules


class _KatexText(HTMLParser):
    """The characters of text nodes under an element with class ``katex-html``."""

    VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[bool] = []  # per open element: inside katex-html?
        self.chars: set[str] = set()

    def handle_starttag(self, tag, attrs) -> None:
        if tag in self.VOID:
            return
        inside = bool(self.stack and self.stack[-1])
        classes = (dict(attrs).get("class") or "").split()
        self.stack.append(inside or "katex-html" in classes)

    def handle_endtag(self, tag) -> None:
        if tag not in self.VOID and self.stack:
            self.stack.pop()

    def handle_data(self, data) -> None:
        if self.stack and self.stack[-1]:
            self.chars.update(data)


def formula_characters(pages: list[Path]) -> set[str]:
    chars: set[str] = set()
    for page in pages:
        chars |= replay(_KatexText(), page).chars
    return chars


def _cmap(path: Path) -> set[str]:
    return {chr(code) for code in TTFont(path).getBestCmap()}


def test_every_character_a_formula_draws_keeps_its_glyph(built_site, built_pages):
    drawn = formula_characters(built_pages)
    assert len(drawn) > 100, "the site's formulas should draw a few hundred characters"
    fonts = sorted((built_site / "assets" / "katex" / "fonts").glob("*.woff2"))
    assert len(fonts) == len(list(ORIGINALS.glob("*.woff2"))) > 10, fonts
    lost, smaller = {}, 0
    for font in fonts:
        needed = drawn & _cmap(ORIGINALS / font.name)
        missing = needed - _cmap(font)
        if missing:
            lost[font.name] = "".join(sorted(missing))
        smaller += font.stat().st_size < (ORIGINALS / font.name).stat().st_size
    assert not lost, f"characters the site's formulas draw, without their glyph: {lost}"
    assert smaller >= len(fonts) // 2, "the fonts were not cut down (sitebuild/hooks/katexfonts.py)"
