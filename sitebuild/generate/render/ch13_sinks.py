"""第 13 章的注意力汇点实验 → docs/generated/。

由 results/attention-sinks.json（full）与 attention-sinks-long.json（long；snippets.experiments.attention_sinks）：
- ch13-sinks.svg         每层每个头放在第一个词元上的注意力质量（远处查询的平均、种子均值）：初始化（对照）与
                         两种开头（plain、bos）训练后
- ch13-sinks.md          两种开头、逐层：第一个词元、前 4 个词元、中间词元上的质量（头的均值与最大），与均匀基线
- ch13-sinks-cache.md    滚动缓存：全注意力、窗口、窗口 + 汇点、窗口 + 中间词元的损失（种子均值，与全注意力之差）
- ch13-sinks-long.md     long 预设：各层第一个词元上的质量（一行）与滚动缓存的表

没有结果文件时写占位图和一行说明。同样的输入得到逐字节相同的文件。
"""

from __future__ import annotations

import statistics
from pathlib import Path

from sitebuild.generate.render._style import (FIG_WIDTH, NO_RESULTS, TEXT_COLOR, md_caption, md_table, new_figure,
                                              pick, placeholder_svg, save_svg, weight_colormap, write_text)

KIND = "attention-sinks"
CONDITIONS = {"plain": "plain（无开始符号）", "bos": "bos（固定的开始符号）"}
MODES = {"full": "(a) 全注意力", "window": "(b) 窗口", "sinks": "(c) 窗口 + 前 s 个", "middle": "(d) 窗口 + 中间 s 个"}


def runs_of(r: dict, condition: str) -> list[dict]:
    return [run for run in r["runs"] if run["condition"] == condition]


def head_means(r: dict, condition: str, when: str, key: str) -> list[list[float]]:
    """(层, 头) 的质量，对种子取平均。when：'init' 或 'trained'；key：first1、first2、first4、middle。"""
    grids = [run[f"attention_{when}"]["mass"][key] for run in runs_of(r, condition)]
    return [[statistics.fmean(vals) for vals in zip(*layers)] for layers in zip(*grids)]


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
        grids = [head_means(r, condition, when, key) for when, key in cols]
        for layer in range(cfg["model"]["n_layers"]):
            rows.append([condition, layer + 1]
                        + [f"{statistics.fmean(g[layer]):.3f}（{max(g[layer]):.3f}）" for g in grids])
    rows.append(["", "均匀基线"] + [f"{uniform(r, key):.3f}" for _, key in cols])
    text = ("每格：t ≥ {far} 的查询放在那里的质量，该层各头的均值（括号里是最大的头），种子平均；"
            "均匀基线 = s/(t+1) 的平均。\n\n").format(far=cfg["far"])
    return md_table(head, rows) + "\n" + text


def _cache_table(r: dict, with_note: bool = True) -> str:
    cfg = r["config"]
    head = ["开头", "w", "(a) 全注意力"] + [f"{label} − (a)" for m, label in MODES.items() if m != "full"]
    rows = []
    for condition in cfg["conditions"]:
        for w in cfg["windows"]:
            cells = []
            for mode in MODES:
                s = summary_row(r, condition, w, mode)
                cells.append(f"{s['loss_mean']:.4f}" if mode == "full" else f"{s['vs_full_mean']:+.4f}")
            rows.append([condition, w] + cells)
    floors = "、".join(f"{c} {r['task']['entropy_floor'][c]:.4f}" for c in cfg["conditions"])
    note = (f"(a)：t ≥ {cfg['score_from']} 的预测的平均交叉熵（nats），种子均值；其余三列减去 (a)，每个种子先减再平均"
            f"（正 = 变差）。熵下界：{floors}。\n\n")
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
    write_text(out_dir, "ch13-sinks-cache.md", _cache_table(r) + md_caption(r))


def render_long(results: list[dict], out_dir: Path) -> None:
    r = pick(results, KIND, prefer=("long",))
    if r is None:
        write_text(out_dir, "ch13-sinks-long.md", NO_RESULTS)
        return
    layers = "；".join(
        f"{c} " + "/".join(f"{statistics.fmean(row):.3f}" for row in head_means(r, c, "trained", "first1"))
        + f"（最大的头 {max(max(row) for row in head_means(r, c, 'trained', 'first1')):.3f}）"
        for c in r["config"]["conditions"])
    mass = f"训练后第一个词元上的质量（第 1–4 层的头均值）：{layers}；均匀基线 {uniform(r, 'first1'):.3f}。\n\n"
    write_text(out_dir, "ch13-sinks-long.md", _setup(r) + mass + _cache_table(r, with_note=False) + "\n" + md_caption(r))


def render_figure(results: list[dict], out_dir: Path) -> None:
    r = pick(results, KIND, prefer=("full",))
    if r is None:
        placeholder_svg(out_dir, "ch13-sinks.svg", "第一个词元上的注意力质量")
        return
    steps = r["config"]["steps"]
    panels = [(f"初始化（对照，bos）", head_means(r, "bos", "init", "first1"))]
    panels += [(f"{c} 训练 {steps} 步后", head_means(r, c, "trained", "first1")) for c in r["config"]["conditions"]]
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
    fig.suptitle(f"第一个词元上的注意力质量（均匀基线 {uniform(r, 'first1'):.3f}）", y=1.0)
    fig.subplots_adjust(hspace=0.7)
    save_svg(fig, out_dir / "ch13-sinks.svg", sources=[r])


RENDERERS = [render_mass, render_cache, render_long, render_figure]
