"""questions.md (every chapter) → docs/generated/cheatsheet.md: the one-page-per-chapter cheat sheet.

Each chapter is a section of the 速查表 page: its questions by difficulty, each with the
one-line core of its answer (the **一句话** line) and a link to the full answer on the chapter's
questions page. The print stylesheet (docs/assets/extra.css, "cheat sheet" block) starts every chapter on
a new A4 page. ``results`` is ignored: the questions are the input.
"""

from __future__ import annotations

from pathlib import Path

from sitebuild.questions import LEVELS, by_chapter


def render_markdown() -> str:
    out: list[str] = []
    for ch in by_chapter():
        out.append(f'## {ch.title} {{ #cheatsheet-ch{ch.number:02d} .cheatsheet-chapter }}\n')
        out.append(f"[正文](/chapters/{ch.slug}/index.md) · 共 {len(ch.questions)} 题\n")
        for stars, group in ch.levels:
            out.append(f'<p class="cheatsheet-level">{"⭐" * stars} {LEVELS[stars]}</p>\n')
            for q in group:
                # 编号加粗、题目后换行都交给 CSS（extra.css 的 cheat sheet 一节）：每题少两个元素，这一页
                # 150 多题、全是公式，要守住 10,000 个元素的预算（tests/site/test_page_size.py）
                out.append(f"- [{q.number}](/{ch.page}#{q.anchor}) **{q.title}**\n"
                           f"  {q.core}")
            out.append("")
    return "\n".join(out) + "\n"


def render_cheatsheet(results: list[dict], out_dir: Path) -> None:
    (out_dir / "cheatsheet.md").write_text(render_markdown(), encoding="utf-8")


RENDERERS = [render_cheatsheet]
