"""KaTeX's woff2 fonts cut down to the characters the built site shows (fontTools' subsetter).

The fonts hold every glyph KaTeX can draw; the site draws a few hundred of them. After the build,
each font in ``assets/katex/fonts/`` keeps only the glyphs of characters that occur in the text
of some built page (and what its layout tables reach from them), so the fonts a page preloads for
its first screen arrive sooner on a slow phone network. The character set is the text of every
built HTML page, not only its formulas: a character a font has but no formula uses costs a glyph,
a character missed would cost a fallback glyph, so the set errs on the safe side.
``tests/site/test_katex_fonts.py`` checks that every character a page shows keeps its glyph.
"""

from __future__ import annotations

import hashlib
import html
import io
import os
import re
from pathlib import Path

from fontTools import subset
from fontTools.ttLib import TTFont

FONTS = Path("assets") / "katex" / "fonts"
TAG = re.compile(r"<[^>]*>")
# a cut font per (font, characters): a build of unchanged pages cuts nothing (.cache/ is git-ignored)
CACHE_DIR = Path(__file__).resolve().parents[2] / ".cache" / "katex-fonts"


def site_characters(site_dir: Path) -> set[str]:
    """Every character in the text (tags stripped, entities decoded) of the built HTML pages."""
    chars: set[str] = set()
    for page in site_dir.rglob("*.html"):
        chars.update(html.unescape(TAG.sub(" ", page.read_text(encoding="utf-8"))))
    return chars


def subset_font(data: bytes, chars: set[str]) -> bytes:
    """``data`` (a woff2 font) keeping only the glyphs for ``chars``, as woff2."""
    options = subset.Options()
    options.flavor = "woff2"
    options.layout_features = ["*"]  # KaTeX relies on no feature, but keep what the font has
    options.name_IDs = ["*"]
    options.notdef_outline = True
    font = TTFont(io.BytesIO(data))
    subsetter = subset.Subsetter(options)
    subsetter.populate(text="".join(sorted(chars)))
    subsetter.subset(font)
    out = io.BytesIO()
    font.flavor = "woff2"
    font.save(out)
    return out.getvalue()


def on_post_build(config, **kwargs) -> None:
    site_dir = Path(config["site_dir"])
    fonts = sorted((site_dir / FONTS).glob("*.woff2"))
    if not fonts:
        return
    chars = site_characters(site_dir)
    text = "".join(sorted(chars)).encode("utf-8")
    for path in fonts:
        data = path.read_bytes()
        cached = CACHE_DIR / f"{hashlib.sha256(data + text).hexdigest()[:24]}.woff2"
        if not cached.is_file():
            CACHE_DIR.mkdir(parents=True, exist_ok=True)
            tmp = cached.with_suffix(f".{os.getpid()}.tmp")  # written whole, then renamed: builds may run at once
            tmp.write_bytes(subset_font(data, chars))
            tmp.replace(cached)
        path.write_bytes(cached.read_bytes())
