"""``python -m sitebuild.editions.deck`` (``make deck``): the interview deck, ``dist/deck.apkg`` (Anki).

One note per question on the site (:func:`sitebuild.questions.load_all`), in an Anki package built
with genanki (a ``.apkg`` is a zip holding an SQLite collection): a note type of its own,
「Transformer 论文精读 · 面试题」, with the fields

    Question · Core (the **一句话** line: what the back shows first) · Answer (the rest of the
    answer) · Chapter · Difficulty (stars) · Link (the question on the site) · Claims (links to
    the claims it rests on, on the verification pages)

and one card per note (front: the question; back: the one-line core, then the full answer, then
chapter, difficulty, link and claims). Each note's GUID is derived from the question's stable id
(chapter slug + number, ``01-why-attention/1.3``), and the note type and the deck have fixed ids,
so importing a newer deck (文件 → 导入) updates the notes instead of adding copies.

Fields are the site's own Markdown rendered to HTML. Math stays as ``\\(…\\)`` / ``\\[…\\]``,
which Anki typesets with its built-in MathJax (KaTeX's HTML would need KaTeX's CSS and fonts,
which Anki does not have); every formula is first typeset by the site's KaTeX
(:class:`sitebuild.hooks.mathrender.Renderer`), so a formula the site cannot render fails the deck too.
Links point to the published site (:func:`sitebuild.editions.edition_url`: ``$SITE_URL``, else the
published address), never to a local server. ``dist/deck.tsv`` is the same notes as a table for
other tools (one row per note, the columns named in its first line); Anki reads the ``.apkg``.
"""

from __future__ import annotations

import argparse
import html
import re
from pathlib import Path

import genanki
import markdown

from sitebuild.config import ROOT, chapters, src_to_url
from sitebuild.editions import edition_url
from sitebuild.questions import Question, load_all
from sitebuild.refpages import claim_page, question_page

OUT = ROOT / "dist" / "deck.apkg"
TSV = ROOT / "dist" / "deck.tsv"
COLUMNS = ("id", "question", "core", "answer", "difficulty", "chapter", "claims", "link", "tags")
# Anki's ids for the note type and the deck: fixed forever, so a re-import finds them again
MODEL_ID = 1_706_037_620
DECK_ID = 1_706_037_621
DECK_NAME = "Transformer 论文精读::面试题"
FIELDS = ("Question", "Core", "Answer", "Chapter", "Difficulty", "Link", "Claims")
CORE_LINE = re.compile(r"^\*\*一句话\*\*[：:].*(?:\n(?!\s*\n).*)*\n?", re.M)
EXTENSIONS = ["abbr", "admonition", "attr_list", "def_list", "footnotes", "md_in_html", "tables",
              "pymdownx.arithmatex", "pymdownx.details", "pymdownx.inlinehilite", "pymdownx.superfences"]
MATH = re.compile(r'<(span|div) class="arithmatex">(.*?)</\1>', re.S)
HREF = re.compile(r'href="([^"]*)"')
PRE = re.compile(r"<pre\b.*?</pre>", re.S)
CLAIM_ID = re.compile(r"ch\d{2}-[a-z0-9][a-z0-9-]*")
QUESTION_ANCHOR = re.compile(r"q-(\d+)-(\d+)")


def site_url() -> str:
    return edition_url()


def _absolute(href: str, base: str) -> str:
    """A docs link (``/verification.md#x``, ``#q-2-11``) -> the page on the published site: a claim
    on its chapter's verification page, a question on its chapter's page of the question bank."""
    if "://" in href or href.startswith("mailto:"):
        return href
    path, _, frag = href.partition("#")
    if path.lstrip("/") == "verification.md" and CLAIM_ID.fullmatch(frag):
        path = claim_page(frag)
    elif not path:
        m = QUESTION_ANCHOR.fullmatch(frag)
        path = question_page(int(m[1])) if m else "interview.md"
    url = base + src_to_url(path.lstrip("/")) if path.endswith(".md") else base + path.lstrip("/")
    return url + (f"#{frag}" if frag else "")


def to_html(md_text: str, base: str) -> str:
    """Markdown -> one line of HTML for a TSV field (``<br>`` inside code, spaces elsewhere)."""
    md = markdown.Markdown(extensions=EXTENSIONS, extension_configs={"pymdownx.arithmatex": {"generic": True}})
    out = md.convert(md_text)
    out = HREF.sub(lambda m: f'href="{html.escape(_absolute(html.unescape(m.group(1)), base))}"', out)
    out = re.sub(r"\{ *\.claim *\}", "", out)
    out = PRE.sub(lambda m: m.group(0).replace("\n", "<br>"), out)
    return re.sub(r"\s*\n\s*", " ", out).replace("\t", " ").strip()


def formulas(field_html: str) -> list[tuple[str, bool]]:
    """The TeX of every formula in a field, as the renderer takes it."""
    out = []
    for m in MATH.finditer(field_html):
        body = html.unescape(m.group(2)).strip()
        out.append((body[2:-2].strip(), m.group(1) == "div"))
    return out


def row(q: Question, titles: dict[int, str], base: str) -> dict[str, str]:
    claims = " ".join(f'<a href="{_absolute(f"/verification.md#{c}", base)}">{c}</a>' for c in q.claims)
    chapter = titles.get(q.chapter, f"第 {q.chapter:02d} 章")
    link = f'<a href="{_absolute(f"#{q.anchor}", base)}">{q.number}</a>'
    rest = CORE_LINE.sub("", q.answer, count=1)  # the core has its own field, shown first
    return {
        "id": q.uid,
        "question": to_html(f"**{q.number}** {q.title}", base).removeprefix("<p>").removesuffix("</p>"),
        "core": to_html(q.core, base).removeprefix("<p>").removesuffix("</p>"),
        "answer": to_html(rest, base),
        "difficulty": "⭐" * q.stars,
        "chapter": chapter,
        "claims": claims,
        "link": link,
        "tags": f"transformer-paper-reading ch{q.chapter:02d} level-{q.stars}",
    }


def rows(base: str | None = None, check_math: bool = True) -> list[dict[str, str]]:
    base = base or site_url()
    titles = {int(key[2:]): title for key, (title, _) in chapters().items()}
    out = [row(q, titles, base) for q in load_all()]
    if check_math:
        from sitebuild.hooks.mathrender import Renderer

        renderer = Renderer()
        try:
            for r in out:
                renderer.render(formulas(r["question"]) + formulas(r["core"]) + formulas(r["answer"]))
        finally:
            renderer.close()
    return out


CSS = """\
.card { font-family: system-ui, "PingFang SC", "Microsoft YaHei", "Noto Sans CJK SC", sans-serif;
        font-size: 18px; line-height: 1.55; text-align: left; color: #222; background: #fff; }
.nightMode.card, .night_mode .card { color: #eee; background: #2f2f31; }
.core { font-weight: 600; margin: .6em 0 1em; }
.answer { font-size: 16px; }
.meta { font-size: 14px; color: #777; margin-top: 1.2em; }
pre { white-space: pre-wrap; font-size: 13px; }
table { border-collapse: collapse; } td, th { border: 1px solid #ccc; padding: 2px 6px; }
"""
FRONT = '<div class="question">{{Question}}</div>'
BACK = ('{{FrontSide}}<hr id="answer"><div class="core">{{Core}}</div><div class="answer">{{Answer}}</div>'
        '<div class="meta">{{Difficulty}} · {{Chapter}} · 网站上的这道题：{{Link}}'
        '{{#Claims}}<br>论断：{{Claims}}{{/Claims}}</div>')


def model() -> genanki.Model:
    return genanki.Model(MODEL_ID, "Transformer 论文精读 · 面试题", fields=[{"name": f} for f in FIELDS],
                         templates=[{"name": "题目 → 答案", "qfmt": FRONT, "afmt": BACK}], css=CSS)


def guid(uid: str) -> str:
    """The note's GUID: a function of the question's stable id only."""
    return genanki.guid_for("transformer-paper-reading", uid)


def note(r: dict[str, str], note_model: genanki.Model) -> genanki.Note:
    fields = [r["question"], r["core"], r["answer"], r["chapter"], r["difficulty"], r["link"], r["claims"]]
    return genanki.Note(model=note_model, fields=fields, guid=guid(r["id"]), tags=r["tags"].split())


def write_apkg(path: Path = OUT, base: str | None = None, data: list[dict[str, str]] | None = None,
               timestamp: float | None = None) -> int:
    """The package; its notes are stamped ``timestamp`` (default: now), so that Anki's importer, which
    by default updates a note only from a newer one, takes a newer build's notes."""
    data = data if data is not None else rows(base)
    note_model = model()
    anki_deck = genanki.Deck(DECK_ID, DECK_NAME, description="《Transformer 论文精读 · 可验证版》的面试题：一题一卡。")
    for r in data:
        anki_deck.add_note(note(r, note_model))
    path.parent.mkdir(parents=True, exist_ok=True)
    genanki.Package(anki_deck).write_to_file(str(path), timestamp=timestamp)
    return len(data)


def write_tsv(path: Path = TSV, base: str | None = None, data: list[dict[str, str]] | None = None) -> int:
    """The same notes as a table (for other tools; Anki imports the .apkg)."""
    data = data if data is not None else rows(base)
    lines = ["\t".join(COLUMNS)] + ["\t".join(r[c] for c in COLUMNS) for r in data]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return len(data)


def read_tsv(path: Path = TSV) -> list[dict[str, str]]:
    """The rows of a deck table (the header line skipped)."""
    lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln][1:]
    return [dict(zip(COLUMNS, ln.split("\t"))) for ln in lines]


def read_apkg(path: Path) -> list[dict]:
    """The notes of a package as Anki stores them: guid, fields by name, tags (for tests and readers)."""
    import json
    import sqlite3
    import tempfile
    import zipfile

    with tempfile.TemporaryDirectory() as tmp, zipfile.ZipFile(path) as z:
        z.extract("collection.anki2", tmp)
        con = sqlite3.connect(Path(tmp) / "collection.anki2")
        try:
            models = json.loads(con.execute("select models from col").fetchone()[0])
            names = {int(mid): [f["name"] for f in m["flds"]] for mid, m in models.items()}
            notes = [{"guid": g, "mid": mid, "fields": dict(zip(names[mid], flds.split("\x1f"))), "tags": tags.split()}
                     for g, mid, flds, tags in con.execute("select guid, mid, flds, tags from notes order by id")]
            cards = con.execute("select count(*) from cards").fetchone()[0]
        finally:
            con.close()
    return [dict(n, cards=cards) for n in notes]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m sitebuild.editions.deck", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--tsv", type=Path, default=TSV)
    args = ap.parse_args(argv)
    data = rows()
    n = write_apkg(args.out, data=data)
    write_tsv(args.tsv, data=data)
    print(f"deck: {args.out} ({n} notes, links to {site_url()}); in Anki: 文件 → 导入 → {args.out.name} "
          f"(a newer deck updates the same notes); {args.tsv} is the same notes as a table")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
