"""第 03 章的注意力游乐场（widget）：docs/generated/widget-attention.md。

页面上是一个可以动手的小部件：5 个词元、固定的 Q、K（d_k = 4），开关「除以 √d_k」、温度 τ、
因果掩码、最后一个词元是填充，看权重矩阵（热图）和一个查询的那一行（条形）。这里写出它的 HTML：
控件、默认状态的热图与条形（没有脚本、打印和 PDF 看到的就是它），以及脚本要用的数据（词元、Q、K）。
权重由读者代码 ``snippets.attention.scaled_dot_product_attention`` 算出；浏览器里的
docs/assets/widgets/attention-math.js 重算同样的数，tests/browser/test_widgets.py 逐项比较两者。

同样的输入得到逐字节相同的文件。
"""

from __future__ import annotations

import html
import json
import math
from pathlib import Path

import torch

from sitebuild.generate.render._style import write_text
from snippets.attention import causal_mask, scaled_dot_product_attention

MD = "widget-attention.md"
TOKENS = ["我", "爱", "读", "论文", "〈pad〉"]
D_K = 4
SEED = 3
TEMPERATURES = [0.25, 0.5, 1.0, 2.0, 4.0]  # 滑块的刻度
DEFAULT = {"scale": True, "temperature": 1.0, "causal": False, "pad": False, "query": 3}
SCRIPTS = "widgets/attention-math.js widgets/attention.js"  # relative to docs/assets/ (page-init.js)


def inputs() -> tuple[list[list[float]], list[list[float]]]:
    """Q、K，(n, d_k)，取 3 位小数：页面上的数据就是它们本身，不是近似。"""
    gen = torch.Generator().manual_seed(SEED)
    q = torch.randn(len(TOKENS), D_K, generator=gen, dtype=torch.float64)
    k = torch.randn(len(TOKENS), D_K, generator=gen, dtype=torch.float64)
    return [[round(x, 3) for x in row] for row in q.tolist()], [[round(x, 3) for x in row] for row in k.tolist()]


def reference_weights(scale: bool, temperature: float, causal: bool, pad: bool) -> list[list[float]]:
    """读者代码算出的权重 (n, n)：softmax(QKᵀ·c/τ)，c = 1/√d_k（scale）或 1；掩掉的位置权重为 0。
    scaled_dot_product_attention 自己除以 √d_k，所以把 Q 先乘上 (√d_k 或 1)/τ。"""
    q, k = (torch.tensor(m, dtype=torch.float64) for m in inputs())
    n = len(TOKENS)
    factor = (1.0 if scale else math.sqrt(D_K)) / temperature
    mask = torch.ones(n, n, dtype=torch.bool)
    if causal:
        mask &= causal_mask(n)
    if pad:
        mask[:, n - 1] = False  # 最后一个键是填充：谁也不看它
    _, weights = scaled_dot_product_attention(q * factor, k, torch.zeros(n, 1, dtype=torch.float64), mask)
    return weights.tolist()


def _heatmap(weights: list[list[float]]) -> str:
    head = "".join(f'<th scope="col">{html.escape(t)}</th>' for t in TOKENS)
    rows = []
    for i, row in enumerate(weights):
        cells = "".join(f'<td data-w="{w!r}" style="--w:{w:.4f}">{w:.2f}</td>' for w in row)
        rows.append(f'<tr><th scope="row">{html.escape(TOKENS[i])}</th>{cells}</tr>')
    return (f'<table class="widget-heatmap"><caption>权重矩阵：行是查询，列是键，每行和为 1</caption>'
            f'<thead><tr><td></td>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>')


def _bars(weights: list[list[float]], query: int) -> str:
    items = "".join(f'<li><span class="widget-bar-label">{html.escape(TOKENS[j])}</span>'
                    f'<span class="widget-bar" style="--w:{w:.4f}"></span>'
                    f'<span class="widget-bar-value" data-w="{w!r}">{w:.3f}</span></li>'
                    for j, w in enumerate(weights[query]))
    return f'<ul class="widget-bars" aria-label="查询「{html.escape(TOKENS[query])}」的权重">{items}</ul>'


def widget_html() -> str:
    q, k = inputs()
    weights = reference_weights(DEFAULT["scale"], DEFAULT["temperature"], DEFAULT["causal"], DEFAULT["pad"])
    data = json.dumps({"tokens": TOKENS, "q": q, "k": k, "temperatures": TEMPERATURES, "default": DEFAULT},
                      ensure_ascii=False, separators=(",", ":"))
    ticks = TEMPERATURES.index(DEFAULT["temperature"])
    options = "".join(f'<option value="{i}"{" selected" if i == DEFAULT["query"] else ""}>{html.escape(t)}</option>'
                      for i, t in enumerate(TOKENS))
    controls = (
        '<div class="widget-controls">'
        '<label><input type="checkbox" name="scale" checked> 除以 √d<sub>k</sub></label>'
        f'<label>温度 τ <input type="range" name="temperature" min="0" max="{len(TEMPERATURES) - 1}" step="1" '
        f'value="{ticks}" aria-valuetext="{DEFAULT["temperature"]:g}"> <output>{DEFAULT["temperature"]:g}</output></label>'
        '<label><input type="checkbox" name="causal"> 因果掩码</label>'
        '<label><input type="checkbox" name="pad"> 最后一个词元是填充</label>'
        f'<label>看哪个查询 <select name="query">{options}</select></label>'
        '</div>')
    return (f'<figure class="widget widget-attention" data-widget="attention" data-widget-src="{SCRIPTS}" '
            f'data-search-exclude>'
            f'<script type="application/json" class="widget-data">{data}</script>'
            f'{controls}<div class="widget-view" aria-live="polite">{_heatmap(weights)}'
            f'{_bars(weights, DEFAULT["query"])}</div>'
            f'<figcaption>动手：注意力权重怎样随缩放、温度和掩码变化（Q、K 固定，d<sub>k</sub> = {D_K}）</figcaption>'
            f'</figure>\n')


def render_widget(results: list[dict], out_dir: Path) -> None:
    write_text(out_dir, MD, widget_html())


RENDERERS = [render_widget]
