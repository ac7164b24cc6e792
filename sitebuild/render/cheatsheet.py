"""questions.md (every chapter) → docs/generated/cheatsheet.md: the one-page-per-chapter cheat sheet.

Each chapter is a section of the 速查表 page: its questions by difficulty, each with the
one-line core of its answer (the **一句话** line) and a link to the full answer on the chapter's
questions page. The print stylesheet (docs/assets/extra.css, "cheat sheet" block) starts every chapter on
a new A4 page. ``results`` is ignored: the questions are the input.
"""

from __future__ import annotations

from itertools import groupby
from pathlib import Path

from sitebuild.config import chapters
from sitebuild.questions import LEVELS, answer_page, load_all


def render_markdown() -> str:
    titles = {int(key[2:]): title for key, (title, _) in chapters().items()}
    out: list[str] = []
    for chapter, qs in groupby(load_all(), key=lambda q: q.chapter):
        qs = list(qs)
        title = titles.get(chapter, f"第 {chapter:02d} 章")
        out.append(f'## {title} {{ #cheatsheet-ch{chapter:02d} .cheatsheet-chapter }}\n')
        page = answer_page(qs[0].slug)
        out.append(f"[正文](/chapters/{qs[0].slug}/index.md) · 共 {len(qs)} 题\n")
        for stars, group in groupby(qs, key=lambda q: q.stars):
            out.append(f'<p class="cheatsheet-level">{"⭐" * stars} {LEVELS[stars]}</p>\n')
            for q in group:
                out.append(f"- [**{q.number}**](/{page}#{q.anchor}) **{q.title}**  \n"
                           f"  {q.core}")
            out.append("")
    return "\n".join(out) + "\n"


def render_cheatsheet(results: list[dict], out_dir: Path) -> None:
    (out_dir / "cheatsheet.md").write_text(render_markdown(), encoding="utf-8")


RENDERERS = [render_cheatsheet]
