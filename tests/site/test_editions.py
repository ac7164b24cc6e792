"""The editions built from docs/: the Anki deck, CITATION.cff and the PDF book.

The PDF is printed once per session from the session's strict build (``built_site``) by the
same Chromium the browser tests use; its checks read it with poppler's pdftotext/pdffonts/
pdftoppm, as a reader's PDF viewer would.
"""

from __future__ import annotations

import html
import os
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
    """Two independent builds of the deck (.apkg), and the table beside it."""
    tmp = tmp_path_factory.mktemp("deck")
    data = deck.rows(base="https://example.org/book/")
    out = []
    for name in ("a.apkg", "b.apkg"):
        deck.write_apkg(tmp / name, data=deck.rows(base="https://example.org/book/", check_math=False)
                        if name == "b.apkg" else data)
        out.append(tmp / name)
    deck.write_tsv(tmp / "deck.tsv", data=data)
    return out + [tmp / "deck.tsv"]


def test_deck_is_an_anki_package_with_one_note_per_question_and_stable_guids(decks):
    a, b = (deck.read_apkg(p) for p in decks[:2])
    assert len(a) == len(QUESTIONS) >= 71  # test_questions.py checks QUESTIONS against the files
    assert a[0]["cards"] == len(a)  # one card per note
    guids = [n["guid"] for n in a]
    assert len(set(guids)) == len(guids)
    # a GUID is a function of the question's stable id only: a newer deck updates the same notes
    assert guids == [deck.guid(q.uid) for q in QUESTIONS] == [n["guid"] for n in b]
    assert {n["mid"] for n in a} == {deck.MODEL_ID}
    assert list(a[0]["fields"]) == list(deck.FIELDS)
    assert [n["fields"] for n in a] == [n["fields"] for n in b]


def test_deck_fields(decks):
    notes = deck.read_apkg(decks[0])
    by_guid = {n["guid"]: n["fields"] for n in notes}
    for q, n in zip(QUESTIONS, notes):
        f = n["fields"]
        assert all(f[k] for k in ("Question", "Core", "Answer", "Chapter", "Difficulty", "Link")), q.uid
        assert f["Question"].startswith(f"<strong>{q.number}</strong> ")
        assert f["Difficulty"] == "⭐" * q.stars and f["Chapter"].startswith(f"第 {q.chapter:02d} 章")
        assert f["Link"] == f'<a href="https://example.org/book/interview/ch{q.chapter:02d}/#{q.anchor}">{q.number}</a>'
        assert [c for c in q.claims if f">{c}</a>" not in f["Claims"]] == []
        assert f["Core"] not in f["Answer"], q.uid  # the core is its own field, not repeated in the answer
        assert f["Core"] and not f["Core"].startswith("<p>") and "\n" not in f["Core"]
        assert "$" not in re.sub(r"<pre\b.*?</pre>|<code>.*?</code>", "", "".join(f.values()), flags=re.S)
        assert "deck-meta" not in f["Answer"]
        assert set(n["tags"]) == {"transformer-paper-reading", f"ch{q.chapter:02d}", f"level-{q.stars}"}
    f = by_guid[deck.guid("03-scaled-dot-product/3.1")]
    assert '<a href="https://example.org/book/verification/ch03/#ch03-var-dk">ch03-var-dk</a>' in f["Claims"]
    assert 'href="https://example.org/book/verification/ch03/#ch03-' in f["Answer"]  # a badge in the answer
    assert 'href="https://example.org/book/chapters/03-scaled-dot-product/derivation/#why-sqrt"' in f["Answer"]
    assert sum(1 for n in notes if n["fields"]["Claims"]) >= 60
    # the one-line core is the **一句话** line of the site's answer, rendered
    core = QUESTIONS[0].core
    assert re.sub(r"<[^>]+>", "", notes[0]["fields"]["Core"])[:12] == re.sub(r"[*`]", "", core)[:12]


def test_deck_card_shows_the_core_first_then_the_answer_and_the_meta():
    m = deck.model()
    back = m.templates[0]["afmt"]
    order = [back.index("{{" + f + "}}") for f in ("FrontSide", "Core", "Answer", "Difficulty", "Chapter", "Link", "Claims")]
    assert order == sorted(order)
    assert "{{Question}}" in m.templates[0]["qfmt"]


def test_deck_math_is_in_delimiters_anki_renders(decks):
    """Every formula is in MathJax delimiters Anki typesets itself (\\(…\\), \\[…\\]), none as raw $…$;
    the deck build typesets each with the site's KaTeX first, so a broken one fails `make deck`."""
    n = inline = display = 0
    for note in deck.read_apkg(decks[0]):
        for name, field in note["fields"].items():
            for m in deck.MATH.finditer(field):
                body = html.unescape(m.group(2)).strip()
                assert (body[:2], body[-2:]) in ((r"\(", r"\)"), (r"\[", r"\]")), (name, body[:40])
                inline += body.startswith(r"\(")
                display += body.startswith(r"\[")
            n += len(deck.formulas(field))
    assert n > 300 and inline > 200 and display >= 3


def test_deck_table_has_the_same_notes(decks):
    rows = deck.read_tsv(decks[2])
    assert [r["id"] for r in rows] == [q.uid for q in QUESTIONS]
    assert all(len(r) == len(deck.COLUMNS) for r in rows)


def test_deck_fails_on_a_formula_katex_rejects(monkeypatch):
    from sitebuild.hooks.mathrender import KatexError

    broken = QUESTIONS[0].__class__(**{**QUESTIONS[0].__dict__, "core": r"$\frac{1}{$"})
    monkeypatch.setattr(deck, "load_all", lambda: [broken])
    with pytest.raises(KatexError):
        deck.rows(base="https://example.org/")


ANKI_VERSION = "26.9.3"  # the anki package (Anki's own Python library; the desktop app 26.09.3)
ANKI_VENV = ROOT / ".cache" / "anki-venv"  # ignored by git, kept between runs
ANKI_IMPORT = """
import json, sys, tempfile, os
from anki.collection import Collection, ImportAnkiPackageRequest
from anki.import_export_pb2 import ImportAnkiPackageOptions
out = {}
with tempfile.TemporaryDirectory() as tmp:
    col = Collection(os.path.join(tmp, "c.anki2"))
    for i, path in enumerate(sys.argv[1:]):
        col.import_anki_package(ImportAnkiPackageRequest(package_path=path,
            options=ImportAnkiPackageOptions(update_notes=0, update_notetypes=0, with_scheduling=False)))  # 0: if newer, Anki's default
        out[f"notes_{i}"] = col.note_count()
    note = col.get_note(col.find_notes('"Question:*3.1*"')[0])
    out["fields"] = dict(note.items())
    out["decks"] = sorted(d.name for d in col.decks.all_names_and_ids())
    out["cards"] = col.card_count()
    card = note.cards()[0]
    out["answer"] = card.answer()
    col.close()
print(json.dumps(out))
"""


def _anki_python() -> str:
    """A Python with the anki package: $ANKI_PYTHON, else .cache/anki-venv (made and filled with
    pip on first use); the test is skipped only when pip cannot install anki here (no network)."""
    import subprocess
    import sys

    if os.environ.get("ANKI_PYTHON"):
        return os.environ["ANKI_PYTHON"]
    python = ANKI_VENV / "bin" / "python"
    probe = [str(python), "-c", f"from anki.buildinfo import version; assert version == {ANKI_VERSION.replace('.9.', '.09.')!r}"]
    if python.exists() and subprocess.run(probe, capture_output=True).returncode == 0:
        return str(python)
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(ANKI_VENV)], check=True, capture_output=True, timeout=300)
    pip = subprocess.run([str(python), "-m", "pip", "install", "-q", f"anki=={ANKI_VERSION}"], capture_output=True,
                         text=True, timeout=900)
    if pip.returncode != 0:
        pytest.skip(f"pip could not install anki=={ANKI_VERSION} here: {pip.stderr.strip()[-300:]}")
    return str(python)


@pytest.mark.slow  # the real Anki library (pip install anki, ~100 MB) in its own virtual environment
def test_deck_imports_into_anki_and_a_newer_deck_updates_the_notes(tmp_path):
    """Imported with Anki's own importer (what 文件 → 导入 runs): every note arrives with its fields;
    importing a changed deck again updates the notes instead of adding copies."""
    import json
    import subprocess

    anki_python = _anki_python()
    old, new = tmp_path / "old.apkg", tmp_path / "new.apkg"
    data = deck.rows(base="https://example.org/book/", check_math=False)
    deck.write_apkg(old, data=data, timestamp=1_767_225_600)
    deck.write_apkg(new, data=[dict(r, core=r["core"] + "（新版）") for r in data], timestamp=1_767_225_600 + 3600)
    proc = subprocess.run([anki_python, "-c", ANKI_IMPORT, str(old), str(new)], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path, env={"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["notes_0"] == out["notes_1"] == out["cards"] == len(QUESTIONS)
    assert "Transformer 论文精读::面试题" in out["decks"]
    f = out["fields"]
    assert f["Question"].startswith("<strong>3.1</strong>") and f["Core"].endswith("（新版）")
    assert r"\(" in f["Answer"] and "ch03-var-dk" in f["Claims"]
    assert f["Core"] in out["answer"] and "interview/ch03/#q-3-1" in out["answer"]


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
    # the book names the published site where the build names the address it was made for (BibTeX url)
    built = re.search(r'<link rel="canonical" href="([^"]+)"', (site_dir / "index.html").read_text(encoding="utf-8"))
    for _title, _src, url in pdf.book_pages():
        page = (site_dir / url / "index.html").read_text(encoding="utf-8")
        page = page.replace(built.group(1), pdf.edition_url()) if built else page
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
    # 15 MB for seven chapters (fonts, figures as vectors), then 1.5 MB a chapter; the base grew by 1.5 MB on
    # 2026-12-07 for the pages that are no chapter's (怎样读本书的实验, 与 PyTorch、Hugging Face 逐项对照) and the
    # 45 exercises (24.3 MB in all for 13 chapters, measured by this test in a clean clone)
    chapters = sum(1 for part in pdf.part_starts() if part.startswith("chapters-"))
    assert info["bytes"] <= 6.0e6 + 1.5e6 * chapters, (info, chapters)
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


# --- the published address in every edition ------------------------------------------------

LOCAL = re.compile(r"127\.0\.0\.1|localhost")


def test_editions_default_to_the_published_address(monkeypatch):
    from sitebuild.editions import PUBLISHED_URL, EditionURLError, edition_url

    monkeypatch.delenv("SITE_URL", raising=False)
    default = re.search(r'^site_url: !ENV \[SITE_URL, "([^"]+)"\]', (ROOT / "mkdocs.yml").read_text(encoding="utf-8"), re.M)
    assert default and default.group(1) == PUBLISHED_URL == edition_url()
    assert deck.site_url() == PUBLISHED_URL
    monkeypatch.setenv("SITE_URL", "https://example.org/book")
    assert edition_url() == "https://example.org/book/"  # overridable
    for local in ("http://127.0.0.1:8000/", "http://localhost:8000/", "http://localhost/"):
        monkeypatch.setenv("SITE_URL", local)
        with pytest.raises(EditionURLError):
            edition_url()


def test_deck_links_carry_the_published_address(monkeypatch, tmp_path):
    monkeypatch.delenv("SITE_URL", raising=False)
    out = tmp_path / "deck.apkg"
    deck.write_apkg(out, data=deck.rows(check_math=False))
    notes = deck.read_apkg(out)
    text = "".join(v for n in notes for v in n["fields"].values())
    assert not LOCAL.search(text)
    assert text.count('href="https://transformer-paper-reading.github.io/transformer-paper-reading/') > 200


@pytest.mark.slow  # a whole (tiny) offline build
def test_offline_edition_carries_the_published_address(monkeypatch, tmp_path):
    """`make offline` from a shell with no SITE_URL: canonical links, the sitemap and the BibTeX url
    name the published site; a local SITE_URL is refused instead of being written into the edition."""
    from sitebuild.editions import EditionURLError
    from sitebuild.editions.offline import build_offline
    from tests.support.build import tiny_site

    root = tiny_site(tmp_path / "tree", {"index.md": "# 首页\n\n正文，公式 $d_k$。\n"})
    monkeypatch.delenv("SITE_URL", raising=False)
    proc = build_offline(tmp_path / "site-offline", config_dir=root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    files = [p for p in (tmp_path / "site-offline").rglob("*") if p.suffix in (".html", ".xml", ".js", ".json")]
    hits = [p.name for p in files if LOCAL.search(p.read_text(encoding="utf-8", errors="replace"))]
    assert hits == []
    assert 'href="https://transformer-paper-reading.github.io/transformer-paper-reading/' in \
        (tmp_path / "site-offline/index.html").read_text(encoding="utf-8")
    monkeypatch.setenv("SITE_URL", "http://127.0.0.1:8000/")
    with pytest.raises(EditionURLError):
        build_offline(tmp_path / "again", config_dir=root)


# --- the PDF: addresses, names, pages, formulas, figures ------------------------------------


def test_pdf_destination_names_are_cut_to_the_pdf_name_limit():
    long = "第-01-章-为什么是-attention从-rnn-的梯度瓶颈到自注意力的常数路径"
    name = pdf.dest("chapters-01-why-attention", long)
    assert pdf.name_bytes(name) <= pdf.NAME_LIMIT and name.startswith("chapters-01-why-attention--h")
    assert pdf.dest("chapters-01-why-attention", long) == name  # the id and every link to it agree
    assert pdf.dest("verification-ch01", "ch01-c01") == "verification-ch01--ch01-c01"  # short ones unchanged


def test_pdf_print_page_prints_figures_larger_and_links_to_the_published_site(built_site):
    """The print page (no Chromium needed): every light figure at FIGURE_SCALE × its drawn size
    or as large as the page allows, no dark twin, no local address, no zero-width space."""
    page = pdf.compose(built_site, site_url=None)
    assert not LOCAL.search(page)
    assert "\u200b" not in page
    assert "#only-dark" not in page
    figures = re.findall(r'<img [^>]*class="book-figure" style="width:([\d.]+)pt;height:([\d.]+)pt" src="([^"#]+)', page)
    assert len(figures) >= 10
    for w, h, src in figures:
        m = pdf.SVG_SIZE.search(Path(src.removeprefix("file://")).read_text(encoding="utf-8")[:2000])
        natural_w, natural_h = float(m.group(1)), float(m.group(2))
        w, h = float(w), float(h)
        assert w <= pdf.TEXT_WIDTH_PT + 0.1 and h <= pdf.FIGURE_MAX_HEIGHT_PT + 0.1, src
        assert w >= min(1.4 * natural_w, pdf.TEXT_WIDTH_PT - 1) or h >= pdf.FIGURE_MAX_HEIGHT_PT - 1, src
        assert abs(w / h - natural_w / natural_h) < 0.01, src  # not distorted
    assert '<img ' not in re.sub(r'<img [^>]*class="book-figure"[^>]*>|<img [^>]*src="(?![^"]*/generated/)[^"]*"[^>]*>', "", page)


WIDGET = re.compile(r'<figure class="widget widget-([\w-]+)".*?<div class="widget-controls">(.*?)</div>.*?'
                    r'<figcaption>(.*?)</figcaption>', re.S)


@pdf_test
def test_pdf_shows_every_widget_in_its_default_state(book_text, built_site):
    """Each widget (issue 39) prints as the default state the build wrote: its figure and caption
    are in the book, its controls are not (the print stylesheet hides them)."""
    names = {p.stem.removeprefix("widget-") for p in (ROOT / "docs/generated").glob("widget-*.md")}
    found = {m.group(1): m for m in WIDGET.finditer(pdf.compose(built_site, site_url=None))}
    assert set(found) == names and len(names) >= 5, (sorted(found), sorted(names))
    text = _squash(book_text)
    for name, m in found.items():
        caption = _squash(html.unescape(re.sub(r"<[^>]+>", "", m.group(3))))
        assert caption in text, (name, caption)
        controls = _squash(html.unescape(re.sub(r"<[^>]+>", "", m.group(2))))  # labels with their values
        assert len(controls) > 8 and controls not in text, (name, controls)


@pdf_test
def test_pdf_carries_the_published_address_never_localhost(book, book_text):
    """The book was printed from a build made for the test server (127.0.0.1): neither its text
    (the BibTeX url fields) nor its link annotations may name that server."""
    assert not LOCAL.search(book_text), LOCAL.search(book_text)
    urls = [ln.split()[-1] for ln in _poppler("pdfinfo", "-url", str(book[0])).splitlines()[1:] if ln.strip()]
    assert len(urls) > 20 and [u for u in urls if LOCAL.search(u)] == []
    assert sum(u.startswith(pdf.edition_url()) for u in urls) >= 20
    assert re.search(r"url = \{https://transformer-paper-reading\.github\.io/transformer-paper-reading/chapters/", book_text)


@pdf_test
def test_pdf_destination_names_fit_in_127_bytes(book):
    names = [name for _page, name in pdf.destinations(book[0])]
    assert len(names) > 1000
    assert [n for n in names if len(n.encode("utf-8")) > pdf.NAME_LIMIT] == []
    warnings = subprocess.run(["pdftotext", str(book[0]), "/dev/null"], capture_output=True, text=True).stderr
    assert "name token is longer" not in warnings


@pdf_test
def test_pdf_formulas_copy_as_readable_text(book):
    """Text copied around a formula: no zero-width characters, and σ_max(W_hh) reads as σmax(Whh)."""
    text = _poppler("pdftotext", "-enc", "UTF-8", str(book[0]), "-")
    assert "\u200b" not in text and "\u200c" not in text and "\ufeff" not in text
    assert "σmax(Whh)" in text


@pdf_test
def test_pdf_pages_are_filled_and_bibtex_entries_whole(book):
    """No page is filled less than MIN_FILL except the last page of a chapter or a part of the book;
    no BibTeX entry is split across pages; the glossary ends with its table (no scaffolding)."""
    assert pdf.short_pages(book[0]) == []
    pages = _poppler("pdftotext", "-enc", "UTF-8", str(book[0]), "-").split("\f")
    entries = [p.count("@misc{") for p in pages]
    assert sum(entries) >= 6
    assert [n for n, p in enumerate(pages, start=1) if p.count("@misc{") != p.count("note = {commit")] == []
    assert [n for n, p in enumerate(pages, start=1) if p.count("@misc{") != p.count("引用本章")] == []  # with its heading
    assert "行内公式示例" not in "".join(pages)


@pytest.mark.slow  # the whole offline edition, built once more (about 20 s)
def test_full_offline_edition_links_and_cites_the_published_site(monkeypatch, tmp_path):
    """`make offline` on the real pages: no link, canonical address, sitemap entry or BibTeX url
    names a local server (the guide may still tell a contributor where `make serve` listens)."""
    from sitebuild.editions.offline import build_offline

    monkeypatch.delenv("SITE_URL", raising=False)
    site = tmp_path / "site-offline"
    proc = build_offline(site)
    assert proc.returncode == 0, proc.stderr[-3000:]
    attr = re.compile(r'(?:href|src|content)="[^"]*(?:127\.0\.0\.1|localhost)|url = \{[^}]*(?:127\.0\.0\.1|localhost)')
    hits = [p.relative_to(site).as_posix() for p in site.rglob("*") if p.suffix in (".html", ".xml")
            and attr.search(p.read_text(encoding="utf-8", errors="replace"))]
    assert hits == []
    chapter = (site / "chapters/01-why-attention/index.html").read_text(encoding="utf-8")
    assert "url = {https://transformer-paper-reading.github.io/transformer-paper-reading/chapters/01-why-attention/" in chapter
