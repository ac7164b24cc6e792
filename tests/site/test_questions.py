"""The question bank's source: numbers unique across the site, stable anchors, a one-line core and a
derivation link for every answer, chapter pages citing questions by number."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import markdown
import pytest

from sitebuild.questions import (QuestionAnchorsExtension, QuestionsError, chapter_files, load_all,
                                 parse_file)
from sitebuild.generate.render.page_cheatsheet import render_markdown

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
QUESTIONS = load_all()


def test_every_chapter_has_numbered_questions_at_three_levels():
    files = chapter_files()
    assert len(files) == len(list((DOCS / "chapters").glob("[0-9][0-9]-*/index.md"))) >= 6
    per_chapter = Counter(q.chapter for q in QUESTIONS)
    assert sorted(per_chapter) == [int(f.parent.name[:2]) for f in files]
    for chapter in per_chapter:
        assert {q.stars for q in QUESTIONS if q.chapter == chapter} == {1, 2, 3}, chapter
    numbers = [q.number for q in QUESTIONS]
    # every question the files hold is parsed (not a literal count: a new chapter adds questions)
    written = sum(len(re.findall(r"^\?\?\?\+? question ", f.read_text(encoding="utf-8"), re.M)) for f in files)
    assert len(numbers) == len(set(numbers)) == written >= 71
    assert [q.anchor for q in QUESTIONS[:2]] == ["q-1-1", "q-1-2"]
    assert len({q.uid for q in QUESTIONS}) == len(QUESTIONS)


def test_every_answer_has_a_one_line_core():
    for q in QUESTIONS:
        assert 20 <= len(q.core) <= 260 and "\n" not in q.core, (q.number, q.core)
        assert not re.search(r"\$\$", q.core), q.number  # inline math only: it is one line


def test_every_answer_links_to_its_derivation_in_its_own_chapter():
    for q in QUESTIONS:
        assert q.derivations, f"{q.number}: no 正文 link in the answer's first line"
        for _text, href in q.derivations:
            assert re.fullmatch(rf"/chapters/{q.slug}/[a-z0-9-]+\.md#.+", href), (q.number, href)
    # the anchors exist on the page linked: its headings (ids as the build writes them are checked
    # by `mkdocs build --strict`, which fails on a missing anchor; here the explicit ones)
    for q in QUESTIONS:
        for _text, href in q.derivations:
            page, anchor = href.lstrip("/").split("#", 1)
            text = (DOCS / page).read_text(encoding="utf-8")
            if re.fullmatch(r"[a-z0-9-]+", anchor) and f"#{anchor}" not in text:
                # an ASCII anchor is an explicit {#id}; a CJK one is a slugified heading
                assert re.search(rf"\{{[^}}]*#{re.escape(anchor)}\b", text), (q.number, anchor)


def test_questions_are_cited_by_their_site_number():
    """No "Q7" left: answers and chapter pages cite "3.7" (a link to #q-3-7)."""
    known = {q.anchor for q in QUESTIONS}
    for path in [*DOCS.glob("chapters/*/*.md"), DOCS / "interview.md"]:
        text = path.read_text(encoding="utf-8")
        body = "\n".join(ln for ln in text.splitlines() if not ln.startswith("??? question"))
        assert not re.search(r"(?<![\w$\\{])Q\d{1,2}\b(?![\w(])", re.sub(r"\$[^$]*\$", "", body)), path
        for anchor in re.findall(r"#(q-\d+-\d+)\)", text):
            assert anchor in known, (path.name, anchor)
    ch01 = "".join(p.read_text(encoding="utf-8") for p in DOCS.glob("chapters/01-why-attention/*.md"))
    assert "面试题 [3.1](../03-scaled-dot-product/interview.md#q-3-1)" in ch01


def test_anchor_extension_sets_ids_and_data_from_the_markdown():
    md = markdown.Markdown(extensions=["admonition", "pymdownx.details", QuestionAnchorsExtension()])
    out = md.convert('### ⭐⭐ 进阶思考\n\n??? question "4.10　题目"\n    答案\n\n??? question "不是编号"\n    x\n\n'
                     '## ⭐⭐⭐ 专家领域\n\n??? question "4.11　题目"\n    答案\n')  # ## on the bank's pages
    assert '<details class="question" data-chapter="4" data-stars="2" id="q-4-10">' in out
    assert '<details class="question" data-chapter="4" data-stars="3" id="q-4-11">' in out
    assert out.count('id="q-') == 2


@pytest.mark.parametrize("text, message", [
    ('### ⭐ 基础必会\n\n??? question "Q1　旧编号"\n    **一句话**：x\n', "N.M"),
    ('### ⭐ 基础必会\n\n??? question "2.1　别的章"\n    **一句话**：x\n', "is not chapter 1"),
    ('### ⭐ 基础必会\n\n??? question "1.1　没有核心"\n    答案\n', "一句话"),
    ('### ⭐ 基础必会\n\n??? question "1.2　跳号"\n    **一句话**：x\n', "not 1..1"),
    ('??? question "1.1　没有难度"\n    **一句话**：x\n', "before any"),
])
def test_the_parser_rejects_a_malformed_file(tmp_path, text, message):
    path = tmp_path / "01-x" / "questions.md"
    path.parent.mkdir()
    path.write_text(text, encoding="utf-8")
    with pytest.raises(QuestionsError, match=message):
        parse_file(path)


def test_cheat_sheet_lists_every_question_and_its_core_once():
    sheet = render_markdown()
    assert sheet.count("{ #cheatsheet-ch") == len(chapter_files())
    for q in QUESTIONS:
        assert sheet.count(f"[{q.number}](/chapters/{q.slug}/interview.md#{q.anchor})") == 1
        assert q.core in sheet


def test_built_pages_carry_the_anchors_and_the_citation(built_site):
    ids = []
    for chapter in sorted({q.chapter for q in QUESTIONS}):
        # the bank is a page per chapter (sitebuild/refpages.py): its questions, its controls
        bank = (built_site / "interview" / f"ch{chapter:02d}" / "index.html").read_text(encoding="utf-8")
        found = re.findall(r'<details class="question" data-chapter="(\d+)" data-stars="(\d)" id="(q-\d+-\d+)"', bank)
        assert {int(c) for c, _, _ in found} == {chapter}
        ids += found
        assert 'class="qbank-controls"' in bank
    assert [i for _, _, i in ids] == [q.anchor for q in QUESTIONS]
    assert [int(s) for _, s, _ in ids] == [q.stars for q in QUESTIONS]
    for slug in sorted({q.slug for q in QUESTIONS}):
        # a chapter's questions are on its interview page; its citation ends its first page
        questions = (built_site / "chapters" / slug / "interview" / "index.html").read_text(encoding="utf-8")
        mine = [q.anchor for q in QUESTIONS if q.slug == slug]
        assert re.findall(r'<details class="question"[^>]* id="(q-\d+-\d+)"', questions) == mine
        page = (built_site / "chapters" / slug / "index.html").read_text(encoding="utf-8")
        cite = page[page.index('<h2 id="cite">'):page.index("</article>")]
        assert re.search(r"@misc\{transformer-paper-reading-ch\d\d,", cite), slug
        assert re.search(r"year = \{20\d\d\}", cite) and re.search(r"note = \{commit [0-9a-f]{7,}\+?\}", cite), slug
    sheet = (built_site / "cheatsheet" / "index.html").read_text(encoding="utf-8")
    assert sheet.count('class="cheatsheet-chapter"') == len(chapter_files())


def test_the_bank_index_links_every_chapter_and_old_question_links_land(built_site):
    """interview/ lists each chapter's page with its count; ``interview/#q-2-4`` (the one page the bank
    was) goes on to ``interview/ch02/#q-2-4`` through the map in the index page's <head>."""
    index = (built_site / "interview" / "index.html").read_text(encoding="utf-8")
    for chapter in sorted({q.chapter for q in QUESTIONS}):
        n = sum(q.chapter == chapter for q in QUESTIONS)
        assert f'<a href="ch{chapter:02d}/">本章的 {n} 道题</a>' in index, chapter
    m = re.search(r"<script>\(function\(\)\{var m=\{\},t=(\{.*?\});for", index)
    assert m and m.start() < index.index("<link"), "no anchor map before the stylesheets"
    mapped = {i: rel for rel, ids in json.loads(m[1]).items() for i in ids}
    assert {q.anchor: mapped.get(q.anchor) for q in QUESTIONS} == {q.anchor: f"ch{q.chapter:02d}/" for q in QUESTIONS}
    assert not re.search(r'id="q-\d+-\d+"', index)  # no question is left on the index itself


def test_the_bank_has_a_page_per_chapter_of_the_nav(monkeypatch):
    """Each chapter's questions on its own page of the bank, linked to their answers; a chapter in the
    nav without questions yet gets a page that says so (no file to write per chapter)."""
    from sitebuild.config import chapters
    from sitebuild.generate.render import page_questionbank

    titles = {**chapters(), "ch99": ("第 99 章 新的一章", "chapters/99-new/index.md")}
    monkeypatch.setattr(page_questionbank, "chapters", lambda: titles)
    pages = page_questionbank.render_pages()
    assert set(pages) == {page_questionbank.INDEX} | {f"question-bank-{key}.md" for key in titles}
    for q in QUESTIONS:
        page = pages[f"question-bank-ch{q.chapter:02d}.md"]
        assert page.count(f"](/chapters/{q.slug}/interview.md#{q.anchor}){{ .qbank-answer }}") == 1, q.number
        assert f"**一句话**：{q.core}" in page
    assert "本章尚无面试题" in pages["question-bank-ch99.md"] and "qbank-controls" not in pages["question-bank-ch99.md"]
    assert f"共 {len(QUESTIONS)} 题" in pages[page_questionbank.INDEX]
