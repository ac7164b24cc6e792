"""第 10 章章末的「全书论文地图」：论文的每一节、每张表 → 讲解它的页面与锚点 → docs/generated/ch10-paper-map.md。

地图不是手写的：每个章节页面在 front matter 里用 ``paper:`` 声明它讲解论文的哪几处，值是本页的锚点
（空字符串 = 页面开头）::

    ---
    title: 第 03 章 · 推导（上）
    paper:
      "§3.2.1": "data-flow"
    ---

这里把 docs/chapters/*/*.md 的声明收集起来，按 PAPER_PARTS 的顺序排成一张表。一处没有任何页面声明，
表里就写「（尚无）」，tests/ch10 的论断测试会失败；锚点写错，mkdocs build --strict 会失败。
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from sitebuild.generate.render._style import md_table, write_text

ROOT = Path(__file__).resolve().parents[3]
CHAPTERS = ROOT / "docs" / "chapters"
# 论文已发表版本的每一节（\section、\subsection、\subsubsection）、附录与四张表，按出现的顺序
PAPER_PARTS = [
    ("§1", "引言"), ("§2", "背景"), ("§3", "模型结构"), ("§3.1", "编码器与解码器栈"), ("§3.2", "注意力"),
    ("§3.2.1", "缩放点积注意力"), ("§3.2.2", "多头注意力"), ("§3.2.3", "注意力在模型里的三种用法"),
    ("§3.3", "逐位置前馈网络"), ("§3.4", "嵌入与 softmax"), ("§3.5", "位置编码"), ("§4", "为什么用自注意力"),
    ("表 1", "各种层的复杂度与路径长度"), ("§5", "训练"), ("§5.1", "训练数据与分批"), ("§5.2", "硬件与训练时长"),
    ("§5.3", "优化器"), ("§5.4", "正则化"), ("§6", "结果"), ("§6.1", "机器翻译"), ("表 2", "BLEU 与训练成本"),
    ("§6.2", "模型变体"), ("表 3", "Transformer 的各种变体"), ("§6.3", "英语成分句法分析"),
    ("表 4", "句法分析的 F1"), ("§7", "结论"), ("附录", "注意力可视化（图 3–5）"),
]
FRONT = re.compile(r"\A---\n(.*?)\n---\n", re.S)
H1 = re.compile(r"^# (.+)$", re.M)


def front_matter(path: Path) -> dict:
    m = FRONT.match(path.read_text(encoding="utf-8"))
    return (yaml.safe_load(m.group(1)) or {}) if m else {}


def page_label(path: Path) -> str:
    """链接文字：「第 03 章 · 推导（上）」；导读页没有 title，用「第 NN 章 · 导读」。"""
    meta = front_matter(path)
    if meta.get("title"):
        return str(meta["title"])
    return f"第 {path.parent.name[:2]} 章 · 导读"


def paper_map(chapters: Path = CHAPTERS) -> dict[str, list[tuple[str, str]]]:
    """{论文的一处: [(相对 docs/chapters 的页面路径, 锚点), ...]}，页面按章节与文件名排序。"""
    out: dict[str, list[tuple[str, str]]] = {}
    for path in sorted(chapters.glob("*/*.md")):
        declared = front_matter(path).get("paper") or {}
        for part, anchor in declared.items():
            out.setdefault(str(part), []).append((path.relative_to(chapters).as_posix(), str(anchor or "")))
    return out


def render_paper_map(results: list[dict], out_dir: Path) -> None:
    found = paper_map()
    rows = []
    for part, what in PAPER_PARTS:
        links = [f"[{page_label(CHAPTERS / page)}](../{page}{'#' + anchor if anchor else ''})"
                 for page, anchor in found.get(part, [])]
        rows.append([part, what, "<br>".join(links) or "（尚无）"])
    text = ("每一行是论文的一节或一张表，右边是讲解它的页面；由各页面 front matter 里的 `paper:` 生成"
            "（`sitebuild/generate/render/ch10_paper_map.py`），所以页面搬家或改锚点时地图跟着变。\n\n")
    write_text(out_dir, "ch10-paper-map.md", text + md_table(["论文", "内容", "讲解它的页面"], rows))


RENDERERS = [render_paper_map]
