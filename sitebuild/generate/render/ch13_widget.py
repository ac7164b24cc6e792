"""第 13 章可以动手的部件（widget）：docs/generated/widget-costs.md。

**代价**：一层一个头（头宽 = 模型宽 d，与推导（上）「预算」一节相同）。输入 n（64 … 1,048,576，2 的幂）、
d（64/128/256）、窗口 w，和要看的方法（全注意力、滑动窗口、线性注意力）。
- 上图：FLOPs 随 n（双对数）。三种注意力与线性层 24nd²（虚线），竖线标出 n；三个交点画成圆点：
  全注意力 = 线性注意力（n = d）、全注意力 = 线性层（n = 6d）、窗口离开全注意力（n = w）。
- 下图：解码时每层每头要存的缓存或状态（fp32 字节）随 n。
- 表：当前 n 下三种方法的 FLOPs、缓存与相对全注意力的倍数，选中的方法高亮。
每个数都来自读者代码的闭式 ``snippets.probes.long_context``：``attention_flops``、``linear_layer_flops``、
``decode_state_elems``（探针与第 13 章的测试核对它们）；浏览器里是 docs/assets/widgets/costs-math.js，
tests/browser/test_widgets.py 逐项比较（整数，精确相等）。

同样的输入得到逐字节相同的文件。
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from sitebuild.generate.render._style import write_text
from sitebuild.generate.render._widget import figure, slider
from snippets.probes.long_context import attention_flops, decode_state_elems, linear_layer_flops

MD = "widget-costs.md"
NS = [2 ** k for k in range(6, 21)]                  # 64 … 1,048,576
DS = [64, 128, 256]
WINDOWS = [512, 1024, 2048, 4096, 8192]
METHODS = {"full": "全注意力", "window": "滑动窗口", "linear": "线性注意力"}
BYTES = 4                                            # fp32，与推导（上）的表相同
DEFAULT = {"n": 32768, "d": 128, "w": 4096, "method": "window"}
SCRIPTS = "widgets/costs-math.js widgets/costs.js"
# 两张图的 viewBox 与纵轴范围（log10）：与 costs.js 相同
CHART = {"width": 320, "height": 150, "left": 38, "right": 8, "top": 6, "bottom": 20}
FLOPS_RANGE = (5, 16)                                # 1e5 … 1e16 FLOP
BYTES_RANGE = (3, 10)                                # 1e3 … 1e10 字节


def reference(n: int, d: int, w: int) -> dict:
    """读者代码的闭式在这一状态下的全部数（整数）。"""
    return {
        "flops": {m: attention_flops(n, d, m, w) for m in METHODS},
        "layers": linear_layer_flops(n, d),
        "bytes": {m: BYTES * decode_state_elems(n, d, m, w) for m in METHODS},
        # 交点：全 = 线性（4n²d = 4nd²）、全 = 线性层（4n²d = 24nd²）、窗口离开全注意力（min(n, w) = n 的最后一个 n）
        "cross": {"linear": d, "layers": 6 * d, "window": w},
    }


def curves(d: int, w: int) -> dict[str, list[int]]:
    """两张图上的各条曲线，在 NS 的每个 n 上（整数）。"""
    out = {f"flops-{m}": [attention_flops(n, d, m, w) for n in NS] for m in METHODS}
    out["flops-layers"] = [linear_layer_flops(n, d) for n in NS]
    out |= {f"bytes-{m}": [BYTES * decode_state_elems(n, d, m, w) for n in NS] for m in METHODS}
    return out


def x_of(n: float) -> float:
    """n 在横轴上的位置（log2，NS 的两端占满）。"""
    c = CHART
    span = math.log2(NS[-1]) - math.log2(NS[0])
    return c["left"] + (math.log2(n) - math.log2(NS[0])) * (c["width"] - c["left"] - c["right"]) / span


def y_of(value: float, low: int, high: int) -> float:
    c = CHART
    e = min(max(math.log10(value), low), high)
    return c["top"] + (high - e) * (c["height"] - c["top"] - c["bottom"]) / (high - low)


def points(values: list[int], low: int, high: int) -> str:
    return " ".join(f"{x_of(n):.1f},{y_of(v, low, high):.1f}" for n, v in zip(NS, values))


def amount(value: float, units: list[tuple[str, float]]) -> str:
    """最大的不超过 value 的单位，3 位有效数字左右（与 costs.js 的 amount 相同）。"""
    unit, scale = next(((u, s) for u, s in units if value >= s), units[-1])
    v = value / scale
    return f"{v:.{2 if v < 10 else 1 if v < 100 else 0}f} {unit}"


FLOP_UNITS = [("PFLOP", 1e15), ("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6), ("FLOP", 1)]
BYTE_UNITS = [("GiB", 2 ** 30), ("MiB", 2 ** 20), ("KiB", 2 ** 10), ("B", 1)]


def ratio(value: int, full: int) -> str:
    """相对全注意力：≥ 1 写成「k×」，< 1 写成「1/k」（与 costs.js 相同）。"""
    r = value / full
    def short(x): return f"{x:.{0 if x >= 10 or x == int(x) else 2}f}"
    return f"{short(r)}×" if r >= 1 else f"1/{short(1 / r)}"


def _axes(low: int, high: int, unit: str) -> str:
    c = CHART
    out = []
    for e in range(low, high + 1, 2 if high - low <= 8 else 3):
        y = y_of(10 ** e, low, high)
        out.append(f'<line class="widget-grid" x1="{c["left"]}" y1="{y:.1f}" x2="{c["width"] - c["right"]}" y2="{y:.1f}"/>'
                   f'<text x="{c["left"] - 3}" y="{y + 3:.1f}" text-anchor="end">1e{e}</text>')
    for n, anchor, label in ((NS[0], "start", "n=64"), (1024, "middle", "1K"), (32768, "middle", "32K"),
                             (NS[-1], "end", "1M")):
        out.append(f'<text x="{x_of(n):.1f}" y="{c["height"] - 5}" text-anchor="{anchor}">{label}</text>')
    out.append(f'<text x="{c["left"] + 2}" y="{c["top"] + 9}" text-anchor="start">{unit}</text>')
    return "".join(out)


def _chart(kind: str, series: dict[str, list[int]], low: int, high: int, n: int, r: dict, method: str,
           label: str) -> str:
    c = CHART
    def cls(name): return f'widget-series-{name}' + (" widget-current" if name == method else "")
    lines = "".join(f'<polyline class="{cls(name.split("-")[1])}" data-series="{name}" '
                    f'points="{points(v, low, high)}"/>' for name, v in series.items() if name.startswith(kind))
    x = x_of(n)
    cursor = f'<line class="widget-cursor-line" x1="{x:.1f}" y1="0" x2="{x:.1f}" y2="{c["height"] - c["bottom"]}"/>'
    dots = ""
    if kind == "flops":
        d = r["cross"]["linear"]
        at = {"linear": attention_flops(d, d, "full"), "layers": linear_layer_flops(6 * d, d),
              "window": attention_flops(r["cross"]["window"], d, "full")}
        dots = "".join(f'<circle class="widget-cross" data-cross="{k}" r="3" cx="{x_of(r["cross"][k]):.1f}" '
                       f'cy="{y_of(at[k], low, high):.1f}"/>' for k in ("linear", "layers", "window"))
    unit = "FLOP" if kind == "flops" else "字节"
    return (f'<svg class="widget-chart widget-costs-{kind}" viewBox="0 0 {c["width"]} {c["height"]}" role="img" '
            f'aria-label="{label}">{_axes(low, high, unit)}{lines}{cursor}{dots}</svg>')


def _table(r: dict, method: str) -> str:
    rows = []
    for m, name in METHODS.items():
        current = ' class="widget-current"' if m == method else ""
        rows.append(f'<tr data-method="{m}"{current}><th scope="row">{name}</th>'
                    f'<td data-key="flops" data-v="{r["flops"][m]}">{amount(r["flops"][m], FLOP_UNITS)}</td>'
                    f'<td data-key="bytes" data-v="{r["bytes"][m]}">{amount(r["bytes"][m], BYTE_UNITS)}</td>'
                    f'<td data-key="ratio">{ratio(r["flops"][m], r["flops"]["full"])}</td></tr>')
    return ('<table class="widget-costs-table"><thead><tr><th scope="col">方法</th><th scope="col">FLOPs</th>'
            '<th scope="col">解码缓存</th><th scope="col">FLOPs ÷ 全注意力</th></tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table>')


def _crossings(r: dict) -> str:
    k = r["cross"]
    return ('<p class="widget-readout">交点：全注意力 = 线性注意力在 n = d = '
            f'<span data-key="cross-linear">{k["linear"]:,}</span>；注意力 = 线性层（24nd²）在 n = 6d = '
            f'<span data-key="cross-layers">{k["layers"]:,}</span>；窗口从 n = w = '
            f'<span data-key="cross-window">{k["window"]:,}</span> 起离开全注意力。'
            f'这一层的线性部分：<span data-key="layers" data-v="{r["layers"]}">{amount(r["layers"], FLOP_UNITS)}</span></p>')


SERIES = (("full", "全注意力"), ("window", "滑动窗口"), ("linear", "线性注意力"), ("layers", "线性层 24nd²"))


def widget_html() -> str:
    n, d, w, method = DEFAULT["n"], DEFAULT["d"], DEFAULT["w"], DEFAULT["method"]
    r = reference(n, d, w)
    series = curves(d, w)
    data = json.dumps({"ns": NS, "ds": DS, "windows": WINDOWS, "methods": list(METHODS), "bytes": BYTES,
                       "default": DEFAULT, "chart": CHART, "flops_range": FLOPS_RANGE, "bytes_range": BYTES_RANGE},
                      separators=(",", ":"))
    options = "".join(f'<option value="{m}"{" selected" if m == method else ""}>{name}</option>'
                      for m, name in METHODS.items())
    controls = (slider("序列长度 n", "n", NS, n, ",") + slider("宽度 d", "d", DS, d) + slider("窗口 w", "w", WINDOWS, w, ",")
                + f'<label>方法 <select name="method">{options}</select></label>')
    legend = "".join(f'<li class="widget-series-{k}"><span class="widget-swatch"></span>{name}</li>' for k, name in SERIES)
    view = ('<div class="widget-view" aria-live="polite">'
            f'<p class="widget-panel-title">每层每头一次前向的 FLOPs（双对数，竖线是 n，圆点是交点）</p>'
            f'{_chart("flops", series, *FLOPS_RANGE, n, r, method, "FLOPs 随 n：全注意力斜率 2，线性注意力与线性层斜率 1，窗口在 n = w 处拐弯")}'
            f'<ul class="widget-legend widget-costs-legend">{legend}</ul>'
            f'<p class="widget-panel-title">解码时每层每头的缓存或状态（fp32 字节）</p>'
            f'{_chart("bytes", series, *BYTES_RANGE, n, r, method, "缓存随 n：全注意力线性增长，窗口到 w 为止，线性注意力不变")}'
            f'{_table(r, method)}{_crossings(r)}</div>')
    return figure("costs", SCRIPTS, data, controls, view,
                  "动手：n、d、w 与方法；每个数都由第 13 章的闭式算出（一次乘加记 2 次，不计因果省下的一半）")


def render_widget(results: list[dict], out_dir: Path) -> None:
    write_text(out_dir, MD, widget_html())


RENDERERS = [render_widget]
