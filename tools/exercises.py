"""``python -m tools.exercises pages|notebooks [chNN …]``: the 「动手练习」 sections and notebooks, from the registry.

Each chapter's exercises (``snippets/exercises/chNN.py``) are shown in two places, both written from
the registry so that what a page says is checked is what the checker checks:

* ``pages``: the section ``## 动手练习 {#exercises}`` at the end of the chapter's 代码与实验 page
  (chapter 01, which has none: its own ``exercises.md``): statement, signature, shapes, what
  must happen on bad input, what is checked, a folded hint and the solution folded behind a link to
  the reader code. The section runs from its heading to the end of the page and is replaced whole;
  everything above it is left as it is.
* ``notebooks``: ``docs/notebooks/chNN-exercises.ipynb``: the intro (Colab link, download, chapter),
  the install cell of the experiment notebooks, then a stub and a check cell per exercise. Run
  ``python -m sitebuild.generate.notebooks docs/notebooks/chNN-exercises.ipynb`` afterwards to store
  the outputs.

* ``questions``: in each chapter's ``questions.md``, a 「动手练习」 line under the answer of every interview
  question an exercise practises (``Exercise.questions``), linking the exercise; the question bank copies it.

``tests/exercises/test_pages.py`` checks that the pages, notebooks and questions match what this module writes.
"""

from __future__ import annotations

import argparse
import json
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = ROOT / "docs" / "chapters"
NOTEBOOKS = ROOT / "docs" / "notebooks"
HEADING = "## 动手练习 {#exercises}"
REPO = "transformer-paper-reading/transformer-paper-reading"


def _version() -> str:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]


def chapter_dir(chapter: str) -> Path:
    (found,) = CHAPTERS.glob(f"{chapter[2:]}-*")
    return found


# Chapter 01 has no 代码与实验 page, and its measurements page (table-1.md) is near the 10,000-element
# budget: its exercises get a page of their own, whose head is this.
OWN_PAGE = "exercises.md"
OWN_PAGE_HEAD = ("---\ntitle: 第 {n} 章 · 动手练习\n---\n\n# 从零写一遍\n\n"
                 "本章讲过的几个算法，自己写一遍，再让检查器核对。")


# Chapters whose 代码与实验 page would pass the element budget with the exercises: they get their own page,
# and the 代码与实验 page keeps a short 「动手练习」 section that lists and links them.
OWN_PAGE_CHAPTERS = ("ch12", "ch13")


def page_for(chapter: str) -> Path:
    """Where the chapter's exercises are written out: its 代码与实验 page, or a page of their own
    (chapter 01 has no 代码与实验 page; OWN_PAGE_CHAPTERS would pass the element budget)."""
    folder = chapter_dir(chapter)
    if chapter in OWN_PAGE_CHAPTERS or not (folder / "code.md").is_file():
        return folder / OWN_PAGE
    return folder / "code.md"


def pointer_section(chapter: str) -> str:
    """The short 「动手练习」 section of a 代码与实验 page whose exercises live on their own page."""
    items = _exercises(chapter)
    lines = [HEADING, "",
             f"本章的 {len(items)} 道练习（题面、签名、形状与检查项）在[动手练习]({OWN_PAGE})页；"
             f"也可以直接[在 Colab 中打开]({colab(chapter)})本章的练习 Notebook。", ""]
    lines += [f"- [练习 {_number(chapter, i)}　{ex.title}]({OWN_PAGE}#{anchor(ex)})" for i, ex in enumerate(items, 1)]
    return "\n".join(lines) + "\n"


def anchor(exercise) -> str:
    return "ex-" + exercise.name.replace("_", "-")


def notebook_name(chapter: str) -> str:
    return f"{chapter}-exercises.ipynb"


def colab(chapter: str) -> str:
    return f"https://colab.research.google.com/github/{REPO}/blob/v{_version()}/docs/notebooks/{notebook_name(chapter)}"


def _rel(from_page: Path, target_page: str, target_anchor: str) -> str:
    """A Markdown link target from from_page to docs/chapters/<target_page>#anchor."""
    target = CHAPTERS / target_page
    if target.parent == from_page.parent:
        path = target.name
    else:
        path = f"../{target.parent.name}/{target.name}"
    return f"{path}#{target_anchor}" if target_anchor else path


def _exercises(chapter: str):
    from snippets.exercises import exercises

    return exercises(chapter)


def _number(chapter: str, i: int) -> str:
    return f"{int(chapter[2:])}.{i}"


def section(chapter: str) -> str:
    """The 「动手练习」 section of the chapter's page, from its heading to the end of the page."""
    page = page_for(chapter)
    items = _exercises(chapter)
    nb = notebook_name(chapter)
    lines = [
        HEADING, "",
        f"读完本章，下面 {len(items)} 个函数你应该能从零写出来。每道题给出题面、签名、形状和坏输入时该怎样；"
        "检查器（`snippets.exercises`，随本站代码一起安装）用本站的读者代码当参考答案，在随机的形状、dtype 和本章讲到的"
        "边界情形上检查你的函数：全部成立时列出检查了什么；有一条不成立时，用中文报告这条性质、它找到的最小失败输入"
        "（形状和数值），并给出提示和正文的链接。检查器不会显示参考答案的代码。",
        "",
        f"**在哪里做**：[在 Colab 中打开]({colab(chapter)})本章的练习 Notebook（免安装），"
        f"或者打开本站的 [练习 Notebook](../../notebooks/{nb})；在自己的电脑上装好本站代码后，"
        f"把函数写进一个文件，用命令行检查：",
        "",
        "```text",
        f"python -m snippets.exercises list {chapter}",
        f"python -m snippets.exercises check {items[0].id} my_solution.py",
        "```",
        "",
        f"Notebook 里则是 `from snippets.exercises import check` 之后 `check(\"{items[0].id}\", {items[0].name})`。",
    ]
    for i, ex in enumerate(items, 1):
        solution_link = _rel(page, *ex.solution)
        lines += [
            "",
            f"### 练习 {_number(chapter, i)}　{ex.title} {{#{anchor(ex)}}}",
            "",
            ex.statement.replace("\n", "\n\n"),
            "",
            f"- **签名**：`{ex.signature}`，检查时的编号是 `{ex.id}`",
            f"- **形状**：{ex.shapes}",
            f"- **坏输入**：{ex.bad_input}",
        ]
        if ex.questions:
            lines.append("- **练的是面试题**：" + "、".join(ex.questions) + "（[面试题库](../../interview.md)）")
        lines += ["", "**检查什么**（按这个顺序，报告第一条不成立的）：", ""]
        lines += [f"{k}. {p.text}" for k, p in enumerate(ex.properties, 1)]
        lines += ["", '??? tip "提示"']
        seen = set()
        for p in ex.properties:
            if p.hint in seen:
                continue
            seen.add(p.hint)
            lines.append(f"    - {p.hint}（[正文]({_rel(page, p.page, p.anchor)})）")
        lines += [
            "",
            '??? success "参考答案"',
            f"    参考答案就是本站的读者代码，见[这一节]({solution_link})。先自己写、检查通过，再去对照。",
        ]
    return "\n".join(lines).replace("\n\n\n", "\n\n") + "\n"


def _replace_section(page: Path, section_text: str, head: str = "") -> None:
    text = page.read_text(encoding="utf-8") if page.is_file() else head
    body = text.split("\n" + HEADING + "\n", 1)[0].rstrip("\n")
    page.write_text(body + "\n\n" + section_text, encoding="utf-8")


def write_page(chapter: str) -> Path:
    page = page_for(chapter)
    _replace_section(page, section(chapter), OWN_PAGE_HEAD.format(n=chapter[2:]))
    code = chapter_dir(chapter) / "code.md"
    if page.name == OWN_PAGE and code.is_file():
        _replace_section(code, pointer_section(chapter))
    return page


# --------------------------------------------------------------------------- notebooks
INSTALL = '''# 在 Colab 或你自己的 Jupyter 里，先装上本站的代码：snippets 包，取自仓库的发布版本 v{version}。
# 在仓库里运行（或已经装过）时，snippets 已经能导入，这一步什么也不做。
import importlib.util
import subprocess
import sys

if importlib.util.find_spec("snippets") is None:
    subprocess.run([sys.executable, "-m", "pip", "install", "-q",
                    "git+https://github.com/{repo}@v{version}"], check=True)'''


def _md(source: str) -> dict:
    return {"cell_type": "markdown", "metadata": {}, "source": source}


def _code(source: str) -> dict:
    return {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": source}


def notebook_cells(chapter: str) -> list[dict]:
    items = _exercises(chapter)
    folder = chapter_dir(chapter)
    page = page_for(chapter)
    nb = notebook_name(chapter)
    title = re.search(r"^# (.+)$", (folder / "index.md").read_text(encoding="utf-8"), flags=re.M)[1]
    page_link = f"../chapters/{folder.name}/{page.name}#exercises"
    cells = [_md(
        f"# 第 {chapter[2:]} 章练习 Notebook：{len(items)} 个函数，从零写出来\n\n"
        f"本章的 {len(items)} 道练习，每道一个空函数（stub）和一个检查单元。把 stub 里的 "
        "`raise NotImplementedError` 换成你的实现，运行它下面的检查单元：检查器用本站的读者代码当参考答案，"
        "在随机的形状、dtype 和正文讲到的边界情形上检查你的函数。全部成立时它列出检查了什么；有一条不成立时，"
        "它用中文报告这条性质、找到的最小失败输入和一条提示，并链接到正文。它不显示参考答案的代码。\n\n"
        f"**在哪里运行**：[在 Colab 中打开]({colab(chapter)})（免安装，下面第一个代码单元会装上本站的代码），"
        f"或者下载本 Notebook：[{nb}]({nb})，在自己的 Jupyter 里打开（同样由第一个代码单元安装；"
        "在仓库根目录启动 Jupyter 时不用安装）。\n\n"
        f"正文：[{title}](../chapters/{folder.name}/index.md)；题面与提示也在"
        f"[代码与实验页的「动手练习」]({page_link})。"),
        _code(INSTALL.format(version=_version(), repo=REPO)),
        _code("from snippets.exercises import check, exercises\n\n"
              f"for exercise in exercises(\"{chapter}\"):\n"
              "    print(exercise.id, exercise.title)"),
        _md("先看检查器怎样说话：交给它一个显然不对的函数（原样返回输入），它报告第一条不成立的性质和最小的失败输入。"),
        _code(f"check(\"{items[0].id}\", lambda *args, **kwargs: args[0])"),
    ]
    for i, ex in enumerate(items, 1):
        cells.append(_md(
            f"## 练习 {_number(chapter, i)}　{ex.title}\n\n{ex.statement}\n\n"
            f"- **签名**：`{ex.signature}`\n- **形状**：{ex.shapes}\n- **坏输入**：{ex.bad_input}\n\n"
            f"提示与参考答案的链接：[正文的练习 {_number(chapter, i)}]"
            f"(../chapters/{folder.name}/{page.name}#{anchor(ex)})。"))
        cells.append(_code("import torch\n\n\n" + ex.stub.rstrip("\n")))
        cells.append(_code(f"check(\"{ex.id}\", {ex.name})"))
    return cells


def notebook(chapter: str) -> dict:
    reference = json.loads((NOTEBOOKS / "ch03-experiments.ipynb").read_text(encoding="utf-8"))
    return {"cells": notebook_cells(chapter), "metadata": reference["metadata"], "nbformat": 4, "nbformat_minor": 5}


def write_notebook(chapter: str) -> Path:
    import nbformat

    path = NOTEBOOKS / notebook_name(chapter)
    data = notebook(chapter)
    for i, cell in enumerate(data["cells"]):
        cell["id"] = f"{chapter}-{i:02d}"  # 固定的单元编号：重写不产生无谓的差异
    nb = nbformat.from_dict(data)
    nbformat.validate(nb)
    nbformat.write(nb, path)
    return path


# --------------------------------------------------------------------------- questions
PRACTICE = "    **动手练习**："
QUESTION = re.compile(r'^\?\?\? question "(\d+\.\d+)\u3000')


def practice_links(chapter: str) -> dict[str, str]:
    """{question number: the 「动手练习」 line its answer gets}, from each exercise's ``questions``."""
    page = page_for(chapter)
    target = f"/chapters/{page.parent.name}/{page.name}"
    out: dict[str, list[str]] = {}
    for i, ex in enumerate(_exercises(chapter), 1):
        for q in ex.questions:
            out.setdefault(q, []).append(f"[练习 {_number(chapter, i)}　{ex.title}]({target}#{anchor(ex)})")
    return {q: PRACTICE + "、".join(links) for q, links in out.items()}


def with_practice(text: str, links: dict[str, str]) -> str:
    """questions.md with each question's 「动手练习」 line (after its 参考答案 line) set to ``links``."""
    lines = [ln for ln in text.split("\n") if not ln.startswith(PRACTICE)]
    out, current, pending = [], None, False
    for line in lines:
        m = QUESTION.match(line)
        if m:
            current, pending = m.group(1), m.group(1) in links
        out.append(line)
        if pending and line.startswith("    **参考答案。**"):
            out += ["", links[current]]
            pending = False
    return re.sub(r"\n{3,}", "\n\n", "\n".join(out))


def write_questions(chapter: str) -> Path:
    path = chapter_dir(chapter) / "questions.md"
    path.write_text(with_practice(path.read_text(encoding="utf-8"), practice_links(chapter)), encoding="utf-8")
    return path


def main(argv=None) -> int:
    from snippets.exercises import core

    ap = argparse.ArgumentParser(prog="python -m tools.exercises", description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=["pages", "notebooks", "questions"])
    ap.add_argument("chapters", nargs="*")
    args = ap.parse_args(argv)
    chapters = args.chapters or sorted({e.chapter for e in core.load_all().values()})
    writers = {"pages": write_page, "notebooks": write_notebook, "questions": write_questions}
    for chapter in chapters:
        path = writers[args.what](chapter)
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
