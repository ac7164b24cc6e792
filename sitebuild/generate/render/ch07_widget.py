"""第 07 章可以动手的部件（widget）：docs/generated/widget-positional.md。

**位置编码**：d = 16 的正弦编码，位置 0–63。三个滑块：位置 p、底数 b、第几对 i。
- 热图：PE 的 64 × 16 个数（横轴位置、纵轴维度），竖线标出 p；下面一张表列出每一对的角频率 ω_i
  与 PE(p) 的 sin、cos 两个分量。
- 曲线：PE(p)·PE(j)，j = 0 … 63。峰在 j = p、高 d/2，两侧对称，形状不随 p 变（只依赖 j − p）。
- RoPE：一个固定向量 x 的第 i 对被转过 p·θ_i（θ_i = ω_i），画在单位圆里，列出角度、波长与转后的两个数。
参考值来自读者代码 ``snippets.positional`` 的 ``sinusoidal_positional_encoding``、``rope_frequencies``、
``apply_rope``（float64）；浏览器里是 docs/assets/widgets/positional-math.js，tests/browser/test_widgets.py
逐项比较。默认状态（没有脚本、打印和 PDF）由这里写出，热图是一张 64 × 16 像素的 PNG。

同样的输入得到逐字节相同的文件。
"""

from __future__ import annotations

import base64
import io
import json
import math
from pathlib import Path

import torch
from PIL import Image

from sitebuild.generate.render._style import write_text
from sitebuild.generate.render._widget import figure, slider
from snippets.positional import apply_rope, rope_frequencies, sinusoidal_positional_encoding

MD = "widget-positional.md"
D = 16
POSITIONS = 64
BASES = [100, 1000, 10000, 500000]
DEFAULT = {"p": 10, "base": 10000, "pair": 1}
SEED = 7
SCRIPTS = "widgets/positional-math.js widgets/positional.js"
# 热图的两种颜色（正、负），透明度 = |值|：在浅色与深色底上都看得清（与 positional.js 相同）
POSITIVE, NEGATIVE = (64, 81, 181), (230, 81, 0)
CURVE = {"width": 320, "height": 120, "pad": 6}  # 曲线的 viewBox（与 positional.js 相同）


def rope_vector() -> list[float]:
    """RoPE 面板里被旋转的固定向量 x，(d,)，取 3 位小数。"""
    gen = torch.Generator().manual_seed(SEED)
    return [round(v, 3) for v in torch.randn(D, generator=gen, dtype=torch.float64).tolist()]


def reference(p: int, base: float, pair: int) -> dict:
    """读者代码在这一状态下的全部数（float64）。"""
    pe = sinusoidal_positional_encoding(POSITIONS, D, torch.float64, base)            # (64, d)
    theta = rope_frequencies(D, base, torch.float64)                                  # (d/2,)
    x = torch.tensor(rope_vector(), dtype=torch.float64)[None, :]                     # (1, d)
    rotated = apply_rope(x, positions=torch.tensor([p]), base=base)[0]                # (d,)
    return {
        "omega": theta.tolist(),
        "pe": pe[p].tolist(),
        "gram": (pe @ pe[p]).tolist(),                                                # PE(p)·PE(j)
        "angle": p * theta[pair].item(),
        "wavelength": 2 * math.pi / theta[pair].item(),
        "pair": [x[0, 2 * pair].item(), x[0, 2 * pair + 1].item()],
        "rotated": rotated[2 * pair:2 * pair + 2].tolist(),
    }


def heatmap_png(base: float) -> str:
    """PE 的热图：64 × 16 像素，横轴位置、纵轴维度（0 在上），正值一种颜色、负值另一种。"""
    pe = sinusoidal_positional_encoding(POSITIONS, D, torch.float64, base)
    image = Image.new("RGBA", (POSITIONS, D))
    for pos in range(POSITIONS):
        for dim in range(D):
            v = pe[pos, dim].item()
            image.putpixel((pos, dim), (*(POSITIVE if v >= 0 else NEGATIVE), round(abs(v) * 255)))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", optimize=True)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


def curve_points(values: list[float]) -> str:
    """PE(p)·PE(j) 的折线：j 映到横轴，值 −d/2 … d/2 映到纵轴。"""
    w, h, pad = CURVE["width"], CURVE["height"], CURVE["pad"]
    half = D / 2
    return " ".join(f"{pad + j * (w - 2 * pad) / (len(values) - 1):.1f},"
                    f"{pad + (half - v) * (h - 2 * pad) / (2 * half):.1f}" for j, v in enumerate(values))


def _v(value: float, digits: int = 3) -> str:
    return f'<span data-v="{value!r}">{value:.{digits}f}</span>'


def _table(r: dict, pair: int) -> str:
    current = ' class="widget-current"'
    rows = "".join(f'<tr{current if i == pair else ""}><th scope="row">{i}</th>'
                   f'<td>{_v(r["omega"][i], 4)}</td><td>{_v(r["pe"][2 * i])}</td><td>{_v(r["pe"][2 * i + 1])}</td></tr>'
                   for i in range(D // 2))
    return ('<table class="widget-pe-table"><caption>PE(p) 的 8 对分量：sin(pω<sub>i</sub>)、cos(pω<sub>i</sub>)</caption>'
            '<thead><tr><th scope="col">对 i</th><th scope="col">ω<sub>i</sub></th><th scope="col">sin</th>'
            f'<th scope="col">cos</th></tr></thead><tbody>{rows}</tbody></table>')


def _rope(r: dict) -> str:
    c = 60  # 圆心与半径（viewBox 0 0 120 120）
    norm = math.hypot(*r["pair"])
    def end(v): return f'x2="{c + 50 * v[0] / norm:.2f}" y2="{c - 50 * v[1] / norm:.2f}"'
    return ('<div class="widget-panel" data-panel="rope"><p class="widget-panel-title">RoPE：第 i 对转过 pθ<sub>i</sub></p>'
            f'<svg class="widget-rope" viewBox="0 0 120 120" role="img" aria-label="第 i 对旋转前后的两个向量">'
            f'<circle cx="{c}" cy="{c}" r="50"/><line class="widget-rope-before" x1="{c}" y1="{c}" {end(r["pair"])}/>'
            f'<line class="widget-rope-after" x1="{c}" y1="{c}" {end(r["rotated"])}/></svg>'
            f'<p class="widget-readout">角度 pθ<sub>i</sub> = <span data-key="angle" data-v="{r["angle"]!r}">{r["angle"]:.3f}</span> rad，'
            f'波长 2π/θ<sub>i</sub> = <span data-key="wavelength" data-v="{r["wavelength"]!r}">{r["wavelength"]:.1f}</span> 个位置；'
            f'(<span data-key="pair0">{r["pair"][0]:.3f}</span>, <span data-key="pair1">{r["pair"][1]:.3f}</span>) → (<span data-key="rotated0" data-v="{r["rotated"][0]!r}">'
            f'{r["rotated"][0]:.3f}</span>, <span data-key="rotated1" data-v="{r["rotated"][1]!r}">{r["rotated"][1]:.3f}</span>)</p></div>')


def widget_html() -> str:
    p, base, pair = DEFAULT["p"], DEFAULT["base"], DEFAULT["pair"]
    r = reference(p, base, pair)
    data = json.dumps({"d": D, "positions": POSITIONS, "bases": BASES, "x": rope_vector(), "default": DEFAULT,
                       "curve": CURVE, "positive": POSITIVE, "negative": NEGATIVE}, separators=(",", ":"))
    controls = (slider("位置 p", "p", list(range(POSITIONS)), p) + slider("底数 b", "base", BASES, base)
                + slider("第几对 i", "pair", list(range(D // 2)), pair))
    cursor = f'style="--x:{(p + 0.5) / POSITIONS:.4f}"'
    gram_max = D / 2
    mid = CURVE["height"] / 2                                                         # 内积 = 0 的水平线
    x = CURVE["pad"] + p * (CURVE["width"] - 2 * CURVE["pad"]) / (POSITIONS - 1)        # j = p 的竖线
    view = ('<div class="widget-view widget-panels" aria-live="polite">'
            '<div class="widget-panel" data-panel="map"><p class="widget-panel-title">正弦编码：横轴位置 0–63，纵轴维度 0–15</p>'
            f'<div class="widget-pe-map"><img src="{heatmap_png(base)}" width="{POSITIONS}" height="{D}" '
            f'alt="位置编码热图：上面几行（高频）变化快，下面几行（低频）几乎不变"><span class="widget-cursor" {cursor}></span></div>'
            f'{_table(r, pair)}</div>'
            '<div class="widget-panel" data-panel="gram"><p class="widget-panel-title">PE(p)·PE(j)，j = 0–63</p>'
            f'<svg class="widget-curve" viewBox="0 0 {CURVE["width"]} {CURVE["height"]}" role="img" '
            f'aria-label="内积曲线：峰在 j = p，高 {gram_max:g}，两侧对称">'
            f'<line class="widget-curve-zero" x1="0" y1="{mid:g}" x2="{CURVE["width"]}" y2="{mid:g}"/>'
            f'<line class="widget-curve-cursor" x1="{x:.1f}" y1="0" x2="{x:.1f}" y2="{CURVE["height"]}"/>'
            f'<polyline points="{curve_points(r["gram"])}" data-v="{json.dumps(r["gram"])}"/></svg>'
            f'<p class="widget-readout">峰在 j = <span data-key="peak">{p}</span>，高 {gram_max:g}（= d/2）</p></div>'
            f'{_rope(r)}</div>')
    return figure("positional", SCRIPTS, data, controls, view,
                  f"动手：拖动位置，内积曲线只平移、形状不变；调底数，低频的几对转得更慢（d = {D}）")


def render_widget(results: list[dict], out_dir: Path) -> None:
    write_text(out_dir, MD, widget_html())


RENDERERS = [render_widget]
