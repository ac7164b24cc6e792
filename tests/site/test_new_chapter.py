"""`make chapter` (tools/new_chapter.py), run against a copy of the files it touches: the pages it
writes and their front matter, questions.md as sitebuild/questions.py parses it, the nav entry, the
first claim test (which must fail), the jieba terms, and the refusals that write nothing. No site build."""

from __future__ import annotations

import re
import runpy
import shutil
import subprocess

import pytest

from mkdocs.utils.yaml import yaml_load

from sitebuild.generate.claims import PAGE_REF, collect_claims
from sitebuild.questions import answer_page, parse_file
from tests.support.build import ROOT
from tools.new_chapter import main

# numbers no real chapter will take, so the test holds whatever chapters the site has
NN, SLUG, TITLE = "98", "new-topic", "新的一章：从这里到那里"
FOLDER = f"{NN}-{SLUG}"
PAGES = ["index.md", "derivation.md", "code.md", "interview.md"]
LABELS = {"derivation.md": "推导", "code.md": "代码与实验", "interview.md": "2026 视角与面试追问"}


@pytest.fixture
def repo(tmp_path):
    """What the script reads and writes: mkdocs.yml, the jieba dictionary, docs/chapters/, tests/."""
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    (tmp_path / "docs" / "chapters").mkdir(parents=True)
    shutil.copy(ROOT / "docs" / "jieba-dict.txt", tmp_path / "docs" / "jieba-dict.txt")
    return tmp_path


def run(repo, number=NN, slug=SLUG, title=TITLE, terms=None) -> int:
    args = [f"--number={number}", f"--slug={slug}", f"--title={title}", f"--root={repo}"]  # "=": a slug "-new"
    return main(args + ([f"--terms={terms}"] if terms is not None else []))


def nav(repo) -> list:
    return yaml_load((repo / "mkdocs.yml").read_text(encoding="utf-8"))["nav"]


def test_pages_with_front_matter_and_one_heading(repo):
    assert run(repo) == 0
    chapter = repo / "docs" / "chapters" / FOLDER
    assert sorted(p.name for p in chapter.iterdir()) == sorted([*PAGES, "questions.md"])
    index = (chapter / "index.md").read_text(encoding="utf-8")
    assert index.startswith(f"# 第 {NN} 章\u3000{TITLE}\n")
    for heading in ['!!! abstract "本章你会得到"', "\n## 核心困惑\n", "\n## 前置知识\n", "\n## 论文精读\n"]:
        assert heading in index, heading
    for name, label in LABELS.items():
        text = (chapter / name).read_text(encoding="utf-8")
        assert text.startswith(f"---\ntitle: 第 {NN} 章 · {label}\n---\n\n"), name
        assert re.findall(r"^# .*$", text, re.M) == [f"# {label}"], name
    interview = (chapter / "interview.md").read_text(encoding="utf-8")
    for heading in ["## 2026 视角", "## 面试追问清单", "## 下一章预告", "## 参考文献"]:
        assert heading in interview
    assert answer_page(FOLDER, repo / "docs" / "chapters") == f"chapters/{FOLDER}/interview.md"


def test_questions_parse_at_three_levels_and_link_to_their_chapter(repo):
    assert run(repo) == 0
    chapter = repo / "docs" / "chapters" / FOLDER
    questions = parse_file(chapter / "questions.md")
    assert [q.number for q in questions] == [f"{int(NN)}.{i}" for i in (1, 2, 3)]
    assert [q.stars for q in questions] == [1, 2, 3]
    derivation = (chapter / "derivation.md").read_text(encoding="utf-8")
    for q in questions:
        assert 20 <= len(q.core) <= 260  # what tests/site/test_questions.py asks of every core
        for _text, href in q.derivations:
            page, anchor = href.split("#")
            assert page == f"/chapters/{FOLDER}/derivation.md" and f"{{#{anchor}}}" in derivation


def test_nav_entry_after_the_last_chapter_and_nothing_else_changed(repo):
    before = (repo / "mkdocs.yml").read_text(encoding="utf-8")
    assert run(repo) == 0
    after = (repo / "mkdocs.yml").read_text(encoding="utf-8")
    added = [ln for ln in after.splitlines() if ln not in before.splitlines()]
    assert "\n".join(ln for ln in after.splitlines() if ln not in added) == before.rstrip("\n")
    titles = [next(iter(item)) for item in nav(repo)]
    section = titles.index(f"第 {NN} 章 新的一章")  # the title before its subtitle, as chapters 01–06
    assert titles[section + 1] == "面试题库"
    assert titles[section - 1].startswith("第 ") and titles[section - 1] < titles[section]
    pages = nav(repo)[section][titles[section]]
    assert [list(p.values())[0] for p in pages] == [f"chapters/{FOLDER}/{p}" for p in PAGES]
    assert [list(p)[0] for p in pages] == [f"第 {NN} 章 新的一章", *LABELS.values()]


def test_chapters_go_in_number_order(repo):
    assert run(repo, "99", "last-one", "最后一章") == 0
    assert run(repo) == 0
    titles = [next(iter(item)) for item in nav(repo)]
    assert titles.index(f"第 {NN} 章 新的一章") + 1 == titles.index("第 99 章 最后一章")
    assert titles.index("第 99 章 最后一章") + 1 == titles.index("面试题库")


def test_first_claim_test_fails_and_the_index_cites_it(repo):
    assert run(repo) == 0
    test_file = repo / "tests" / f"ch{NN}" / "test_ch98_new_topic.py"
    claims = collect_claims(repo / "tests")
    assert [(c.id, c.test_name) for c in claims] == [(f"ch{NN}-first-claim", "test_first_claim")]
    assert claims[0].paper and claims[0].text
    index = (repo / "docs" / "chapters" / FOLDER / "index.md").read_text(encoding="utf-8")
    assert f"[✔ 待写](/verification.md#ch{NN}-first-claim){{ .claim }}" in index
    assert PAGE_REF.findall(index) == [f"ch{NN}-first-claim"]
    test = runpy.run_path(str(test_file))["test_first_claim"]
    with pytest.raises(pytest.fail.Exception, match=rf"chapter {NN} is a skeleton: replace this test"):
        test()


def test_terms_join_the_jieba_dictionary_once(repo):
    dictionary = repo / "docs" / "jieba-dict.txt"
    before = dictionary.read_text(encoding="utf-8")
    assert "位置编码 2000 n" in before
    assert run(repo, terms="位置编码 新术语甲 新术语乙 新术语甲") == 0
    assert dictionary.read_text(encoding="utf-8") == before + "新术语甲 2000 n\n新术语乙 2000 n\n"


@pytest.mark.parametrize("number, slug, words", [
    ("7", SLUG, "two digits"),
    ("007", SLUG, "two digits"),
    ("0a", SLUG, "two digits"),
    (NN, "New-Topic", "lowercase"),
    (NN, "new_topic", "lowercase"),
    (NN, "new--topic", "lowercase"),
    (NN, "-new", "lowercase"),
])
def test_malformed_number_or_slug_is_refused(repo, capsys, number, slug, words):
    before = (repo / "mkdocs.yml").read_text(encoding="utf-8")
    assert run(repo, number, slug) == 2
    assert words in capsys.readouterr().err
    assert (repo / "mkdocs.yml").read_text(encoding="utf-8") == before
    assert not any((repo / "docs" / "chapters").iterdir()) and not (repo / "tests").exists()


def test_existing_folder_or_nav_entry_is_refused(repo, capsys):
    (repo / "docs" / "chapters" / FOLDER).mkdir()
    assert run(repo) == 2
    assert f"docs/chapters/{FOLDER}/ exists" in capsys.readouterr().err
    (repo / "docs" / "chapters" / FOLDER).rmdir()
    assert run(repo) == 0
    before = (repo / "mkdocs.yml").read_text(encoding="utf-8")
    shutil.rmtree(repo / "docs" / "chapters" / FOLDER)
    shutil.rmtree(repo / "tests")
    assert run(repo, NN, "other-slug") == 2  # the folder is gone, the nav still has chapter 98
    assert "nav has chapter 98 already" in capsys.readouterr().err
    assert (repo / "mkdocs.yml").read_text(encoding="utf-8") == before
    assert not any((repo / "docs" / "chapters").iterdir()) and not (repo / "tests").exists()


def test_make_target_passes_terms_only_when_given():
    def dry(*args):
        out = subprocess.run(["make", "-n", "-s", "chapter", "VENV_STAMP=", *args], cwd=ROOT, check=True,
                             capture_output=True, text=True).stdout
        return out.strip().split(" -m ", 1)[1]

    base = 'tools.new_chapter --number "07" --slug "x-y" --title "甲：乙"'
    assert dry("NN=07", "SLUG=x-y", "TITLE=甲：乙") == base
    assert dry("NN=07", "SLUG=x-y", "TITLE=甲：乙", "TERMS=丙 丁") == base + ' --terms "丙 丁"'
