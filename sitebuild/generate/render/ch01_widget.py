"""第 01 章可以动手的部件（widget）：docs/generated/widget-gradients.md。

**梯度随距离**：同一条输入序列（n = 60，d = 8，固定的标准正态数）喂给页面上的 tanh RNN 与 LSTM，
画出隔 k 步的雅可比矩阵的谱范数，k = 1 … 50，纵轴对数：
- tanh RNN：‖∂h_T/∂h_{T−k}‖₂，W_hh = ρQ（Q 固定的正交矩阵）、W_xh = I、b = 0；滑块是 ρ。
  参考值是读者代码 ``snippets.rnn.gradient_norms``（RNN 一页展示的函数）。
- LSTM：‖∂c_T/∂c_{T−k}‖₂ 的完整路径与只沿 c_t = f_t ⊙ c_{t−1} 的直接路径；权重固定，滑块是遗忘门偏置 b_f。
  参考值是读者代码 ``snippets.lstm.cell_state_jacobians``（LSTM 一页展示的函数）。
浏览器里是 docs/assets/widgets/gradients-math.js（谱范数借用 saturation-math.js 的对称特征值），
tests/browser/test_widgets.py 逐项比较。权重与输入取 3 位小数，页面上的数据就是它们本身。

同样的输入得到逐字节相同的文件。
"""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path

import torch

from sitebuild.generate.render._style import write_text
from sitebuild.generate.render._widget import figure, slider
from snippets.lstm import LSTMCell, cell_state_jacobians
from snippets.rnn import RNNLayer, gradient_norms

MD = "widget-gradients.md"
D = 8
N = 60
K_MAX = 50
SEED = 11
RHOS = [0.5, 0.9, 1.0, 1.1, 1.5, 2.0]
FORGET_BIASES = [-2.0, 0.0, 1.0, 2.0, 3.0, 5.0]
DEFAULT = {"rho": 1.0, "forget_bias": 1.0}
SCRIPTS = "widgets/saturation-math.js widgets/gradients-math.js widgets/gradients.js"
CHART = {"width": 320, "height": 180, "left": 34, "right": 6, "top": 6, "bottom": 22, "low": -48, "high": 8}
F64 = torch.float64


def _rounded(t: torch.Tensor, digits: int = 3) -> list:
    return torch.round(t, decimals=digits).tolist()


@functools.cache
def inputs() -> dict:
    """固定的 Q (d, d)、输入 x (n, d) 与 LSTM 的 w_ih、w_hh (4d, d)、b (4d,)，都取 3 位小数。"""
    gen = torch.Generator().manual_seed(SEED)
    q, r = torch.linalg.qr(torch.randn(D, D, generator=gen, dtype=F64))
    q = q * torch.sign(torch.diagonal(r)).unsqueeze(0)                           # 正交矩阵，符号规范化
    x = torch.randn(N, D, generator=gen, dtype=F64)
    bound = 1 / math.sqrt(D)                                                      # 与 LSTMCell 的初始化相同
    lstm = {name: (torch.rand(*shape, generator=gen, dtype=F64) * 2 - 1) * bound
            for name, shape in (("w_ih", (4 * D, D)), ("w_hh", (4 * D, D)), ("b", (4 * D,)))}
    return {"q": _rounded(q), "x": _rounded(x), **{k: _rounded(v) for k, v in lstm.items()}}


def _spectral(j: torch.Tensor) -> float:
    return torch.linalg.matrix_norm(j, ord=2).item()


@functools.cache
def reference_rnn(rho: float) -> list[float]:
    """‖∂h_T/∂h_{T−k}‖₂，k = 1 … K_MAX：页面上的 RNNLayer 与 gradient_norms，float64。"""
    data = inputs()
    layer = RNNLayer(D, D).to(F64)
    w_hh = rho * torch.tensor(data["q"], dtype=F64)
    with torch.no_grad():
        layer.cell.w_hh.copy_(w_hh)
        layer.cell.w_xh.copy_(torch.eye(D, dtype=F64))
        layer.cell.b.zero_()
        hs = layer(torch.tensor(data["x"], dtype=F64)[None])[0]                   # (n, d)
    return gradient_norms(hs, w_hh, K_MAX).tolist()


@functools.cache
def reference_lstm(forget_bias: float) -> dict[str, list[float]]:
    """‖∂c_T/∂c_{T−k}‖₂ 的完整路径与直接路径，k = 1 … K_MAX：页面上的 LSTMCell 与 cell_state_jacobians。"""
    data = inputs()
    cell = LSTMCell(D, D).to(F64)
    with torch.no_grad():
        for name in ("w_ih", "w_hh", "b"):
            getattr(cell, name).copy_(torch.tensor(data[name], dtype=F64))
        cell.b[D:2 * D] = forget_bias                                              # b_f：第二块
    x, zeros = torch.tensor(data["x"], dtype=F64), torch.zeros(D, dtype=F64)
    full, direct = [], []
    for k in range(1, K_MAX + 1):
        d_k, f_k = cell_state_jacobians(cell, x, zeros, zeros, k)
        direct.append(_spectral(d_k))
        full.append(_spectral(f_k))
    return {"full": full, "direct": direct}


def chart_points(values: list[float]) -> str:
    """k = 1 … K_MAX 映到横轴，log₁₀(值) 映到纵轴（夹在 low … high 之间）。"""
    c = CHART
    w, h = c["width"] - c["left"] - c["right"], c["height"] - c["top"] - c["bottom"]
    def y(v): return c["top"] + (c["high"] - min(max(math.log10(v), c["low"]), c["high"])) * h / (c["high"] - c["low"])
    return " ".join(f"{c['left'] + i * w / (len(values) - 1):.1f},{y(v):.1f}" for i, v in enumerate(values))


def sci(x: float) -> str:
    """2 位有效数字的科学记数法，如 3.1×10<sup>−7</sup>（与 gradients.js 相同）。"""
    e = math.floor(math.log10(x))
    m = x / 10 ** e
    if round(m, 1) >= 10:
        m, e = m / 10, e + 1
    exponent = f"−{-e}" if e < 0 else str(e)
    return f"{m:.1f}×10<sup>{exponent}</sup>"


def _axes() -> str:
    c = CHART
    h = c["height"] - c["top"] - c["bottom"]
    ticks = []
    for e in range(c["low"], c["high"] + 1, 4 if c["high"] - c["low"] <= 24 else 8):
        y = c["top"] + (c["high"] - e) * h / (c["high"] - c["low"])
        label = "1" if e == 0 else f"1e{e}"
        ticks.append(f'<line class="widget-grid" x1="{c["left"]}" y1="{y:.1f}" x2="{c["width"] - c["right"]}" y2="{y:.1f}"/>'
                     f'<text x="{c["left"] - 3}" y="{y + 3:.1f}" text-anchor="end">{label}</text>')
    w = c["width"] - c["left"] - c["right"]
    for k, anchor in ((1, "start"), (25, "middle"), (K_MAX, "end")):
        x = c["left"] + (k - 1) * w / (K_MAX - 1)
        ticks.append(f'<text x="{x:.1f}" y="{c["height"] - 6}" text-anchor="{anchor}">k={k}</text>')
    return "".join(ticks)


SERIES = (("rnn", "tanh RNN：‖∂h<sub>T</sub>/∂h<sub>T−k</sub>‖"),
          ("lstm", "LSTM：‖∂c<sub>T</sub>/∂c<sub>T−k</sub>‖（完整）"),
          ("direct", "LSTM 直接路径 ∏diag(f)"))


def widget_html() -> str:
    rnn = reference_rnn(DEFAULT["rho"])
    lstm = reference_lstm(DEFAULT["forget_bias"])
    values = {"rnn": rnn, "lstm": lstm["full"], "direct": lstm["direct"]}
    data = json.dumps({**inputs(), "d": D, "n": N, "k_max": K_MAX, "rho": RHOS, "forget_bias": FORGET_BIASES,
                       "default": DEFAULT, "chart": CHART}, separators=(",", ":"))
    controls = (slider("RNN 的 ρ", "rho", RHOS, DEFAULT["rho"])
                + slider("LSTM 的 b<sub>f</sub>", "forget_bias", FORGET_BIASES, DEFAULT["forget_bias"]))
    lines = "".join(f'<polyline class="widget-series-{name}" points="{chart_points(v)}" data-v="{json.dumps(v)}"/>'
                    for name, v in values.items())
    legend = "".join(f'<li class="widget-series-{name}"><span class="widget-swatch"></span>{label}：k = {K_MAX} 时 '
                     f'<span data-key="{name}" data-v="{values[name][-1]!r}">{sci(values[name][-1])}</span></li>'
                     for name, label in SERIES)
    c = CHART
    view = ('<div class="widget-view" aria-live="polite">'
            f'<svg class="widget-chart" viewBox="0 0 {c["width"]} {c["height"]}" role="img" '
            f'aria-label="隔 k 步的雅可比矩阵范数，纵轴对数，从 1e{c["low"]} 到 1e{c["high"]}">{_axes()}{lines}</svg>'
            f'<ul class="widget-legend">{legend}</ul></div>')
    return figure("gradients", SCRIPTS, data, controls, view,
                  f"动手：同一条输入（n = {N}，d = {D}），隔 k 步的梯度因子怎样随 ρ 与 b<sub>f</sub> 变化（谱范数，纵轴对数）")


def render_widget(results: list[dict], out_dir: Path) -> None:
    write_text(out_dir, MD, widget_html())


RENDERERS = [render_widget]
