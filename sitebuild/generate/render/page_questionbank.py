"""questions.md (every chapter) → docs/generated/question-bank.md: the question bank's list.

The bank (docs/interview.md, 面试题库) lists every question of the site, by chapter and
difficulty, each collapsed with its one-line core and a link to its full answer on the
chapter's page (:func:`sitebuild.questions.answer_page`). The answers themselves are not
repeated here: with them the bank was one page of ~35,000 elements, which blocked a phone for
most of a second while it loaded. docs/assets/question-bank.js fetches an answer from its
chapter page when the reader opens a question (the link stays where scripts or fetch are not
available, as in the offline edition over file://). ``results`` is ignored.
"""

from __future__ import annotations

from pathlib import Path

from sitebuild.questions import LEVELS, by_chapter


def render_markdown() -> str:
    out: list[str] = []
    for ch in by_chapter():
        out.append(f"## {ch.title}\n")
        for stars, group in ch.levels:
            out.append(f"### {'⭐' * stars} {LEVELS[stars]}\n")
            for q in group:
                out.append(f'??? question "{q.number}\u3000{q.title}"\n'
                           f"    **一句话**：{q.core}\n\n"
                           f"    [完整参考答案在第 {ch.number:02d} 章（{q.number}）](/{ch.page}#{q.anchor}){{ .qbank-answer }}\n")
    return "\n".join(out) + "\n"


def render_question_bank(results: list[dict], out_dir: Path) -> None:
    (out_dir / "question-bank.md").write_text(render_markdown(), encoding="utf-8")


RENDERERS = [render_question_bank]
