"""站点统一的图表风格：matplotlib 的确定性 SVG、调色板，以及所有生成文件共用的说明文字（caption）。

用法（usage）::

    from sitebuild.generate.render._style import new_figure, save_svg, PALETTE
    apply_style()                      # 设置 rcParams（幂等，可重复调用）
    fig, ax = new_figure()             # 或者 plt.subplots()，尺寸自定
    ax.plot(x, y, color=PALETTE[0])
    save_svg(fig, "docs/generated/xxx.svg", sources=[r])   # r：画图用到的结果（出处说明由此生成）

设计要点（why these settings）:

- ``svg.fonttype = "none"``：文字保留为 SVG ``<text>``，由浏览器用页面字体渲染（中文也能显示，
  可被搜索/复制）；字体族列表以 ``sans-serif`` 结尾，浏览器总能找到一个字体。
- ``svg.hashsalt`` 固定、``metadata={"Date": None}``：同样的输入得到逐字节相同的 SVG
  （clip-path 等 id 由 hashsalt 决定，不含日期）。
- 按手机宽度设计（phone-first）：图宽 ``FIG_WIDTH`` = 4.2 英寸（约 300 pt），所有文字 ≥ ``MIN_FONT``
  = 10 pt。手机正文栏宽约 358 CSS px（390 px 屏幕），图被缩放到这个宽度时文字约 11.5 px；桌面上
  图按原尺寸显示（CSS ``max-width: 100%``，不放大），文字约 13 px。多幅子图上下堆叠，图例放在坐标轴
  外面（下方），曲线同时用颜色、标记和线型区分。对数刻度写成 1e-6 这样的普通文字，不用 mathtext：
  mathtext 的上标字号只有 70%（中文字体也没有 Unicode 上标数字）。
- 背景透明；调色板在白底（Material 默认）和深色 slate 底上对比度都 ≥ 3:1（见 ``contrast_ratio``，
  测试会检查）。文字与坐标轴用深灰 ``TEXT_COLOR``；``sitebuild.generate.figures`` 另存一份把它换成浅灰
  ``DARK_TEXT_COLOR`` 的 ``*-dark.svg``，页面用 ``#only-light`` / ``#only-dark`` 各显示一份。
- 出处（设备、torch 版本、日期、commit）不画进图里：``save_svg(fig, path, sources=[r])`` 只把结果
  文件名写进 SVG 的元数据（``dc:source``），``sitebuild.generate.figures`` 据此写出图旁边的一行 HTML
  说明（``<图名>.source.md``，页面用 ``--8<--`` 引入）。表格下面是同样的一行（``md_caption``）。

种子间的波动（spread）：多个种子的量一律经 ``snippets.stats.summarize`` 汇总。表格的格子写
``mean_range(values, fmt)`` =「均值（最小–最大）」，只写范围时用 ``value_range``；图里用 ``seed_errorbars``
画误差棒（均值，竖线到最小与最大）。

本模块只依赖 matplotlib；``snippets.stats``（它导入 torch）在这几个函数里才导入。
"""

from __future__ import annotations

import math
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
# 文字、坐标轴、网格：浅色页面上用深灰（对白底 9.5:1）；*-dark.svg 里换成浅灰（对 slate 底 9.8:1）。
TEXT_COLOR = "#41464d"
DARK_TEXT_COLOR = "#c5c9d0"
GRID_COLOR = TEXT_COLOR + "40"  # 同色，25% 不透明度
# 曲线的标记与线型：与颜色一起区分系列（色觉差异、黑白打印）。
MARKERS: list[str] = ["o", "s", "^", "D", "v", "P", "X", "*"]
LINESTYLES: list[str] = ["-", "--", ":", "-."]


def series_style(i: int) -> dict:
    """第 i 条曲线的颜色、标记和线型（三者一起变）；颜色用完一轮后，标记和线型错开，不与前一轮重复。"""
    lap = i // len(PALETTE)
    return {"color": PALETTE[i % len(PALETTE)], "marker": MARKERS[(i + 3 * lap) % len(MARKERS)],
            "linestyle": LINESTYLES[(i + lap) % len(LINESTYLES)]}

# 手机优先的尺寸（见模块说明）。PHONE_COLUMN_PX 是 390 px 屏幕上正文栏的宽度（浏览器测试实测）。
FIG_WIDTH = 4.2
MIN_FONT = 10.0
PHONE_COLUMN_PX = 358
MIN_TEXT_PX = 11.0

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
    "font.size": MIN_FONT,
    "axes.titlesize": 11.0,
    "axes.labelsize": MIN_FONT,
    "xtick.labelsize": MIN_FONT,
    "ytick.labelsize": MIN_FONT,
    "legend.fontsize": MIN_FONT,
    "figure.titlesize": 11.0,
    "legend.frameon": False,
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
    "lines.linewidth": 1.6,
    "lines.markersize": 5.0,
    "figure.figsize": (FIG_WIDTH, 3.2),
    "figure.dpi": 100,
    "savefig.bbox": "tight",
    "savefig.pad_inches": 0.05,
}


def apply_style() -> None:
    """把 ``RC_PARAMS`` 写入 ``matplotlib.rcParams``（幂等）。"""
    matplotlib.rcParams.update(RC_PARAMS)


def new_figure(width: float = FIG_WIDTH, height: float = 3.2, **subplots_kwargs):
    """应用风格后新建一张图，返回 ``(fig, ax)``（或 ``ax`` 数组）。宽度默认是手机宽度。"""
    apply_style()
    return plt.subplots(figsize=(width, height), **subplots_kwargs)


def legend_below(ax, ncol: int = 1, gap: float = 0.5, **kwargs):
    """图例放在坐标轴下方（不压住数据），离坐标轴下沿 ``gap`` 英寸（刻度标签和横轴标签的高度）；
    ``bbox_inches="tight"`` 会把它包进图里。"""
    from matplotlib.transforms import offset_copy

    below = offset_copy(ax.transAxes, fig=ax.figure, y=-gap, units="inches")
    return ax.legend(loc="upper left", bbox_to_anchor=(0.0, 0.0), bbox_transform=below, ncol=ncol,
                     borderaxespad=0.0, handlelength=2.6, **kwargs)


def log_ticks(axis, base: int = 10) -> None:
    """对数坐标的刻度标签用普通文字：以 10 为底写成 0.01、100、1e6、1e-9，以 2 为底写整数。"""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    def label(value, _pos):
        if value <= 0:
            return ""
        if base == 2:
            return f"{value:g}" if value < 1e5 else f"{value:.0e}"
        exp = round(math.log10(value))
        if abs(value / 10.0 ** exp - 1) > 1e-6:
            return ""
        return f"{value:g}" if -2 <= exp <= 3 else f"1e{exp}"

    axis.set_major_locator(LogLocator(base=base, numticks=8))
    axis.set_major_formatter(FuncFormatter(label))
    axis.set_minor_formatter(NullFormatter())


def save_svg(fig, path: str | Path, sources: list[dict] | None = None) -> Path:
    """把 ``fig`` 存成确定性的 SVG 并关闭它；返回路径。

    同一张图、同一台机器（同样的字体度量）保存两次，字节完全相同：
    没有日期元数据，id 由固定的 ``svg.hashsalt`` 生成。``sources`` 是画这张图用到的结果
    （load_all 读入的字典）：它们的文件名写进元数据 ``dc:source``，出处说明由此生成。
    """
    apply_style()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    for text in fig.findobj(matplotlib.text.Text):  # 多行的中文标题：默认行距 1.2 时上下两行会相碰
        if "\n" in text.get_text():
            text.set_linespacing(1.4)
    metadata = {"Date": None}
    if sources:
        metadata["Source"] = " ".join(r["_file"] for r in sources)
    with matplotlib.rc_context(RC_PARAMS):
        fig.savefig(path, format="svg", metadata=metadata, transparent=True)
    plt.close(fig)
    return path


def dark_variant(svg: str) -> str:
    """同一张图给深色页面用：只把文字与坐标轴的深灰换成浅灰（数据颜色在两种底色上都够对比度）。"""
    return svg.replace(TEXT_COLOR, DARK_TEXT_COLOR)


def weight_colormap():
    """注意力权重的色图：0 → 完全透明，1 → 不透明的蓝色；浅色和深色页面上都读得清，不发白光。"""
    from matplotlib.colors import LinearSegmentedColormap, to_rgb

    r, g, b = to_rgb(PALETTE[0])
    return LinearSegmentedColormap.from_list("attn", [(r, g, b, 0.0), (r, g, b, 1.0)])


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


def runtime_label(seconds: float) -> str:
    """一次运行的用时，读者估计重跑要多久用：一分半以内按秒，以上按分钟（取整）。"""
    if seconds < 1:
        return "不到 1 秒"
    return f"{seconds:.0f} 秒" if seconds < 90 else f"{seconds / 60:.0f} 分钟"


def source_line(r: dict) -> str:
    """一个结果文件的出处（Markdown）：设备 · torch · 日期 · commit · 预设 · 用时 · 数据文件。
    用时来自 provenance 的 runtime_s：页面不手写运行时间。"""
    p = r["provenance"]
    dirty = "（工作区有改动）" if p["git"]["dirty"] else ""
    preset = f" · 预设 `{r['preset']}`" if r.get("preset") else ""
    runtime = f" · 用时 {runtime_label(p['runtime_s'])}" if p.get("runtime_s") is not None else ""
    return (f"设备：{device_label(r)} · torch {p['torch_version']} · {p['date_utc'][:10]} · "
            f"commit `{p['git']['commit'][:10]}`{dirty}{preset}{runtime} · 数据文件 `{r['_file']}`")


def md_caption(*results: dict) -> str:
    """图或表下面的出处说明：一段 HTML（class="provenance"，不用斜体），每个结果文件一行。
    不进搜索索引：设备、commit 与文件名不是读者要搜的词（每张图表一行，全站约 15 KB）。"""
    lines = "<br>\n".join(source_line(r) for r in results)
    return f'<p class="provenance" markdown data-search-exclude>{lines}</p>\n'


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
    fig, ax = new_figure(FIG_WIDTH, 1.4)
    ax.axis("off")
    ax.text(0.5, 0.5, f"{title}\n尚无测量结果\n（results/ 中没有对应的结果文件）", ha="center", va="center",
            wrap=True)
    return save_svg(fig, out_dir / name)


# ----------------------------------------------------------------------------- 种子间的波动
SIGNS = ("-", "−", "+")


def _formatter(fmt):
    """``fmt``：格式说明（如 ``".3f"``）或一个把数写成文字的函数。"""
    return (lambda x: format(x, fmt)) if isinstance(fmt, str) else fmt


def value_range(values, fmt=".3f") -> str:
    """各种子的「最小–最大」；有带符号的端点时写「最小 至 最大」（不写「-0.2–-0.1」）。"""
    from snippets.stats import summarize

    s, f = summarize(values), _formatter(fmt)
    lo, hi = f(s.min), f(s.max)
    return f"{lo} 至 {hi}" if lo.startswith(SIGNS) or hi.startswith(SIGNS) else f"{lo}–{hi}"


def same_runs_note(r: dict, full: dict, arm: str) -> str:
    """r 与 full 共有的种子（按 ``arm``、seed 配对）：逐位相同的运行，还是同一种子、不同代码下的另一次运行
    （两个文件的 commit 不同）。"""
    mine = {(x[arm], x["seed"]): x for x in full["runs"]}
    shared = [x for x in r["runs"] if (x[arm], x["seed"]) in mine]
    if not shared:
        return ""
    seeds = sorted({x["seed"] for x in shared})
    if all(x == mine[(x[arm], x["seed"])] for x in shared):
        return f"种子 {seeds} 与上表是同样的运行（逐位相同）。"
    commits = (full["provenance"]["git"]["commit"][:7], r["provenance"]["git"]["commit"][:7])
    return (f"种子 {seeds} 与上表种子相同，但不是同一次运行：两次运行之间读者代码改过（commit {commits[0]} → "
            f"{commits[1]}），同一个种子的训练结果也就不同，本表与上表不能逐种子对照。")


def mean_range(values, fmt=".3f", range_fmt=None) -> str:
    """种子均值与它的范围：「均值（最小–最大）」，数由 ``snippets.stats.summarize`` 算出。

    ``range_fmt`` 是括号里两个端点的写法（默认同 ``fmt``；例如均值写 79.9%、括号里只写 71.7–86.5，
    表头或说明里写明单位）。只有一个种子时没有范围，只写均值。
    """
    from snippets.stats import summarize

    s = summarize(values)
    mean = _formatter(fmt)(s.mean)
    return mean if s.n == 1 else f"{mean}（{value_range(s.values, fmt if range_fmt is None else range_fmt)}）"


def seed_errorbars(groups) -> tuple[list[float], list[list[float]]]:
    """每个点的各种子值 → ``(均值, [[均值 − 最小], [最大 − 均值]])``，直接交给 ``ax.errorbar(x, 均值, yerr=...)``。"""
    from snippets.stats import summarize

    stats = [summarize(g) for g in groups]
    return ([s.mean for s in stats],
            [[s.mean - s.min for s in stats], [s.max - s.mean for s in stats]])


def of_kind(results: list[dict], kind: str) -> list[dict]:
    """results 里 kind 相同的文件（已由 snippets.results 校验过）。"""
    return [r for r in results if r.get("kind") == kind]


def pick(results: list[dict], kind: str, prefer: tuple[str, ...] = ("full", "quick")) -> dict | None:
    """kind 的结果里预设在 ``prefer`` 中最靠前的一个（tiny 只用于测试，不上页面；其他预设另有表格）。"""
    mine = [r for r in of_kind(results, kind) if r.get("preset") in prefer]
    mine.sort(key=lambda r: (prefer.index(r["preset"]), r.get("_file", "")))
    return mine[0] if mine else None


apply_style()
