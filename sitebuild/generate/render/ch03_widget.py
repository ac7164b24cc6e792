"""第 03 章可以动手的两个部件（widget）：docs/generated/widget-attention.md、widget-saturation.md。

**注意力游乐场**（widget-attention.md）
页面上是一个可以动手的小部件：5 个词元、固定的 Q、K（d_k = 4），开关「除以 √d_k」、温度 τ、
因果掩码、最后一个词元是填充，看权重矩阵（热图）和一个查询的那一行（条形）。这里写出它的 HTML：
控件、默认状态的热图与条形（没有脚本、打印和 PDF 看到的就是它），以及脚本要用的数据（词元、Q、K）。
权重由读者代码 ``snippets.attention.scaled_dot_product_attention`` 算出；浏览器里的
docs/assets/widgets/attention-math.js 重算同样的数，tests/browser/test_widgets.py 逐项比较两者。

**softmax 饱和**（widget-saturation.md）：一行 8 个固定的标准正态数 g，d_k 与分数尺度 σ 两个滑块；
并排显示不缩放（z = σ√d_k·g，点积的方差是 d_k）与除以 √d_k（z = σ·g）两种 softmax 的权重、最大权重
和雅可比矩阵的谱范数 ‖J‖₂。参考值来自 ``snippets.softmax.softmax_jacobian``，浏览器里是
docs/assets/widgets/saturation-math.js。

同样的输入得到逐字节相同的文件。
"""

from __future__ import annotations

import html
import json
import math
import re
from pathlib import Path

import torch

from sitebuild.generate.render._style import write_text
from sitebuild.generate.render._widget import figure, slider
from snippets.attention import causal_mask, scaled_dot_product_attention
from snippets.softmax import softmax_jacobian, stable_softmax

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
    options = "".join(f'<option value="{i}"{" selected" if i == DEFAULT["query"] else ""}>{html.escape(t)}</option>'
                      for i, t in enumerate(TOKENS))
    controls = ('<label><input type="checkbox" name="scale" checked> 除以 √d<sub>k</sub></label>'
                + slider("温度 τ", "temperature", TEMPERATURES, DEFAULT["temperature"])
                + '<label><input type="checkbox" name="causal"> 因果掩码</label>'
                '<label><input type="checkbox" name="pad"> 最后一个词元是填充</label>'
                f'<label>看哪个查询 <select name="query">{options}</select></label>')
    view = (f'<div class="widget-view" aria-live="polite">{_heatmap(weights)}'
            f'{_bars(weights, DEFAULT["query"])}</div>')
    return figure("attention", SCRIPTS, data, controls, view,
                   f"动手：注意力权重怎样随缩放、温度和掩码变化（Q、K 固定，d<sub>k</sub> = {D_K}）")


def render_widget(results: list[dict], out_dir: Path) -> None:
    write_text(out_dir, MD, widget_html())


# ---------------------------------------------------------------------------------- saturation

SAT_MD = "widget-saturation.md"
SAT_N = 8
SAT_SEED = 5
D_K_VALUES = [1, 4, 16, 64, 256, 1024]
SIGMAS = [0.5, 1.0, 2.0]
SAT_DEFAULT = {"d_k": 64, "sigma": 1.0}
SAT_SCRIPTS = "widgets/saturation-math.js widgets/saturation.js"


def scores() -> list[float]:
    """一行 n 个标准正态数 g，取 3 位小数（页面上的数据就是它们本身）。"""
    gen = torch.Generator().manual_seed(SAT_SEED)
    return [round(x, 3) for x in torch.randn(SAT_N, generator=gen, dtype=torch.float64).tolist()]


def reference_saturation(d_k: int, sigma: float) -> dict[str, dict]:
    """两种 logits 的 softmax、最大权重与 ‖J‖₂（读者代码的 stable_softmax、softmax_jacobian，float64）。"""
    g = torch.tensor(scores(), dtype=torch.float64)
    out = {}
    for name, z in (("unscaled", sigma * math.sqrt(d_k) * g), ("scaled", sigma * g)):
        p = stable_softmax(z)                                        # (n,)
        out[name] = {"p": p.tolist(), "max": p.max().item(),
                     "jacobian_norm": torch.linalg.matrix_norm(softmax_jacobian(z), ord=2).item()}
    return out


def small(x: float) -> str:
    """3 位小数；小于 0.001 的数写成 7.44×10⁻⁵（与 saturation.js 的 small 相同）。"""
    if x == 0 or x >= 1e-3:
        return f"{x:.3f}"
    e = math.floor(math.log10(x))
    return f"{x / 10 ** e:.2f}×10<sup>−{-e}</sup>"


def _sat_panel(name: str, title: str, r: dict) -> str:
    items = "".join(f'<li><span class="widget-bar-label">{j + 1}</span>'
                    f'<span class="widget-bar" style="--w:{p:.4f}"></span>'
                    f'<span class="widget-bar-value" data-w="{p!r}">{p:.3f}</span></li>' for j, p in enumerate(r["p"]))
    return (f'<div class="widget-panel" data-panel="{name}"><p class="widget-panel-title">{title}</p>'
            f'<ul class="widget-bars" aria-label="{re.sub("<[^>]+>", "", title)}：{len(r["p"])} 个键的权重">{items}</ul>'
            f'<p class="widget-readout">最大权重 <span data-key="max" data-v="{r["max"]!r}">{r["max"]:.3f}</span>，'
            f'‖J‖<sub>2</sub> = <span data-key="jacobian_norm" data-v="{r["jacobian_norm"]!r}">'
            f'{small(r["jacobian_norm"])}</span></p></div>')


def saturation_html() -> str:
    ref = reference_saturation(SAT_DEFAULT["d_k"], SAT_DEFAULT["sigma"])
    data = json.dumps({"g": scores(), "d_k": D_K_VALUES, "sigma": SIGMAS, "default": SAT_DEFAULT},
                      separators=(",", ":"))
    controls = (slider("d<sub>k</sub>", "d_k", D_K_VALUES, SAT_DEFAULT["d_k"])
                + slider("分数尺度 σ", "sigma", SIGMAS, SAT_DEFAULT["sigma"]))
    panels = (_sat_panel("unscaled", "不缩放：z = σ√d<sub>k</sub>·g", ref["unscaled"])
              + _sat_panel("scaled", "除以 √d<sub>k</sub>：z = σ·g", ref["scaled"]))
    return figure("saturation", SAT_SCRIPTS, data, controls,
                   f'<div class="widget-view widget-panels" aria-live="polite">{panels}</div>',
                   f"动手：同一行分数（g 固定，n = {SAT_N}），不缩放时 d<sub>k</sub> 越大越接近独热，"
                   "雅可比矩阵的范数随之趋于 0")


def render_saturation(results: list[dict], out_dir: Path) -> None:
    write_text(out_dir, SAT_MD, saturation_html())


RENDERERS = [render_widget, render_saturation]
