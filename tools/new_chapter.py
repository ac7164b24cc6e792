"""Start a chapter the same way every time: its pages, its questions, its first claim test, its nav entry.

    make chapter NN=07 SLUG=positional-encoding TITLE="位置编码：从正弦到 RoPE" [TERMS="正弦位置编码 旋转位置编码"]
    .venv/bin/python -m tools.new_chapter --number 07 --slug positional-encoding --title "…" [--terms "…"] [--root DIR]

Writes, in the form ../shared/SERIES.md and CONVENTIONS.md give every chapter:

* ``docs/chapters/NN-SLUG/``: ``index.md`` (导读), ``derivation.md`` (推导), ``code.md`` (代码与实验),
  ``interview.md`` (2026 视角与面试追问, which includes ``questions.md``) and ``questions.md`` (one
  placeholder question per level, in the shape ``sitebuild/questions.py`` parses);
* ``tests/chNN/test_chNN_<slug>.py``: one claim test, ``chNN-first-claim``, that fails until the
  author replaces it with the chapter's first real claim (``index.md`` cites it with a badge, so the
  claims registry holds);
* the chapter's section in the nav of ``mkdocs.yml`` (in number order, before 面试题库);
* ``docs/jieba-dict.txt``: each of ``--terms`` the dictionary does not hold yet.

It writes nothing (exit 2) when the number or slug is malformed, or when the chapter's folder, its
number, its nav entry or its test file exists already. Everything else a chapter needs is added by
hand: CONVENTIONS.md, "Adding a chapter".
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NUMBER = re.compile(r"\d{2}")
SLUG = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
# the nav's top-level items ("  - 首页: index.md", "  - 第 01 章 …:") and a chapter's pages
NAV_ITEM = re.compile(r"^  - ")
NAV_CHAPTER_PAGE = re.compile(r"chapters/(\d{2})-[^/\s]+/")
BANK = "  - 面试题库:"
# the section pages after 导读, as chapters 04–06 name them: (file, nav label, heading)
SECTION_PAGES = [("derivation.md", "推导"), ("code.md", "代码与实验"), ("interview.md", "2026 视角与面试追问")]
JIEBA_FREQ = "2000 n"  # what every entry of docs/jieba-dict.txt carries


class Refused(Exception):
    """The chapter cannot be started as asked; nothing was written."""


@dataclass(frozen=True)
class Chapter:
    number: str  # "07"
    slug: str  # "positional-encoding"
    title: str  # "位置编码：从正弦到 RoPE"

    @property
    def folder(self) -> str:
        return f"{self.number}-{self.slug}"

    @property
    def n(self) -> int:  # question numbers: 7.1, 7.2, …
        return int(self.number)

    @property
    def claim(self) -> str:
        return f"ch{self.number}-first-claim"

    @property
    def short_title(self) -> str:
        """The title up to its subtitle, as sitebuild.config.chapters() names a chapter and the nav
        labels chapters 01–06: "位置编码：从正弦到 RoPE" -> "位置编码"."""
        return re.split(r"[：:]|——", self.title, maxsplit=1)[0].strip()

    @property
    def test_path(self) -> str:
        return f"tests/ch{self.number}/test_ch{self.number}_{self.slug.replace('-', '_')}.py"


# --- the pages ------------------------------------------------------------------------------


def index_md(c: Chapter) -> str:
    return f"""# 第 {c.number} 章　{c.title}

（待写）一段引言：这一章读论文的哪几句，前几章已经讲到哪里，这一章往哪里深入。

!!! abstract "本章你会得到"
    - （待写）本章的第一条论断，换成真正的论断和它的徽章 [✔ 待写](/verification.md#{c.claim}){{ .claim }}；
    - （待写）本章的推导、代码与实验各给读者什么。

## 核心困惑

1. （待写）读者读到这几句时会问的第一个问题？
2. （待写）第二个问题？

## 前置知识

### 记号

| 记号 | 含义 | 论文 base 模型的取值 |
|---|---|---|
| （待写） | （待写） | — |

### 需要的结论

- （待写）前几章的哪些结论要用到，链接到那一节。

## 论文精读

| 论文章节 | 读什么 | 本章落点 |
|---|---|---|
| §（待写） | （待写） | [推导](derivation.md#first-section) |

逐字读这几句（短引用）：

> "…"（§…）

!!! note "论文数字核对"
    | 论文里的数 | 出处 | 本章怎么处理 |
    |---|---|---|
    | （待写） | §… | 由测试重算，或说明它从哪里来、为什么这里不能重算 |
"""


def _front(c: Chapter, label: str) -> str:
    return f"---\ntitle: 第 {c.number} 章 · {label}\n---\n\n# {label}\n"


def derivation_md(c: Chapter) -> str:
    return _front(c, "推导") + """
## 一、（待写）第一节 {#first-section}

（待写）推导用 LaTeX 写，每一步都给出理由，读者能逐行核对；每个可以检验的句子后面跟它的论断徽章。

!!! warning "常见误解：（待写）"
    （待写）其他教程在这个主题上常犯的错误，以及它错在哪里。
"""


def code_md(c: Chapter) -> str:
    return _front(c, "代码与实验") + """
## 代码 {#code}

（待写）本章的代码写在 `snippets/` 的模块里，分节嵌入本页，从不粘贴；把本页嵌入的各节按顺序拼起来，是一个可以独立运行的程序。

## 实验 {#experiment}

（待写）实验写入 `results/` 的结果文件，本页只嵌入由它生成的图和表。
"""


def interview_md(c: Chapter) -> str:
    return _front(c, "2026 视角与面试追问") + f"""
## 2026 视角 {{#view-2026}}

（待写）论文之后被修正、被推翻或被发扬的部分。

## 面试追问清单 {{#questions}}

--8<-- "docs/chapters/{c.folder}/questions.md"

## 下一章预告

（待写）

## 参考文献

1. Vaswani, A. et al. (2017). Attention Is All You Need. NIPS 2017. [arXiv:1706.03762](https://arxiv.org/abs/1706.03762)
"""


LEVEL_NAMES = {1: "基础必会", 2: "进阶思考", 3: "专家领域"}
LEVEL_WORDS = {1: "基础题", 2: "进阶题", 3: "专家题"}


def questions_md(c: Chapter) -> str:
    """One placeholder question per level (the site tests want all three); SERIES.md asks for 8 or more."""
    parts = [f"题目分三级：⭐ 基础必会，⭐⭐ 进阶思考，⭐⭐⭐ 专家领域。先合上答案自己作答，再展开对照。"
             f"答案里的徽章链接到证明相应结论的测试；「正文」链接指向第 {c.number} 章里对应的推导。\n"]
    for stars in (1, 2, 3):
        parts.append(f"""### {"⭐" * stars} {LEVEL_NAMES[stars]}

??? question "{c.n}.{stars}\u3000（待写）第一道{LEVEL_WORDS[stars]}"
    **参考答案。**（论文 §…；正文：[第一节](/chapters/{c.folder}/derivation.md#first-section)）

    **一句话**：（待写）答案的核心写成一行，二十到二百六十个字符，速查表和题库列出的就是这一行。

    1. （待写）展开的答案，每一步链接到它所依据的论断徽章。
""")
    return "\n".join(parts)


def claim_test(c: Chapter) -> str:
    title = c.title.replace("\\", "\\\\").replace('"', '\\"')  # inside a docstring
    return f'''"""Chapter {c.number}, {title}: the claims its pages cite, one test each (CONVENTIONS.md, "Claims").

Started by `make chapter` (tools/new_chapter.py): the one test below fails until the chapter's first
real claim replaces it. A skeleton must not pass: a stub reported as proven would be a defect.
"""

from __future__ import annotations

import pytest


@pytest.mark.claim("{c.claim}", paper="§…", text="（待写）本章的第一条论断：一句读者可以检验的话")
def test_first_claim():
    pytest.fail(
        "chapter {c.number} is a skeleton: replace this test and its marker '{c.claim}' with the "
        "chapter's first real claim (a test proving a sentence of the page, with its own id, paper "
        "section and text), and the badge [✔ 待写](/verification.md#{c.claim}) in "
        "docs/chapters/{c.folder}/index.md with that claim's badge"
    )
'''


# --- the nav --------------------------------------------------------------------------------


def _yaml_scalar(text: str) -> str:
    """``text`` as a YAML key or value: plain where YAML reads it back unchanged, else double-quoted."""
    import json

    import yaml

    try:
        plain = yaml.safe_load(f"{text}: {text}") == {text: text}
    except yaml.YAMLError:
        plain = False
    return text if plain else json.dumps(text, ensure_ascii=False)


def nav_block(c: Chapter) -> str:
    label = _yaml_scalar(f"第 {c.number} 章 {c.short_title}")
    lines = [f"  - {label}:", f"      - {label}: chapters/{c.folder}/index.md"]
    lines += [f"      - {name}: chapters/{c.folder}/{page}" for page, name in SECTION_PAGES]
    return "\n".join(lines) + "\n"


def insert_nav(mkdocs_yml: str, c: Chapter) -> str:
    """mkdocs.yml with the chapter's section in the nav: after the last chapter with a lower number,
    before any with a higher one, else before 面试题库. Text in, text out: comments stay as they are."""
    lines = mkdocs_yml.splitlines(keepends=True)
    try:
        start = next(i for i, ln in enumerate(lines) if ln.rstrip() == "nav:") + 1
    except StopIteration:
        raise Refused("mkdocs.yml has no top-level 'nav:'") from None
    end = next((i for i in range(start, len(lines)) if lines[i].strip() and not lines[i].startswith(" ")), len(lines))
    items = [i for i in range(start, end) if NAV_ITEM.match(lines[i])] + [end]
    at = None
    for first, after in zip(items, items[1:]):
        numbers = {int(m) for ln in lines[first:after] for m in NAV_CHAPTER_PAGE.findall(ln)}
        if numbers and max(numbers) < c.n:
            at = after
        elif numbers and at is None:
            at = first
    if at is None:
        at = next((i for i in items[:-1] if lines[i].startswith(BANK)), end)
    while at > start and not lines[at - 1].strip():  # stay above blank lines that close the nav
        at -= 1
    return "".join(lines[:at]) + nav_block(c) + "".join(lines[at:])


def _nav_sources(mkdocs_yml: str) -> list[str]:
    """The docs paths of the nav, read as mkdocs reads the file (its !ENV and python tags included)."""
    from mkdocs.utils.yaml import yaml_load

    def walk(items):
        for item in items or []:
            if isinstance(item, str):
                yield item
            elif isinstance(item, dict):
                for value in item.values():
                    yield from ([value] if isinstance(value, str) else walk(value))

    return list(walk(yaml_load(mkdocs_yml).get("nav")))


# --- the whole step -------------------------------------------------------------------------


def check(c: Chapter, root: Path, mkdocs_yml: str) -> None:
    if not NUMBER.fullmatch(c.number) or c.number == "00":
        raise Refused(f"NN must be two digits, 01-99 (got {c.number!r})")
    if not SLUG.fullmatch(c.slug):
        raise Refused(f"SLUG must be lowercase words joined by hyphens, e.g. positional-encoding (got {c.slug!r})")
    if not c.title.strip() or "\n" in c.title or not c.short_title:
        raise Refused(f"TITLE must be one non-empty line with a title before any subtitle (got {c.title!r})")
    chapters = root / "docs" / "chapters"
    if (chapters / c.folder).exists():
        raise Refused(f"docs/chapters/{c.folder}/ exists already")
    same_number = sorted(p.name for p in chapters.glob(f"{c.number}-*"))
    if same_number:
        raise Refused(f"chapter {c.number} exists already: docs/chapters/{same_number[0]}/")
    in_nav = [src for src in _nav_sources(mkdocs_yml) if (m := NAV_CHAPTER_PAGE.match(src)) and m[1] == c.number]
    if in_nav:
        raise Refused(f"mkdocs.yml's nav has chapter {c.number} already: {in_nav[0]}")
    if (root / c.test_path).exists():
        raise Refused(f"{c.test_path} exists already")


def new_jieba_terms(dictionary: str, terms: list[str]) -> list[str]:
    known = {line.split()[0] for line in dictionary.splitlines() if line.strip()}
    return [t for t in dict.fromkeys(terms) if t not in known]


def create(c: Chapter, root: Path, terms: list[str] = ()) -> list[str]:
    """Write the chapter's skeleton under ``root``; returns the paths written or changed. Raises
    :class:`Refused` before writing anything."""
    mkdocs_path = root / "mkdocs.yml"
    mkdocs_yml = mkdocs_path.read_text(encoding="utf-8")
    check(c, root, mkdocs_yml)
    bad_terms = [t for t in terms if not t or re.search(r"\s", t)]
    if bad_terms:
        raise Refused(f"TERMS are words separated by spaces (got {terms!r})")
    new_nav = insert_nav(mkdocs_yml, c)
    wanted = [f"chapters/{c.folder}/{page}" for page in ["index.md", *(p for p, _ in SECTION_PAGES)]]
    if [s for s in _nav_sources(new_nav) if s.startswith(f"chapters/{c.folder}/")] != wanted:
        raise Refused("could not insert the chapter into mkdocs.yml's nav (its layout is not the one expected)")

    folder = f"docs/chapters/{c.folder}"
    files = {
        f"{folder}/index.md": index_md(c),
        f"{folder}/derivation.md": derivation_md(c),
        f"{folder}/code.md": code_md(c),
        f"{folder}/interview.md": interview_md(c),
        f"{folder}/questions.md": questions_md(c),
        c.test_path: claim_test(c),
    }
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    mkdocs_path.write_text(new_nav, encoding="utf-8")
    written = [*files, "mkdocs.yml"]

    jieba = root / "docs" / "jieba-dict.txt"
    added = new_jieba_terms(jieba.read_text(encoding="utf-8"), list(terms)) if terms else []
    if added:
        text = jieba.read_text(encoding="utf-8")
        text += ("" if text.endswith("\n") or not text else "\n") + "".join(f"{t} {JIEBA_FREQ}\n" for t in added)
        jieba.write_text(text, encoding="utf-8")
        written.append("docs/jieba-dict.txt")
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.new_chapter", description=__doc__.split("\n\n")[0])
    parser.add_argument("--number", required=True, help="two digits: 07")
    parser.add_argument("--slug", required=True, help="lowercase, hyphenated: positional-encoding")
    parser.add_argument("--title", required=True, help="the chapter's title: 位置编码：从正弦到 RoPE")
    parser.add_argument("--terms", default="", help="domain terms for docs/jieba-dict.txt, space-separated")
    parser.add_argument("--root", type=Path, default=ROOT, help="the repository to write into (tests use a copy)")
    args = parser.parse_args(argv)
    c = Chapter(args.number, args.slug, args.title.strip())
    try:
        written = create(c, args.root, args.terms.split())
    except Refused as e:
        print(f"new_chapter: error: {e}; nothing written", file=sys.stderr)
        return 2
    print(f"chapter {c.number} started: " + ", ".join(written))
    print(f"next: {c.test_path} fails until the chapter's first real claim replaces it; "
          "CONVENTIONS.md, 'Adding a chapter', lists everything else a chapter touches")
    return 0


if __name__ == "__main__":
    sys.exit(main())
