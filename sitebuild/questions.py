"""The one parser of ``docs/chapters/NN-*/questions.md``: every interview question on the site.

The question bank page, the chapter pages, the cheat sheets, the deck and the PDF all read
the same files, so this module is the single place that knows their shape::

    ### ⭐⭐ 进阶思考

    ??? question "1.4　题目"
        **参考答案。**（正文：[节标题](/chapters/01-…/rnn.md#anchor)）

        **一句话**：答案的核心，一行。

        1. 展开……

A question's number ``N.M`` (chapter N, question M) is unique across the site; its HTML
anchor is ``q-N-M`` (set by :class:`QuestionAnchors` on every page that includes the file).
"""

from __future__ import annotations

import re
import textwrap
from itertools import groupby
from dataclasses import dataclass, field
from pathlib import Path
from xml.etree import ElementTree as etree

from markdown.extensions import Extension
from markdown.treeprocessors import Treeprocessor

from sitebuild.config import chapters

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS_DIR = ROOT / "docs" / "chapters"
LEVELS = {1: "基础必会", 2: "进阶思考", 3: "专家领域"}

TITLE = re.compile(r'^\?\?\?\+? question "(\d+)\.(\d+)\u3000(.+)"[ \t]*$')
LEVEL = re.compile(r"^###\s+(⭐+)\s")
CORE = re.compile(r"^\*\*一句话\*\*[：:]\s*(.+)$")
CLAIM = re.compile(r"\]\(/verification\.md#([\w-]+)\)\{ *\.claim *\}")
DERIVATION = re.compile(r"\[([^\]]+)\]\((/chapters/[^)#/]+/[a-z0-9-]+\.md#[^)\s]+)\)")
ANCHOR = re.compile(r"^(\d+)\.(\d+)\u3000")


class QuestionsError(ValueError):
    """questions.md does not have the shape this module documents."""


@dataclass(frozen=True)
class Question:
    chapter: int  # 1
    index: int  # 3
    slug: str  # "01-why-attention"
    title: str  # Markdown (may hold $…$)
    stars: int  # 1..3
    answer: str  # the answer's Markdown, dedented
    core: str  # the **一句话** line's Markdown
    claims: tuple[str, ...] = field(default=())  # verification ids, in order, unique
    derivations: tuple[tuple[str, str], ...] = field(default=())  # (link text, /chapters/… href)

    @property
    def number(self) -> str:
        return f"{self.chapter}.{self.index}"

    @property
    def anchor(self) -> str:
        return anchor_for(self.chapter, self.index)

    @property
    def uid(self) -> str:
        """Stable id (deck rows, GUIDs): the chapter slug and the number."""
        return f"{self.slug}/{self.number}"

    @property
    def level(self) -> str:
        return LEVELS[self.stars]


def anchor_for(chapter: int, index: int) -> str:
    return f"q-{chapter}-{index}"


def chapter_files(chapters_dir: Path = CHAPTERS_DIR) -> list[Path]:
    return sorted(chapters_dir.glob("[0-9][0-9]-*/questions.md"))


def parse_file(path: Path) -> list[Question]:
    """Every question in one questions.md, in order; raises QuestionsError naming the line."""
    slug = path.parent.name
    chapter = int(slug[:2])
    lines = path.read_text(encoding="utf-8").split("\n")
    out: list[Question] = []
    stars = 0
    i = 0
    while i < len(lines):
        line = lines[i]
        if m := LEVEL.match(line):
            stars = len(m.group(1))
            if stars not in LEVELS:
                raise QuestionsError(f"{path}:{i + 1}: {stars} stars")
        elif line.startswith("??? question"):
            m = TITLE.match(line)
            if m is None:
                raise QuestionsError(f'{path}:{i + 1}: title is not "N.M\u3000…": {line!r}')
            if int(m.group(1)) != chapter:
                raise QuestionsError(f"{path}:{i + 1}: number {m.group(1)}.{m.group(2)} is not chapter {chapter}")
            if not stars:
                raise QuestionsError(f"{path}:{i + 1}: question before any ### ⭐ heading")
            body = []
            i += 1
            while i < len(lines) and (not lines[i].strip() or lines[i].startswith("    ")):
                body.append(lines[i])
                i += 1
            answer = textwrap.dedent("\n".join(body)).strip("\n")
            out.append(_question(path, chapter, int(m.group(2)), slug, m.group(3), stars, answer))
            continue
        i += 1
    numbers = [q.index for q in out]
    if numbers != list(range(1, len(out) + 1)):
        raise QuestionsError(f"{path}: questions are numbered {numbers}, not 1..{len(out)}")
    return out


def _question(path, chapter, index, slug, title, stars, answer) -> Question:
    cores = [m.group(1).strip() for ln in answer.split("\n") if (m := CORE.match(ln.strip()))]
    if len(cores) != 1:
        raise QuestionsError(f"{path}: {chapter}.{index}: {len(cores)} **一句话** lines (need exactly one)")
    claims = tuple(dict.fromkeys(CLAIM.findall(answer)))
    derivations = tuple(dict.fromkeys(DERIVATION.findall(answer.split("\n", 1)[0])))
    return Question(chapter, index, slug, title, stars, answer, cores[0], claims, derivations)


def answer_page(slug: str, chapters_dir: Path = CHAPTERS_DIR) -> str:
    """The chapter page that shows the chapter's questions with their answers: the one page of
    ``docs/chapters/<slug>/`` that includes its questions.md ("chapters/<slug>/interview.md")."""
    include = f'--8<-- "docs/chapters/{slug}/questions.md"'
    pages = [p for p in sorted((chapters_dir / slug).glob("*.md"))
             if p.name != "questions.md" and include in p.read_text(encoding="utf-8")]
    if len(pages) != 1:
        raise QuestionsError(f"{slug}: {len(pages)} pages include questions.md (need exactly one)")
    return f"chapters/{slug}/{pages[0].name}"


@dataclass(frozen=True)
class ChapterQuestions:
    number: int  # 3
    title: str  # "第 03 章 缩放点积注意力", as the chapter's first heading names it
    slug: str  # "03-scaled-dot-product"
    page: str  # "chapters/03-scaled-dot-product/interview.md": where its answers are shown
    questions: list[Question]
    levels: list[tuple[int, list[Question]]]  # [(stars, its questions)], in page order


def by_chapter() -> list[ChapterQuestions]:
    """Every chapter's questions, grouped by difficulty: what the bank and the cheat sheet list."""
    titles = {int(key[2:]): title for key, (title, _) in chapters().items()}
    out = []
    for number, qs in groupby(load_all(), key=lambda q: q.chapter):
        qs = list(qs)
        levels = [(stars, list(group)) for stars, group in groupby(qs, key=lambda q: q.stars)]
        out.append(ChapterQuestions(number, titles.get(number, f"第 {number:02d} 章"), qs[0].slug,
                                    answer_page(qs[0].slug), qs, levels))
    return out


def load_all(chapters_dir: Path = CHAPTERS_DIR) -> list[Question]:
    """Every question on the site, chapter by chapter."""
    out = [q for path in chapter_files(chapters_dir) for q in parse_file(path)]
    seen = [q.number for q in out]
    if len(set(seen)) != len(seen):
        raise QuestionsError(f"duplicate question numbers: {sorted({n for n in seen if seen.count(n) > 1})}")
    return out


# --- the Markdown side: stable anchors wherever a questions.md is included ------------------


class QuestionAnchors(Treeprocessor):
    """``<details class="question">`` whose summary starts with "N.M　" gets ``id="q-N-M"``,
    ``data-chapter`` and ``data-stars`` (from the ⭐ heading above it: ``###`` in questions.md,
    ``##`` on the question bank's pages), so that links
    to a question, the bank's filter and the PDF all find it. Runs before MkDocs collects the
    page's anchors, so ``mkdocs build --strict`` validates links to ``#q-N-M``."""

    def run(self, root: etree.Element) -> None:
        stars = 0
        for el in root.iter():
            if el.tag in ("h2", "h3") and (m := re.match(r"\s*(⭐+)", "".join(el.itertext()))):
                stars = len(m.group(1))
            elif el.tag == "details" and "question" in (el.get("class") or "").split():
                summary = el.find("summary")
                m = ANCHOR.match((summary.text or "") if summary is not None else "")
                if m:
                    el.set("id", anchor_for(int(m.group(1)), int(m.group(2))))
                    el.set("data-chapter", m.group(1))
                    if stars:
                        el.set("data-stars", str(stars))


class QuestionAnchorsExtension(Extension):
    def extendMarkdown(self, md):
        # after inline patterns (20), before MkDocs' anchor collection and toc (5)
        md.treeprocessors.register(QuestionAnchors(md), "question_anchors", 6)
