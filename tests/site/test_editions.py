"""The editions built from docs/: the Anki deck, CITATION.cff and the PDF book.

The PDF is printed once per session from the session's strict build (``built_site``) by the
same Chromium the browser tests use; its checks read it with poppler's pdftotext/pdffonts/
pdftoppm, as a reader's PDF viewer would.
"""

from __future__ import annotations

import html
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from sitebuild.editions import deck, pdf
from sitebuild.questions import load_all
from tests.support.shared import once

ROOT = Path(__file__).resolve().parents[2]
QUESTIONS = load_all()
TEX = re.compile(r"\$\$|\\frac|\\\(|\\\)|\\\[|\\mathrm|\\sqrt")


# --- deck ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def decks(tmp_path_factory):
    """Two independent builds of the deck."""
    tmp = tmp_path_factory.mktemp("deck")
    out = []
    for name in ("a.tsv", "b.tsv"):
        deck.write_tsv(tmp / name, base="https://example.org/book/")
        out.append(tmp / name)
    return out


def test_deck_has_one_row_per_question_with_unique_stable_ids(decks):
    a, b = (deck.read_tsv(p) for p in decks)
    assert len(a) == len(QUESTIONS) >= 71  # test_questions.py checks QUESTIONS against the files
    ids = [r["id"] for r in a]
    assert len(set(ids)) == len(ids)
    assert ids == [q.uid for q in QUESTIONS] and ids[0] == "01-why-attention/1.1"
    assert decks[0].read_bytes() == decks[1].read_bytes()  # byte-identical: ids stable across builds
    header = decks[0].read_text(encoding="utf-8").splitlines()[:8]
    assert "#guid column:1" in header and "#separator:tab" in header and "#html:true" in header
    assert all(len(r) == len(deck.COLUMNS) and all(r.values()) for r in a if r["claims"])


def test_deck_fields(decks):
    rows = deck.read_tsv(decks[0])
    by_id = {r["id"]: r for r in rows}
    r = by_id["03-scaled-dot-product/3.1"]
    assert r["difficulty"] == "⭐" and r["chapter"].startswith("第 03 章")
    assert r["link"] == '<a href="https://example.org/book/interview/ch03/#q-3-1">3.1</a>'
    assert '<a href="https://example.org/book/verification/ch03/#ch03-var-dk">ch03-var-dk</a>' in r["claims"]
    assert 'href="https://example.org/book/verification/ch03/#ch03-' in r["answer"]  # a badge in the answer
    assert 'href="https://example.org/book/chapters/03-scaled-dot-product/derivation/#why-sqrt"' in r["answer"]
    assert "level-1" in r["tags"] and "ch03" in r["tags"]
    assert sum(1 for r in rows if r["claims"]) >= 60


def test_deck_math_is_readable_by_anki(decks):
    """Every formula is in MathJax delimiters (Anki typesets \\(…\\) itself), none as raw $…$;
    the deck build typesets each with the site's KaTeX first, so a broken one fails `make deck`."""
    rows = deck.read_tsv(decks[0])
    n = 0
    for r in rows:
        for field in ("question", "answer"):
            text = re.sub(r"<pre\b.*?</pre>|<code>.*?</code>", "", r[field], flags=re.S)
            assert "$" not in text, (r["id"], field)
            n += len(deck.formulas(r[field]))
    assert n > 300


def test_deck_fails_on_a_formula_katex_rejects(monkeypatch):
    from sitebuild.hooks.mathrender import KatexError

    broken = QUESTIONS[0].__class__(**{**QUESTIONS[0].__dict__, "answer": r"**一句话**：$\frac{1}{$"})
    monkeypatch.setattr(deck, "load_all", lambda: [broken])
    with pytest.raises(KatexError):
        deck.rows(base="https://example.org/")


# --- CITATION.cff -------------------------------------------------------------------------


def test_citation_cff_is_valid_cff_1_2():
    data = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    assert data["cff-version"] == "1.2.0"
    for key in ("message", "title", "authors"):
        assert data[key], key
    assert all(("name" in a) or ("family-names" in a) for a in data["authors"])
    assert data["repository-code"].startswith("https://github.com/")
    paper = data["references"][0]
    assert paper["title"] == "Attention Is All You Need" and paper["year"] == 2017
    assert len(paper["authors"]) == 8


# --- the PDF book -------------------------------------------------------------------------


def pdf_test(fn):
    """A check of the PDF: needs Chromium (the book is printed once per run, see ``book``)."""
    return pytest.mark.browser(fn)


def _poppler(*cmd: str) -> str:
    if shutil.which(cmd[0]) is None:
        pytest.fail(f"{cmd[0]} missing: apt-get install poppler-utils (.ci/run does)")
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout


@pytest.fixture(scope="session")
def book(built_site, shared, chromium_browser):
    """(path, info) of the PDF printed once per run from the run's build (xdist workers share it)."""
    out = shared / "book.pdf"

    def print_book() -> dict:
        start = time.monotonic()
        try:
            info = pdf.build_pdf(built_site, out, browser=chromium_browser)
        except pdf.FontError as exc:
            pytest.fail(str(exc))
        info["seconds"] = round(time.monotonic() - start, 1)
        print(f"\nPDF: {info}")
        return info

    return out, once(shared, "pdf-book", print_book)


@pytest.fixture(scope="session")
def book_text(book):
    # -raw: in drawing order, so a code line whose comment falls back to another font stays whole
    text = _poppler("pdftotext", "-raw", "-enc", "UTF-8", str(book[0]), "-")
    return re.sub(r"^\f?\d+ / \d+$", "", text, flags=re.M)  # the page footers


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _code_lines(site_dir: Path) -> list[str]:
    """Every line (whitespace removed) of every code block on the pages the book prints."""
    lines = []
    for _title, _src, url in pdf.book_pages():
        page = (site_dir / url / "index.html").read_text(encoding="utf-8")
        page = re.sub(r'<details class="claim-source".*?</details>', "", page, flags=re.S)  # printed folded
        for block in re.findall(r"<pre[^>]*>(?:<span></span>)?<code[^>]*>(.*?)</code></pre>", page, re.S):
            code = html.unescape(re.sub(r"<[^>]+>", "", block))
            lines += [_squash(ln) for ln in code.splitlines() if _squash(ln)]
    return lines


def _plain(md_title: str) -> list[str]:
    """The parts of a Markdown title that print as text (formulas are glyphs, not their TeX)."""
    parts = re.split(r"\$[^$]*\$", md_title.replace("`", ""))
    parts = (_squash(x).strip("？，。；：、（）「」") for x in parts)  # punctuation may be glued to a formula
    return [p for p in parts if len(p) >= 2]


@pdf_test
def test_pdf_has_every_chapter_and_every_question_title(book_text):
    text = _squash(book_text)
    from sitebuild.config import chapters

    for _key, (title, _src) in chapters().items():
        assert _squash(title) in text, title
    missing = [q.number for q in QUESTIONS if not all(p in text for p in _plain(f"{q.number}\u3000{q.title}"))]
    assert missing == []
    assert "[V1]" in book_text  # claim badges became references to the appendix


@pdf_test
def test_pdf_has_no_raw_tex(book_text, built_site):
    """No TeX in the printed prose (code may hold TeX, e.g. a test's expected string)."""
    code = "".join(_code_lines(built_site))
    hits = [ln for ln in book_text.splitlines() if TEX.search(ln) and _squash(ln) not in code]
    assert hits == [], hits[:10]


@pdf_test
def test_pdf_code_blocks_are_not_cut_at_the_page_edge(book, book_text, built_site):
    """Every line of every code block on the printed pages is in the PDF text (wrapped lines
    join up once whitespace is removed; text cut at the margin would be missing)."""
    text = _squash(book_text)
    lines = [ln for ln in _code_lines(built_site) if len(ln) >= 8]
    assert len(lines) > 200
    missing = [ln for ln in lines if ln not in text]
    assert missing == [], missing[:5]


@pdf_test
def test_pdf_embeds_a_named_cjk_font(book):
    fonts = _poppler("pdffonts", str(book[0]))
    cjk = [ln for ln in fonts.splitlines() if re.search(r"WenQuanYi|CJK|Hei|Song|Kai|Ming", ln)]
    assert cjk, fonts[:2000]
    assert all(re.search(r"\byes\s+yes\s+yes\b", ln) for ln in cjk)  # embedded, subset, ToUnicode


@pdf_test
def test_pdf_size_pages_outline_and_light_palette(book):
    path, info = book
    markdown_chars = sum(len(p.read_text(encoding="utf-8")) for p in (ROOT / "docs/chapters").glob("*/*.md"))
    assert info["pages"] >= markdown_chars / 3000, (info, markdown_chars)
    assert info["bytes"] <= 15e6, info
    assert b"/Outlines" in path.read_bytes()  # bookmarks
    # a chapter page rendered small: light paper, dark text (never the slate palette)
    pgm = subprocess.run(["pdftoppm", "-r", "20", "-gray", "-f", "3", "-l", "3", str(path)],
                         capture_output=True, check=True).stdout
    pixels = pgm.split(b"\n", 3)[3]
    assert sum(pixels) / len(pixels) > 200


@pdf_test
def test_pdf_figures_are_vectors(book_text, built_site):
    """Every figure on the printed pages is an SVG, and its labels are text in the PDF (a raster
    copy of a figure would have none)."""
    text = _squash(book_text)
    figures = set()
    for _title, _src, url in pdf.book_pages():
        page = (built_site / url / "index.html").read_text(encoding="utf-8")
        for src in re.findall(r'<img [^>]*src="([^"]+)"', page):
            if not src.startswith("data:") and not src.endswith("#only-dark"):  # the light palette prints
                figures.add((built_site / url / src.split("#")[0]).resolve())
    assert len(figures) >= 10 and all(f.suffix == ".svg" for f in figures), sorted(figures)
    unlabelled = []
    for fig in sorted(figures):
        labels = {_squash(html.unescape(s)) for s in re.findall(r"<text[^>]*>([^<]+)</text>", fig.read_text(encoding="utf-8"))}
        labels = {s for s in labels if len(s) >= 4 and re.search(r"[A-Za-z\u4e00-\u9fff]", s)}
        if labels and not any(s in text for s in labels):
            unlabelled.append(fig.name)
    assert unlabelled == []
