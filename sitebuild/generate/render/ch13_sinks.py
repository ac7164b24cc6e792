"""第 13 章的注意力汇点实验 → docs/generated/。

由 results/attention-sinks.json（full）、attention-sinks-long.json（long）与 attention-sinks-wide.json（wide；
snippets.experiments.attention_sinks）：
- ch13-sinks.svg         每层每个头放在第一个词元上的注意力质量（远处查询的平均、种子均值）：初始化（对照）与
                         两种开头（plain、bos）训练后；每幅的标题写出各格种子间最大与最小之差的最大值
- ch13-sinks.md          两种开头、逐层：第一个词元、前 4 个词元、中间词元上的质量（头的均值，各种子的均值与范围），
                         表下写出（种子平均后）最大的头，与均匀基线
- ch13-sinks-cache.md    滚动缓存：全注意力、窗口、窗口 + 汇点、窗口 + 中间词元的损失（种子均值与范围，与全注意力之差
                         逐种子先减）；有 wide 预设（800 步、更多种子）的结果时，后面再接它的一行质量与滚动缓存的表
- ch13-sinks-long.md     long 预设：各层第一个词元上的质量（一行）与滚动缓存的表

均值与范围都由逐种子的 runs 经 snippets.stats.summarize 算出。

没有结果文件时写占位图和一行说明。同样的输入得到逐字节相同的文件。
"""

from __future__ import annotations

import statistics
from pathlib import Path

from sitebuild.generate.render._style import (FIG_WIDTH, NO_RESULTS, TEXT_COLOR, md_caption, md_table, mean_range,
                                              new_figure, pick, placeholder_svg, same_runs_note, save_svg, weight_colormap,
                                              write_text)

KIND = "attention-sinks"
CONDITIONS = {"plain": "plain（无开始符号）", "bos": "bos（固定的开始符号）"}
MODES = {"full": "(a) 全注意力", "window": "(b) 窗口", "sinks": "(c) 窗口 + 前 s 个", "middle": "(d) 窗口 + 中间 s 个"}


def runs_of(r: dict, condition: str) -> list[dict]:
    return sorted((run for run in r["runs"] if run["condition"] == condition), key=lambda run: run["seed"])


def head_means(r: dict, condition: str, when: str, key: str) -> list[list[float]]:
    """(层, 头) 的质量，对种子取平均。when：'init' 或 'trained'；key：first1、first2、first4、middle。"""
    grids = [run[f"attention_{when}"]["mass"][key] for run in runs_of(r, condition)]
    return [[statistics.fmean(vals) for vals in zip(*layers)] for layers in zip(*grids)]


def layer_means_per_seed(r: dict, condition: str, when: str, key: str, layer: int) -> list[float]:
    """某一层各头质量的均值，每个种子一个。"""
    return [statistics.fmean(run[f"attention_{when}"]["mass"][key][layer]) for run in runs_of(r, condition)]


def seed_spread(r: dict, condition: str, when: str, key: str) -> float:
    """各格（层, 头）上种子间最大与最小质量之差，取全部格子的最大值。"""
    grids = [run[f"attention_{when}"]["mass"][key] for run in runs_of(r, condition)]
    return max(max(vals) - min(vals) for layers in zip(*grids) for vals in zip(*layers))


def cache_losses(r: dict, condition: str, window: int, mode: str) -> list[float]:
    """滚动缓存的一种掩码下各种子的损失；mode 不是 full 时减去同一种子的全注意力损失。"""
    out = []
    for run in runs_of(r, condition):
        loss = {c["mode"]: c["loss"] for c in run["cache"] if c["window"] == window}
        out.append(loss[mode] if mode == "full" else loss[mode] - loss["full"])
    return out


def uniform(r: dict, key: str) -> float:
    return r["runs"][0]["attention_trained"]["uniform"][key]


def summary_row(r: dict, condition: str, window: int, mode: str) -> dict:
    (row,) = [s for s in r["summary"]
              if s["condition"] == condition and s["window"] == window and s["mode"] == mode]
    return row


def _setup(r: dict) -> str:
    """一行预算（模型与任务的设置写在页面上）。"""
    cfg = r["config"]
    return (f"{cfg['steps']} 步、批 {cfg['batch_size']} × 长度 {cfg['seq_len']}，种子 {cfg['seeds']}，"
            f"单线程 CPU 用时 {r['provenance']['runtime_s']:.0f} 秒。\n\n")


def _mass_table(r: dict) -> str:
    cfg = r["config"]
    head = ["开头", "层", "第一个词元：初始化", "第一个词元：训练后", "前 4 个：训练后", f"中间词元 {cfg['middle']}：训练后"]
    cols = [("init", "first1"), ("trained", "first1"), ("trained", "first4"), ("trained", "middle")]
    rows = []
    for condition in cfg["conditions"]:
        for layer in range(cfg["model"]["n_layers"]):
            rows.append([condition, layer + 1]
                        + [mean_range(layer_means_per_seed(r, condition, when, key, layer), ".3f") for when, key in cols])
    rows.append(["", "均匀基线"] + [f"{uniform(r, key):.3f}" for _, key in cols])
    tops = "；".join(f"「{label}」" + "、".join(f"{c} {max(max(row) for row in head_means(r, c, when, key)):.3f}"
                                             for c in cfg["conditions"])
                    for label, (when, key) in zip(head[2:], cols))
    text = ("每格：t ≥ {far} 的查询放在那里的质量，该层各头的均值；各种子的均值，括号里是最小–最大。"
            "均匀基线 = s/(t+1) 的平均。各头先对种子取平均，最大的一个头（各层中）：{tops}。\n\n").format(far=cfg["far"], tops=tops)
    return md_table(head, rows) + "\n" + text


def _cache_table(r: dict, with_note: bool = True) -> str:
    cfg = r["config"]
    head = ["开头", "w", "(a) 全注意力"] + [f"{label} − (a)" for m, label in MODES.items() if m != "full"]
    rows = []
    for condition in cfg["conditions"]:
        for w in cfg["windows"]:
            cells = []
            for mode in MODES:
                cells.append(mean_range(cache_losses(r, condition, w, mode), ".4f" if mode == "full" else "+.4f"))
            rows.append([condition, w] + cells)
    floors = "、".join(f"{c} {r['task']['entropy_floor'][c]:.4f}" for c in cfg["conditions"])
    note = (f"(a)：t ≥ {cfg['score_from']} 的预测的平均交叉熵（nats）；其余三列减去 (a)，每个种子先减（正 = 变差）。"
            f"每格是各种子的均值，括号里是最小与最大。熵下界：{floors}。\n\n")
    return md_table(head, rows) + "\n" + (note if with_note else "")


def render_mass(results: list[dict], out_dir: Path) -> None:
    r = pick(results, KIND, prefer=("full",))
    if r is None:
        write_text(out_dir, "ch13-sinks.md", NO_RESULTS)
        return
    write_text(out_dir, "ch13-sinks.md", _setup(r) + _mass_table(r) + md_caption(r))


def render_cache(results: list[dict], out_dir: Path) -> None:
    r = pick(results, KIND, prefer=("full",))
    if r is None:
        write_text(out_dir, "ch13-sinks-cache.md", NO_RESULTS)
        return
    wide = pick(results, KIND, prefer=("wide",))
    if wide is None:
        write_text(out_dir, "ch13-sinks-cache.md", _cache_table(r) + md_caption(r))
        return
    more = (f"**{len(wide['config']['seeds'])} 个种子（`--preset wide`）。** 设置同上。" + same_runs_note(wide, r, "condition")
            + _setup(wide) + _first_token_line(wide))
    write_text(out_dir, "ch13-sinks-cache.md",
               _cache_table(r) + more + _cache_table(wide, with_note=False) + "\n" + md_caption(r, wide))


def _first_token_line(r: dict) -> str:
    """训练后第一个词元上的质量：每层的头均值（种子平均），与最大的头。"""
    layers = "；".join(
        f"{c} " + "/".join(f"{statistics.fmean(row):.3f}" for row in head_means(r, c, "trained", "first1"))
        + f"（最大的头 {max(max(row) for row in head_means(r, c, 'trained', 'first1')):.3f}）"
        for c in r["config"]["conditions"])
    return f"训练后第一个词元上的质量（第 1–4 层的头均值）：{layers}；均匀基线 {uniform(r, 'first1'):.3f}。\n\n"


def render_long(results: list[dict], out_dir: Path) -> None:
    r = pick(results, KIND, prefer=("long",))
    if r is None:
        write_text(out_dir, "ch13-sinks-long.md", NO_RESULTS)
        return
    write_text(out_dir, "ch13-sinks-long.md",
               _setup(r) + _first_token_line(r) + _cache_table(r, with_note=False) + "\n" + md_caption(r))


def render_figure(results: list[dict], out_dir: Path) -> None:
    r = pick(results, KIND, prefer=("full",))
    if r is None:
        placeholder_svg(out_dir, "ch13-sinks.svg", "第一个词元上的注意力质量")
        return
    steps = r["config"]["steps"]
    panels = [(f"初始化（对照，bos）\n种子间的差 ≤ {seed_spread(r, 'bos', 'init', 'first1'):.3f}",
               head_means(r, "bos", "init", "first1"))]
    panels += [(f"{c} 训练 {steps} 步后\n种子间的差 ≤ {seed_spread(r, c, 'trained', 'first1'):.3f}",
                head_means(r, c, "trained", "first1")) for c in r["config"]["conditions"]]
    top = max(0.05, max(max(row) for _, g in panels for row in g))
    fig, axes = new_figure(FIG_WIDTH, 2.9 * len(panels), nrows=len(panels))
    for ax, (title, grid) in zip(axes, panels):
        image = ax.imshow(grid, cmap=weight_colormap(), vmin=0.0, vmax=top, interpolation="nearest", aspect="auto")
        for i, row in enumerate(grid):
            for j, a in enumerate(row):
                ax.text(j, i, f"{a:.3f}", ha="center", va="center", fontsize=10,
                        color="white" if a > 0.55 * top else TEXT_COLOR)
        ax.set_yticks(range(len(grid)))
        ax.set_yticklabels([str(i + 1) for i in range(len(grid))])
        ax.set_xticks(range(len(grid[0])))
        ax.set_xticklabels([str(j + 1) for j in range(len(grid[0]))])
        ax.set_xlabel("头")
        ax.set_ylabel("层")
        ax.grid(False)
        ax.set_title(title)
        fig.colorbar(image, ax=ax, fraction=0.04)
    fig.suptitle(f"第一个词元上的注意力质量（均匀基线 {uniform(r, 'first1'):.3f}）\n"
                 f"每格是 {len(runs_of(r, 'bos'))} 个种子的均值", y=1.0)
    fig.subplots_adjust(hspace=0.7)
    save_svg(fig, out_dir / "ch13-sinks.svg", sources=[r])


RENDERERS = [render_mass, render_cache, render_long, render_figure]
