"""questions.md (every chapter) → the question bank's pages: docs/generated/question-bank-chNN.md, one per
chapter of the nav, and question-bank-index.md, the list of chapters docs/interview.md includes.

The bank (面试题库) is an index page, docs/interview.md, and one page per chapter, ``interview/chNN/``,
which sitebuild/hooks/refpages.py adds to the build around the file written here
(:mod:`sitebuild.refpages`). A chapter's page lists its questions by difficulty, each collapsed
with its one-line core and a link to its full answer on the chapter's page
(:func:`sitebuild.questions.answer_page`). The answers themselves are not repeated here: with them
the bank was one page of ~35,000 elements, which blocked a phone for most of a second while it
loaded. docs/assets/question-bank.js fetches an answer from its chapter page when the reader opens
a question (the link stays where scripts or fetch are not available, as in the offline edition over
file://), and runs the page's controls (difficulty filter, open or close every answer).
``results`` is ignored.
"""

from __future__ import annotations

from pathlib import Path

from sitebuild.config import chapters
from sitebuild.questions import LEVELS, by_chapter
from sitebuild.refpages import QUESTION_BANK, neighbours, page_src

INDEX = "question-bank-index.md"

# The page's controls; docs/assets/question-bank.js shows them (hidden without it).
CONTROLS = """<div class="qbank-controls" role="group" aria-label="筛选题目" hidden>
<label>难度 <select id="qbank-stars"><option value="">全部难度</option><option value="1">⭐ 基础必会</option><option value="2">⭐⭐ 进阶思考</option><option value="3">⭐⭐⭐ 专家领域</option></select></label>
<button type="button" class="md-button" data-qbank="open">展开全部答案</button>
<button type="button" class="md-button" data-qbank="close">收起全部答案</button>
<span class="qbank-count" aria-live="polite"></span>
</div>
"""


def render_pages() -> dict[str, str]:
    """{file name in docs/generated/: Markdown}: the index's list and every chapter's page body."""
    titles = chapters()
    found = {f"ch{ch.number:02d}": ch for ch in by_chapter()}
    listed = [found[key] for key in titles if key in found]
    index: list[str] = [f"共 {sum(len(ch.questions) for ch in listed)} 题，分属 {len(listed)} 章。\n"]
    out: dict[str, str] = {}
    for key, (title, _) in titles.items():  # a chapter not in the nav yet has no page
        ch = found.get(key)
        page = page_src(QUESTION_BANK, key)
        body = [neighbours(QUESTION_BANK, key, titles)]
        index.append(f"## {title}\n")
        if ch is None:
            out[QUESTION_BANK.generated.format(key=key)] = "\n".join(body + ["本章尚无面试题。\n"])
            index.append(f"[本章的面试题](/{page})：尚无。\n")
            continue
        levels = "，".join(f"{'⭐' * stars} {len(group)} 题" for stars, group in ch.levels)
        index.append(f"[本章的 {len(ch.questions)} 道题](/{page})：{levels}。"
                     f"完整答案在本章的[面试追问](/{ch.page})页上。\n")
        body.append(f"本章共 {len(ch.questions)} 题；完整答案在第 {ch.number:02d} 章的[面试追问](/{ch.page})页上，"
                    "展开一道题就在这里显示。\n")
        body.append(CONTROLS)
        for stars, group in ch.levels:
            body.append(f"## {'⭐' * stars} {LEVELS[stars]}\n")
            for q in group:
                body.append(f'??? question "{q.number}\u3000{q.title}"\n'
                            f"    **一句话**：{q.core}\n\n"
                            f"    [完整参考答案在第 {ch.number:02d} 章（{q.number}）](/{ch.page}#{q.anchor}){{ .qbank-answer }}\n")
        out[QUESTION_BANK.generated.format(key=key)] = "\n".join(body) + "\n"
    out[INDEX] = "\n".join(index) + "\n"
    return out


def render_question_bank(results: list[dict], out_dir: Path) -> None:
    for name, text in render_pages().items():
        (out_dir / name).write_text(text, encoding="utf-8")


RENDERERS = [render_question_bank]
