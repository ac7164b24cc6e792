"""站点统一的图表风格：matplotlib 的确定性 SVG、调色板，以及所有生成文件共用的说明文字（caption）。

用法（usage）::

    from sitebuild.render.style import new_figure, save_svg, PALETTE, caption
    apply_style()                      # 设置 rcParams（幂等，可重复调用）
    fig, ax = new_figure()             # 或者 plt.subplots()，尺寸自定
    ax.plot(x, y, color=PALETTE[0])
    save_svg(fig, "docs/generated/xxx.svg")

设计要点（why these settings）:

- ``svg.fonttype = "none"``：文字保留为 SVG ``<text>``，由浏览器用页面字体渲染（中文也能显示，
  可被搜索/复制）；字体族列表以 ``sans-serif`` 结尾，浏览器总能找到一个字体。
- ``svg.hashsalt`` 固定、``metadata={"Date": None}``：同样的输入得到逐字节相同的 SVG
  （clip-path 等 id 由 hashsalt 决定，不含日期）。
- 背景透明；调色板与文字颜色在白底（Material 默认）和深色 slate 底上对比度都 ≥ 3:1
  （见 ``contrast_ratio``，测试会检查）。
- 说明文字（``caption``、``md_caption``）写明设备、torch 版本、日期、commit 和结果文件：
  每张生成的图和表都能追溯到产生它的那次运行。

本模块只依赖 matplotlib，不导入 torch。
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # 无显示环境（headless）

import matplotlib.pyplot as plt  # noqa: E402

# 字体族：先中文无衬线字体，再西文，最后是通用族 sans-serif。
# matplotlib 用它排版（测量文字宽度）；SVG 里写的是同一串名字，由浏览器挑选实际字体。
FONT_FAMILY: list[str] = [
    "Noto Sans CJK SC",
    "Source Han Sans SC",
    "PingFang SC",
    "Hiragino Sans GB",
    "Microsoft YaHei",
    "WenQuanYi Micro Hei",
    "DejaVu Sans",
    "sans-serif",
]

# 两种页面背景：Material 默认白底，和 slate 深色方案的背景（hsl(232, 15%, 14%) ≈ #1e2029）。
LIGHT_BACKGROUND = "#ffffff"
DARK_BACKGROUND = "#1e2029"

# 中等亮度的颜色：在两种背景上对比度都 ≥ 3:1（WCAG 对图形元素的要求）。
PALETTE: list[str] = [
    "#2f7fd8",  # 蓝 blue
    "#e8590c",  # 橙 orange
    "#16a34a",  # 绿 green
    "#a855f7",  # 紫 purple
    "#0891b2",  # 青 teal
    "#db2777",  # 粉 pink
    "#b08900",  # 赭 ochre
    "#e03131",  # 红 red
]
# 文字、坐标轴、网格用的灰色（两种背景上对比度都约 4:1）。
TEXT_COLOR = "#7a7f87"
GRID_COLOR = "#7a7f8740"  # 同色，25% 不透明度

SVG_HASHSALT = "transformer-paper-verified"

RC_PARAMS: dict[str, object] = {
    # 确定性 SVG（deterministic output）
    "svg.fonttype": "none",
    "svg.hashsalt": SVG_HASHSALT,
    "svg.image_inline": True,
    "path.simplify": True,
    # 字体（font）：通用族 sans-serif 指向上面的列表；SVG 中会以 "..., sans-serif" 结尾
    "font.family": ["sans-serif"],
    "font.sans-serif": FONT_FAMILY[:-1],
    "font.size": 10.0,
    "axes.unicode_minus": False,  # 负号用 ASCII "-"，任何字体都有
    "mathtext.fontset": "dejavusans",
    # 透明背景（transparent background）
    "figure.facecolor": "none",
    "axes.facecolor": "none",
    "savefig.facecolor": "none",
    "savefig.edgecolor": "none",
    "savefig.transparent": True,
    "legend.framealpha": 0.0,
    "legend.edgecolor": TEXT_COLOR,
    # 颜色（colours readable on light and dark pages）
    "axes.prop_cycle": matplotlib.cycler(color=PALETTE),
    "text.color": TEXT_COLOR,
    "axes.labelcolor": TEXT_COLOR,
    "axes.edgecolor": TEXT_COLOR,
    "axes.titlecolor": TEXT_COLOR,
    "xtick.color": TEXT_COLOR,
    "ytick.color": TEXT_COLOR,
    "xtick.labelcolor": TEXT_COLOR,
    "ytick.labelcolor": TEXT_COLOR,
    "grid.color": GRID_COLOR,
    "axes.grid": True,
    "axes.grid.which": "major",
    "lines.linewidth": 1.8,
    "lines.markersize": 5.0,
    "figure.figsize": (6.4, 4.2),
    "figure.dpi": 100,
    "savefig.bbox": "tight",
    "savefig.pad_inches": 0.05,
}


def apply_style() -> None:
    """把 ``RC_PARAMS`` 写入 ``matplotlib.rcParams``（幂等）。"""
    matplotlib.rcParams.update(RC_PARAMS)


def new_figure(width: float = 6.4, height: float = 4.2, **subplots_kwargs):
    """应用风格后新建一张图，返回 ``(fig, ax)``（或 ``ax`` 数组）。"""
    apply_style()
    return plt.subplots(figsize=(width, height), **subplots_kwargs)


def save_svg(fig, path: str | Path) -> Path:
    """把 ``fig`` 存成确定性的 SVG 并关闭它；返回路径。

    同一张图、同一台机器（同样的字体度量）保存两次，字节完全相同：
    没有日期元数据，id 由固定的 ``svg.hashsalt`` 生成。
    """
    apply_style()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with matplotlib.rc_context(RC_PARAMS):
        fig.savefig(path, format="svg", metadata={"Date": None}, transparent=True)
    plt.close(fig)
    return path


def _relative_luminance(color: str) -> float:
    """WCAG 2 相对亮度（relative luminance），输入 ``#rrggbb``。"""
    r, g, b = matplotlib.colors.to_rgb(color)

    def channel(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)


def contrast_ratio(a: str, b: str) -> float:
    """两种颜色的 WCAG 对比度（1 到 21）。"""
    la, lb = sorted((_relative_luminance(a), _relative_luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)



# ----------------------------------------------------------------------------- 说明文字与表格
NO_RESULTS = "> 尚无测量结果：`results/` 中没有这类结果文件。运行对应的探针或实验（`make probes`、`make experiments`）后再运行 `make figures`。\n"


def device_label(r: dict) -> str:
    dev = r["provenance"]["device"]
    if dev["type"] == "cpu":
        threads = r.get("probes", {}).get("walltime", {}).get("threads", dev.get("threads"))
        return f"CPU {dev['name']}（{threads} 线程）"
    return f"GPU {dev['name']}" + (f"（驱动 {dev['driver']}）" if dev.get("driver") else "")


def caption(r: dict) -> str:
    """一行：设备 · torch · 日期 · 预设 · 结果文件。"""
    p = r["provenance"]
    preset = f" · 预设 {r['preset']}" if r.get("preset") else ""
    return f"设备：{device_label(r)} · torch {p['torch_version']} · {p['date_utc'][:10]}{preset} · 数据：{r['_file']}"


def md_caption(r: dict) -> str:
    """Markdown 表格下方的出处行（斜体），多了 commit 与是否有未提交改动。"""
    p = r["provenance"]
    dirty = "（工作区有改动）" if p["git"]["dirty"] else ""
    return (f"*设备：{device_label(r)}；torch {p['torch_version']}；日期 {p['date_utc']}；"
            f"commit `{p['git']['commit'][:10]}`{dirty}；预设 `{r.get('preset')}`；数据文件 `{r['_file']}`。*\n")


def md_table(head: list[str], rows: list[list]) -> str:
    """Markdown 表格：表头、分隔行、每行一行。"""
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def write_text(out_dir: Path, name: str, text: str) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / name
    path.write_text(text, encoding="utf-8")
    return path


def placeholder_svg(out_dir: Path, name: str, title: str) -> Path:
    """没有结果文件时的占位图：页面的 include 不会断，读者看到的是"尚无结果"。"""
    fig, ax = new_figure(6.4, 2.0)
    ax.axis("off")
    ax.text(0.5, 0.5, f"{title}\n尚无测量结果（results/ 中没有对应的结果文件）", ha="center", va="center")
    return save_svg(fig, out_dir / name)


def of_kind(results: list[dict], kind: str) -> list[dict]:
    """results 里 kind 相同的文件（已由 snippets.results 校验过）。"""
    return [r for r in results if r.get("kind") == kind]


apply_style()
