"""``python -m sitebuild.editions.pdf`` (``make pdf``): the PDF edition, ``dist/transformer-paper-reading.pdf``.

Built from the same pages as the site, never from a second source: a strict build of the site
(math already typeset by sitebuild/hooks/mathrender.py), then one print page that concatenates the
built articles in the order of :func:`sitebuild.config.nav_pages` (chapters, question bank,
cheat sheet, verification appendix, errata, glossary; the question bank and the appendix a page
per chapter), printed by the Debian Chromium the tests use, through playwright's
``page.pdf``: A4, page numbers in the footer, the headings as PDF bookmarks (outline, which
Chromium builds from a tagged PDF). Tags cost: one structure element per element printed, so
the print page drops KaTeX's MathML copy and Pygments' token spans (25 MB → under 10 MB). Why our own print page and not mkdocs-print-site-plugin: one more pinned dependency and a
second build configuration, against ~150 lines that reuse the built HTML as is.

On the print page:
* ids and in-page links are prefixed by their page (``chapters-01-why-attention--q-1-3``), so
  links between pages become links inside the PDF; asset URLs become file:// URLs;
* every ``<details>`` but a claim's test source is open (answers are printed), the light palette is forced and the print
  rules of docs/assets/extra.css apply (code wraps, no navigation);
* each claim badge gets a footnote-like reference ``[V12]`` to its entry in the verification
  appendix, where the same label heads the entry. Notebook pages are left out: their code and
  outputs are the downloadable .ipynb files;
* links to the site and the BibTeX ``url`` carry the published address
  (:func:`sitebuild.editions.edition_url`), whatever address the build was made for;
* a named destination (an id a link points to) stays within PDF's 127-byte name limit: a long
  one (Chinese heading slugs, percent-encoded) is cut to its page and a hash (:func:`dest`);
* KaTeX's zero-width spaces (``vlist-s``, a Safari workaround) are dropped, so text copied
  around a formula has no invisible characters in it;
* a BibTeX block (with its heading 「引用本章」), a heading and the block after it are not split across pages;
* figures, drawn at phone width (~300 pt), print larger (:func:`figure_size`), within the page.
"""

from __future__ import annotations

import argparse
import hashlib
import html
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote, unquote, urljoin, urlsplit

from sitebuild.config import ROOT, nav_pages
from sitebuild.editions import edition_url

OUT = ROOT / "dist" / "transformer-paper-reading.pdf"
LOCAL_FONTS = ROOT / ".cache" / "fonts"  # ignored by git
ARTICLE = re.compile(r'<article class="md-content__inner md-typeset">(.*?)</article>', re.S)
STYLESHEET = re.compile(r'<link rel="stylesheet" href="([^"]+)"')
ATTR = re.compile(r'\b(id|for|href|src)="([^"]*)"')
MATHML = re.compile(r'<span class="katex-mathml"><math.*?</math></span>', re.S)
# Pygments' token spans, unwrapped: code prints in one colour, and the tagged PDF is not one
# structure element per token
CODE = re.compile(r"(<code[^>]*>)(.*?)(</code>)", re.S)
TOKEN = re.compile(r"</?span[^>]*>")
# a badge in the print page: its href is the claim's entry on its chapter's verification page
CLAIM = re.compile(r'(<a class="claim" href="#(verification-ch\d\d--[\w-]+)"[^>]*>.*?</a>)', re.S)
ENTRY = re.compile(r'<h[1-6] id="(verification-ch\d\d--ch\d\d-[\w-]+)">')
BOOK_TITLE = "Transformer 论文精读 · 可验证版"
# PDF 1.7, Annex C: a name object is at most 127 bytes; Chromium writes an id percent-encoded
NAME_LIMIT = 127
CITE = re.compile(r'<h2 id="[\w-]*--cite">.*?</pre>', re.S)
FIGURE = re.compile(r'<img ([^>]*)src="(file://[^"]*/generated/[^"#]+\.svg)(#[^"]*)?"([^>]*)>')
SVG_SIZE = re.compile(r'<svg\b[^>]*?\bwidth="([\d.]+)pt"[^>]*?\bheight="([\d.]+)pt"')
# the print area in pt (A4 less the margins below); a figure prints at most this wide and tall
TEXT_WIDTH_PT = (210 - 26) / 25.4 * 72
FIGURE_MAX_HEIGHT_PT = 170 / 25.4 * 72
FIGURE_SCALE = 1.5
# a page filled less than this (content height / print height) must end a page of the site
MIN_FILL = 0.25

FOOTER = ('<div style="font-size:8px;width:100%;text-align:center;color:#555;">'
          '<span class="pageNumber"></span> / <span class="totalPages"></span></div>')
PRINT_CSS = """
@page { size: A4; margin: 14mm 13mm 16mm 13mm; }
html, body { background: #fff !important; }
body { font-size: 10.5pt; }
.md-typeset { font-size: 10.5pt; }
.book-break { break-before: page; }
.book-cover { text-align: center; padding-top: 35vh; }
.book-toc li { margin: 0.15em 0; }
.md-typeset details { break-inside: auto; }
.md-typeset pre.bibtex, .md-typeset .book-cite { break-inside: avoid; }
.md-typeset h1, .md-typeset h2, .md-typeset h3, .md-typeset h4 { break-after: avoid; }
.md-typeset figure { break-inside: avoid; }
.md-typeset img.book-figure { max-width: 100% !important; }
.md-typeset details > summary::after { display: none; }
.md-typeset .claim-ref { font-size: 0.7em; vertical-align: super; margin-left: 0.1em; }
.md-typeset .claim-ref-target { font-weight: 700; margin-right: 0.4em; }
.md-typeset pre > code, .md-typeset pre.bibtex { white-space: pre-wrap !important; overflow-wrap: anywhere; }
.md-typeset .md-typeset__scrollwrap, .md-typeset .md-typeset__table { overflow: visible !important; }
.md-typeset .katex .vlist-s { width: 0 !important; min-width: 0 !important; }  /* a 2px gap after every sub/superscript: copied text would have a space there */
.md-typeset .katex-display { overflow: visible !important; background: none !important; }  /* no scroll shadow on paper */
.md-typeset .tabbed-set > input:not(:checked) + label { display: none; }
.md-typeset table.table-prewrapped { display: table !important; width: 100% !important; max-width: 100%; font-size: 0.75em; }
.md-typeset table.table-prewrapped th, .md-typeset table.table-prewrapped td { overflow-wrap: anywhere; padding: 0.35em 0.5em !important; }
"""


class FontError(RuntimeError):
    pass


def cjk_font(cache_dir: Path) -> Path:
    """A CJK font with TrueType outlines, as a single .ttf (Chromium embeds it as a named subset).

    Chromium's PDF backend embeds only TrueType-outline fonts; CFF fonts such as Noto Sans CJK
    become hundreds of unnamed Type 3 fonts (a 25 MB book whose CJK font pdffonts cannot name).
    ``$BOOK_CJK_FONT`` names one; else fontconfig's first Chinese TrueType font (Debian:
    ``apt-get install fonts-wqy-microhei``), else one in ``.cache/fonts/``. A collection (.ttc)
    is cut to its first face.
    """
    named = os.environ.get("BOOK_CJK_FONT")
    if named:
        path = Path(named)
    else:
        found = ""
        if shutil.which("fc-list"):
            found = subprocess.run(["fc-list", ":lang=zh:fontformat=TrueType", "file"], capture_output=True,
                                   text=True).stdout
        files = sorted(ln.split(":")[0].strip() for ln in found.splitlines() if ln.strip())
        files += sorted(str(p) for p in LOCAL_FONTS.glob("*.tt[fc]"))  # without root: see README
        if not files:
            raise FontError("no Chinese font with TrueType outlines: install one (Debian: apt-get install "
                            f"fonts-wqy-microhei), put its .ttc into {LOCAL_FONTS}, or set BOOK_CJK_FONT")
        path = Path(files[0])
    if not path.is_file():
        raise FontError(f"BOOK_CJK_FONT={path}: no such file")
    if path.suffix.lower() == ".ttc":
        from fontTools.ttLib import TTCollection

        single = cache_dir / (path.stem + ".ttf")
        TTCollection(str(path)).fonts[0].save(str(single))
        return single
    return path


def subset_font(font: Path, text: str, out: Path) -> None:
    """``font`` cut to the characters ``text`` uses, without hinting: Chromium embeds a large
    font whole (4.6 MB for WenQuanYi Micro Hei), a subset of it small."""
    import logging

    from fontTools import subset

    logging.getLogger("fontTools.subset").setLevel(logging.ERROR)  # "FFTM NOT subset": a FontForge timestamp
    options = subset.Options()
    options.hinting = False
    options.desubroutinize = True
    ttfont = subset.load_font(str(font), options)
    subsetter = subset.Subsetter(options)
    subsetter.populate(text=text)
    subsetter.subset(ttfont)
    subset.save_font(ttfont, str(out), options)


def book_pages() -> list[tuple[str, str, str]]:
    """(title, source, site URL) of the pages the book prints, in nav order (no notebooks, no home)."""
    return [(t, s, u) for t, s, u in nav_pages() if s.endswith(".md") and s not in ("index.md", "guide.md")]


def part(src: str) -> str:
    """The part of the book a page belongs to: its chapter, or its section of the nav
    (question bank, verification appendix, cheat sheet, errata, glossary). A part starts on a new
    sheet; the pages of a part follow one another."""
    bits = src.split("/")
    return "/".join(bits[:2]) if bits[0] == "chapters" else bits[0].removesuffix(".md")


def part_starts() -> list[str]:
    """The page ids (see :func:`page_id`) of the pages that start a part, in book order."""
    out, last = [], None
    for _title, src, url in book_pages():
        if part(src) != last:
            out.append(page_id(url))
        last = part(src)
    return out


def page_id(url: str) -> str:
    return re.sub(r"[^\w-]+", "-", url.strip("/")) or "home"


def name_bytes(name: str) -> int:
    """The length of a destination name as Chromium writes it (UTF-8, percent-encoded)."""
    return len(quote(name, safe="-_.~"))


def dest(pid: str, frag: str) -> str:
    """The print page's id for ``frag`` on page ``pid``; a hash where the name would pass PDF's limit."""
    name = f"{pid}--{frag}"
    if name_bytes(name) <= NAME_LIMIT:
        return name
    return f"{pid}--h{hashlib.sha1(frag.encode('utf-8')).hexdigest()[:12]}"


def figure_size(svg: Path) -> tuple[float, float] | None:
    """The printed (width, height) in pt of a generated SVG: its own size times FIGURE_SCALE, within the page."""
    m = SVG_SIZE.search(svg.read_text(encoding="utf-8")[:2000])
    if m is None:
        return None
    w, h = float(m.group(1)), float(m.group(2))
    scale = min(FIGURE_SCALE, TEXT_WIDTH_PT / w, FIGURE_MAX_HEIGHT_PT / h)
    return round(w * scale, 1), round(h * scale, 1)


def _figure(m: re.Match) -> str:
    if m.group(3) == "#only-dark":  # the dark palette's twin: paper is light
        return ""
    size = figure_size(Path(unquote(urlsplit(m.group(2)).path)))
    if size is None:
        return m.group(0)
    rest = re.sub(r'\s(?:width|height)="[^"]*"', "", m.group(1) + m.group(4))
    return (f'<img {rest.strip()} class="book-figure" style="width:{size[0]}pt;height:{size[1]}pt" '
            f'src="{m.group(2)}{m.group(3) or ""}">').replace("  ", " ")


def _rewrite(fragment: str, url: str, site_dir: Path, ids: dict[str, str], site_url: str) -> str:
    """Prefix ids; a link to a printed page becomes an in-book link, any other link a link to the
    published site; an image or stylesheet becomes a file:// URL into the build."""
    pid = page_id(url)
    base = "http://book/" + url

    def one(m: re.Match) -> str:
        attr, value = m.group(1), html.unescape(m.group(2))
        if attr in ("id", "for"):
            return f'{attr}="{html.escape(dest(pid, value))}"'
        if value.startswith(("mailto:", "data:", "javascript:")) or ("://" in value and not value.startswith("http://book/")):
            return m.group(0)
        parts = urlsplit(urljoin(base, value))
        path = unquote(parts.path.lstrip("/"))
        frag = unquote(parts.fragment)
        if attr == "href":
            target = ids.get(path)
            if target is not None:
                return f'href="#{html.escape(dest(target, frag))}"' if frag else f'href="#{target}"'
            return f'href="{html.escape(site_url + parts.path.lstrip("/") + (f"#{parts.fragment}" if frag else ""))}"'
        local = site_dir / path
        if local.is_dir():
            local = local / "index.html"
        # the fragment stays: Material shows img[src$="#only-light"] and hides "#only-dark" in print
        return f'{attr}="{local.resolve().as_uri()}{"#" + parts.fragment if frag else ""}"'

    return ATTR.sub(one, fragment)


def compose(site_dir: Path, font: Path | None = None, site_url: str | None = None) -> str:
    """The print page's HTML: every book page's article, rewritten to live in one document.
    Links to the site go to ``site_url`` (default :func:`edition_url`), whatever the build's own address."""
    pages = book_pages()
    ids = {url: page_id(url) for _, _, url in pages}
    ids.update({url + "index.html": page_id(url) for _, _, url in pages})
    root_html = (site_dir / "index.html").read_text(encoding="utf-8")
    canonical = re.search(r'<link rel="canonical" href="([^"]+)"', root_html)
    built_url = canonical.group(1) if canonical else None
    site_url = edition_url(site_url)
    sheets = [(site_dir / href).resolve().as_uri() for href in STYLESHEET.findall(root_html)]
    articles, toc = [], []
    starts = set(part_starts())
    for title, src, url in pages:
        built = (site_dir / url / "index.html").read_text(encoding="utf-8")
        m = ARTICLE.search(built)
        if m is None:
            raise ValueError(f"{url}: no <article> in the built page")
        body = m.group(1)
        if built_url and built_url != site_url:  # the BibTeX url, and any link the build wrote absolute
            body = body.replace(built_url, site_url)
        body = _rewrite(body, url, site_dir, ids, site_url)
        body = FIGURE.sub(_figure, body)
        # 「引用本章」: its heading, the sentence and the BibTeX entry on one sheet
        body = CITE.sub(lambda c: f'<div class="book-cite">{c.group(0)}</div>', body)
        body = body.replace("\u200b", "")  # KaTeX's vlist-s: a zero-width space a reader would copy
        body = body.replace(' loading="lazy"', "")  # a lazy image below the fold would print blank
        # answers print open; a claim's test source stays folded (its name and file are printed,
        # the source is on the site and in the repository)
        body = re.sub(r"<details(?![^>]*\b(?:open|claim-source)\b)", "<details open", body)
        body = MATHML.sub("", body)  # the screen-reader copy of each formula: not printed
        body = CODE.sub(lambda c: c.group(1) + TOKEN.sub("", c.group(2)) + c.group(3), body)
        cls = "book-page book-break" if page_id(url) in starts else "book-page"
        articles.append(f'<section class="{cls}" id="{page_id(url)}">{body}</section>')
        toc.append(f'<li><a href="#{page_id(url)}">{html.escape(title)}</a></li>')
    text = "\n".join(articles)
    # claim badges -> [Vn], numbered in the order of the appendix (the verification pages, a chapter each)
    order = list(dict.fromkeys(ENTRY.findall(text)))
    cited = {m.group(2) for m in CLAIM.finditer(text)}
    label = {target: f"V{n}" for n, target in enumerate([t for t in order if t in cited], start=1)}
    text = CLAIM.sub(lambda m: m.group(1) + (f'<a class="claim-ref" href="#{m.group(2)}">[{label[m.group(2)]}]</a>'
                                             if m.group(2) in label else ""), text)
    text = ENTRY.sub(lambda m: m.group(0) + (f'<span class="claim-ref-target">[{label[m.group(1)]}]</span>'
                                             if m.group(1) in label else ""), text)
    text = text.replace("⭐", "★")  # a text glyph (DejaVu), not a colour-emoji bitmap
    links = "\n".join(f'<link rel="stylesheet" href="{s}">' for s in sheets)
    fonts = ""
    if font is not None:
        # One face for every weight and style: Chromium draws synthetic bold/italic as Type 3
        # glyphs, so bold CJK prints in the regular weight (and in the accent colour, below).
        fonts = (f'@font-face {{ font-family: "BookCJK"; src: url("{font.resolve().as_uri()}"); '
                 'font-weight: 100 900; font-style: normal oblique; }\n'
                 ':root, [data-md-color-scheme] { --md-text-font-family: "Liberation Sans", "BookCJK", "DejaVu Sans", sans-serif;'
                 ' --md-code-font-family: "DejaVu Sans Mono", "BookCJK", monospace; }\n'
                 'body, .md-typeset { font-family: var(--md-text-font-family) !important; }\n'
                 '.md-typeset code, .md-typeset pre, .md-typeset kbd { font-family: var(--md-code-font-family) !important; }\n'
                 '.katex { font-family: KaTeX_Main, "BookCJK", serif; }\n'
                 '* { font-synthesis: none; }\n'
                 '.md-typeset strong, .md-typeset b { color: #1a237e; }\n')
    cover = (f'<section class="book-cover"><h1>{BOOK_TITLE}</h1><p>PDF 版：正文各章、速查表、面试题库，'
             '附录为验证清单。文中的 [V12] 指向附录里证明该论断的测试。</p></section>'
             f'<section class="book-page book-break book-toc"><h2>目录</h2><ol>{"".join(toc)}</ol></section>')
    return (f'<!doctype html><html lang="zh"><head><meta charset="utf-8"><title>{BOOK_TITLE}</title>{links}'
            f'<style>{fonts}{PRINT_CSS}</style></head><body data-md-color-scheme="default" '
            f'data-md-color-primary="indigo" data-md-color-accent="deep-orange"><div class="md-typeset">'
            f"{cover}{text}</div></body></html>")


def build_pdf(site_dir: Path, out: Path = OUT, browser=None, site_url: str | None = None) -> dict:
    """Print the built site at ``site_dir`` into ``out``; returns pages, bytes and seconds."""
    from playwright.sync_api import sync_playwright

    from sitebuild.browser import CHROMIUM, CHROMIUM_ARGS

    start = time.monotonic()
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="book-") as tmp:
        page_file, font = Path(tmp) / "print.html", Path(tmp) / "book-cjk.ttf"
        source = compose(site_dir, font, site_url)
        subset_font(cjk_font(Path(tmp)), source, font)
        page_file.write_text(source, encoding="utf-8")

        def render(b):
            context = b.new_context(color_scheme="light")
            page = context.new_page()
            page.emulate_media(media="print", color_scheme="light")
            page.goto(page_file.as_uri(), wait_until="load", timeout=180_000)
            page.evaluate("document.fonts.ready.then(() => true)")
            page.pdf(path=str(out), format="A4", print_background=True, display_header_footer=True,
                     header_template="<span></span>", footer_template=FOOTER, outline=True, tagged=True,
                     margin={"top": "14mm", "bottom": "16mm", "left": "13mm", "right": "13mm"})
            context.close()

        if browser is not None:
            render(browser)
        else:
            with sync_playwright() as p:
                b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
                try:
                    render(b)
                finally:
                    b.close()
    return {"pages": page_count(out), "bytes": out.stat().st_size, "seconds": round(time.monotonic() - start, 1)}


def page_count(pdf: Path) -> int:
    """Pages, from poppler's pdfinfo when installed, else by counting page objects."""
    if shutil.which("pdfinfo"):
        info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True, check=True).stdout
        return int(re.search(r"^Pages:\s+(\d+)", info, re.M).group(1))
    return len(re.findall(rb"/Type\s*/Page(?![s\w])", pdf.read_bytes()))


def destinations(pdf: Path) -> list[tuple[int, str]]:
    """(page, name) of every named destination, from poppler's ``pdfinfo -dests``."""
    out = subprocess.run(["pdfinfo", "-dests", str(pdf)], capture_output=True, text=True, check=True).stdout
    return [(int(m.group(1)), m.group(2)) for m in re.finditer(r'^\s*(\d+)\s+\[.*?\]\s+"(.*)"$', out, re.M)]


def page_fills(pdf: Path) -> list[float]:
    """For each page, how far down its print area the content reaches (0: blank, 1: full), from a
    small greyscale rendering (poppler's pdftoppm); the footer (page number) is not counted."""
    fills = []
    with tempfile.TemporaryDirectory(prefix="fill-") as tmp:
        subprocess.run(["pdftoppm", "-r", "12", "-gray", str(pdf), f"{tmp}/p"], check=True, capture_output=True)
        for f in sorted(Path(tmp).glob("p-*.pgm"), key=lambda f: int(f.stem.split("-")[1])):
            _magic, size, _max, pixels = f.read_bytes().split(b"\n", 3)
            w, h = map(int, size.split())
            top, foot = round(h * 14 / 297), round(h * (1 - 16 / 297))
            inked = [y for y in range(top, foot) if min(pixels[y * w:(y + 1) * w]) < 200]
            fills.append((max(inked) + 1 - top) / (foot - top) if inked else 0.0)
    return fills


def short_pages(pdf: Path, min_fill: float = MIN_FILL) -> list[tuple[int, float]]:
    """(page, fill) of every page filled less than ``min_fill`` that does not end a chapter or a
    part of the book (the next page starts one, :func:`part_starts`, or a chapter of the cheat
    sheet, which prints one chapter per page) and is not the cover or the last page."""
    fills = page_fills(pdf)
    names = set(part_starts())
    starts = {page for page, name in destinations(pdf)
              if name in names or re.fullmatch(r"cheatsheet--cheatsheet-ch\d\d", name)}
    return [(n, round(f, 2)) for n, f in enumerate(fills, start=1)
            if f < min_fill and n + 1 not in starts and 1 < n < len(fills)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m sitebuild.editions.pdf", description=__doc__.splitlines()[0])
    ap.add_argument("--site", type=Path, help="an existing build of the site (default: build one now)")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    tmp = None
    site_dir = args.site
    if site_dir is None:
        tmp = Path(tempfile.mkdtemp(prefix="pdf-site-"))
        site_dir = tmp / "site"
        proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(site_dir)],
                              cwd=ROOT, env={**os.environ, "NO_MKDOCS_2_WARNING": "1", "SITE_URL": edition_url()})
        if proc.returncode:
            return proc.returncode
    try:
        info = build_pdf(site_dir, args.out)
    except FontError as exc:
        print(f"pdf: {exc}", file=sys.stderr)
        return 1
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"PDF edition: {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out} "
          f"({info['pages']} pages, {info['bytes'] / 1e6:.1f} MB, printed in {info['seconds']} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
