"""``python -m sitebuild.editions.deck`` (``make deck``): the interview deck, ``dist/deck.tsv`` (Anki import).

One row per question on the site (:func:`sitebuild.questions.load_all`), with Anki's file
headers: the first column is the note's GUID, the question's stable id (chapter slug + number,
``01-why-attention/1.3``), so importing a newer deck updates the cards instead of adding copies.
Columns: id, question, answer, difficulty (stars), chapter, claims (links to the claims on the
verification pages), link (the question on its chapter's page of the question bank), tags.

The answer is the site's own Markdown rendered to HTML. Math stays as ``\\(…\\)`` / ``\\[…\\]``,
which Anki typesets with its built-in MathJax (KaTeX's HTML would need KaTeX's CSS and fonts,
which Anki does not have); every formula is first typeset by the site's KaTeX
(:class:`sitebuild.hooks.mathrender.Renderer`), so a formula the site cannot render fails the deck too.
Links point to the published site (``$SITE_URL``, else mkdocs.yml's ``site_url``). No
``.apkg``: genanki is not among the pinned dependencies, and the TSV imports as is.
"""

from __future__ import annotations

import argparse
import html
import os
import re
from pathlib import Path

import markdown

from sitebuild.config import ROOT, _yaml, chapters, src_to_url
from sitebuild.questions import Question, load_all
from sitebuild.refpages import claim_page, question_page

OUT = ROOT / "dist" / "deck.tsv"
COLUMNS = ("id", "question", "answer", "difficulty", "chapter", "claims", "link", "tags")
EXTENSIONS = ["abbr", "admonition", "attr_list", "def_list", "footnotes", "md_in_html", "tables",
              "pymdownx.arithmatex", "pymdownx.details", "pymdownx.inlinehilite", "pymdownx.superfences"]
MATH = re.compile(r'<(span|div) class="arithmatex">(.*?)</\1>', re.S)
HREF = re.compile(r'href="([^"]*)"')
PRE = re.compile(r"<pre\b.*?</pre>", re.S)
CLAIM_ID = re.compile(r"ch\d{2}-[a-z0-9][a-z0-9-]*")
QUESTION_ANCHOR = re.compile(r"q-(\d+)-(\d+)")


def site_url() -> str:
    # the config file as the build reads it (!ENV included), without loading MkDocs' plugins (seconds)
    url = os.environ.get("SITE_URL") or _yaml("mkdocs.yml").get("site_url") or ""
    return url if url.endswith("/") else url + "/"


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
    # Anki's Basic note type keeps two fields: the answer also carries the other columns
    meta = f"{'⭐' * q.stars} · {chapter} · 网站上的这道题：{link}" + (f" · 论断：{claims}" if claims else "")
    return {
        "id": q.uid,
        "question": to_html(f"**{q.number}** {q.title}", base).removeprefix("<p>").removesuffix("</p>"),
        "answer": to_html(q.answer, base) + f'<hr><p class="deck-meta">{meta}</p>',
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
                renderer.render(formulas(r["question"]) + formulas(r["answer"]))
        finally:
            renderer.close()
    return out


def write_tsv(path: Path = OUT, base: str | None = None) -> int:
    data = rows(base)
    header = ["#separator:tab", "#html:true", "#notetype:Basic", "#deck:Transformer 论文精读::面试题",
              "#guid column:1", f"#tags column:{COLUMNS.index('tags') + 1}", "#columns:" + "\t".join(COLUMNS)]
    lines = header + ["\t".join(r[c] for c in COLUMNS) for r in data]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return len(data)


def read_tsv(path: Path = OUT) -> list[dict[str, str]]:
    """The rows of a deck file (header lines skipped)."""
    lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln and not ln.startswith("#")]
    return [dict(zip(COLUMNS, ln.split("\t"))) for ln in lines]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m sitebuild.editions.deck", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    n = write_tsv(args.out)
    print(f"deck: {args.out} ({n} questions); import it in Anki: 文件 → 导入")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
