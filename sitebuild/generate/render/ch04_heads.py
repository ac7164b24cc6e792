"""第 04 章的实验图表：results/multi-head.json → docs/generated/。

- heads-sweep.svg      上：玩具任务的准确率随头数 h 的变化（d_model 固定，各种子的均值，竖线为最小–最大）；
                       下：论文表 3 (A) 的 BLEU 随 h 的变化（抄录，不是测量），同样的横轴
- heads-sweep.md       同样的数字，外加 d_k、参数量、最大的单头消融代价、1 个百分点以内可剪掉的头数；
                       均值都带各种子的最小–最大（逐种子的 runs 经 snippets.stats.summarize 算出）
- heads-attention.svg  种子 0 的平均注意力图：h = 1 的唯一一个头，和 h = 8 的 8 个头
- heads-pruning.svg    h = 8 与 h = 16：按单头消融代价从小到大累积剪头，准确率随剪掉头数的变化
- heads-ablation.md    h = 8 的每个头：最常看的相对位移、那里的注意力质量、单头消融后的准确率下降
- heads-long.md        long 预设（results/multi-head-long.json）：h ∈ {1, 8, 64} 各种子在中途各步数上的测试准确率

没有结果文件时写占位图和一行说明。同样的输入得到逐字节相同的文件。
"""

from __future__ import annotations

from pathlib import Path

from matplotlib.ticker import MaxNLocator

from sitebuild.generate.render._style import (FIG_WIDTH, LINESTYLES, MARKERS, NO_RESULTS, PALETTE, legend_below, md_caption,
                                    md_table, mean_range, new_figure, pick, placeholder_svg, save_svg,
                                    seed_errorbars, value_range, weight_colormap, write_text)
from snippets.experiments.heads import PAPER_TABLE3_A

KIND = "multi-head"
SWEEP_SVG, SWEEP_MD = "heads-sweep.svg", "heads-sweep.md"
MAPS_SVG, PRUNE_SVG, ABLATION_MD = "heads-attention.svg", "heads-pruning.svg", "heads-ablation.md"
LONG_MD = "heads-long.md"
MAP_H = 8  # 注意力图与消融表用 h = 8（论文 base 的头数）
PRUNE_H = (8, 16)


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _offset(o: int) -> str:
    """Signed offset with a real minus sign (−2, as the page and the drop next to it write it)."""
    return f"{o:+d}".replace("-", "−") if o else "0"


def _seed_runs(r: dict, h: int) -> list[dict]:
    """h 个头的逐种子运行，按种子排序。"""
    return sorted((x for x in r["runs"] if x["h"] == h), key=lambda x: x["seed"])


def render_sweep_figure(results: list[dict], out_dir: Path) -> None:
    r = pick(results, KIND)
    if r is None:
        placeholder_svg(out_dir, SWEEP_SVG, "头数 h 与准确率：玩具任务与论文表 3 (A)")
        return
    fig, (ax, bx) = new_figure(FIG_WIDTH, 5.8, nrows=2)
    rows = sorted(r["summary"], key=lambda s: s["h"])
    x = [s["h"] for s in rows]
    mean, err = seed_errorbars([[run["accuracy"] for run in _seed_runs(r, h)] for h in x])
    ax.errorbar(x, mean, yerr=err, color=PALETTE[0], marker="o", capsize=3)
    ax.set_xscale("log", base=2)
    ax.set_xticks(x, [f"{s['h']}\n({s['d_k']})" for s in rows])
    ax.set_xlabel(f"头数 h（括号里是 d_k），d_model = {r['model']['d_model']}")
    ax.set_ylabel(f"测试准确率（{len(r['config']['seeds'])} 个种子）")
    ax.minorticks_off()
    ax.set_ylim(0.0, 1.02)
    ax.set_title("玩具任务：同时取回三个邻居")
    px = [p["h"] for p in PAPER_TABLE3_A]
    bx.plot(px, [p["bleu"] for p in PAPER_TABLE3_A], color=PALETTE[1], marker="s")
    bx.set_xscale("log", base=2)
    bx.set_xticks(px, [f"{p['h']}\n({p['d_k']})" for p in PAPER_TABLE3_A])
    bx.minorticks_off()
    bx.set_xlabel("头数 h（括号里是 d_k），d_model = 512")
    bx.set_ylabel("BLEU（newstest2013）")
    bx.set_title("论文表 3 (A) 与 base 行（抄录）")
    fig.subplots_adjust(hspace=0.65)
    save_svg(fig, out_dir / SWEEP_SVG, sources=[r])


def render_sweep_table(results: list[dict], out_dir: Path) -> None:
    r = pick(results, KIND)
    if r is None:
        write_text(out_dir, SWEEP_MD, NO_RESULTS)
        return
    tol = r["config"]["prune_tolerance"]
    head = ["h", "d_k", "参数量", "测试准确率：均值（最小–最大）", "最大的单头消融代价：均值（最小–最大）",
            f"可剪掉的头（损失 ≤ {100 * tol:.0f} 个百分点，各种子最少–最多）"]
    rows = []
    for s in sorted(r["summary"], key=lambda s: s["h"]):
        runs = _seed_runs(r, s["h"])
        ablated = [x for x in runs if x["heads"] and all("drop" in i for i in x["heads"])]
        pruned = [x["prunable_heads"] for x in runs if "prunable_heads" in x]
        rows.append([s["h"], s["d_k"], f"{s['num_parameters']:,}", mean_range([x["accuracy"] for x in runs], _pct),
                     mean_range([max(i["drop"] for i in x["heads"]) for x in ablated], _pct)
                     if "max_drop_mean" in s and ablated else "—",
                     f"{value_range(pruned, '.0f')} / {s['h']}" if "prunable_heads_min" in s and pruned else "—"])
    t, m, c = r["task"], r["model"], r["config"]
    setup = (f"任务：{t['seq_len']} 个随机符号（词表 {t['vocab_size']}），每个计分位置同时输出相对位移 "
             f"{', '.join(_offset(o) for o in t['offsets'])} 处的三个符号，三个都对才算对。模型：嵌入 + 正弦位置编码 + "
             f"{m['num_layers']} 个编码器层（d_model = {m['d_model']}，d_ff = {m['d_ff']}）+ 线性读出。"
             f"{c['optimizer']}，学习率 {c['lr']}，批大小 {c['batch_size']}，{c['steps']} 步，种子 {c['seeds']}，"
             f"测试集 {c['eval_size']} 条序列，消融与剪枝用另外 {c['ablation_eval_size']} 条；单线程 CPU。\n\n")
    write_text(out_dir, SWEEP_MD, setup + md_table(head, rows) + "\n" + md_caption(r))


def _map_runs(r: dict) -> list[tuple[str, list]]:
    first = r["config"]["seeds"][0]
    panels = []
    for h in (1, MAP_H):
        run = next((x for x in r["runs"] if x["h"] == h and x["seed"] == first and "mean_attention" in x), None)
        if run is None:
            continue
        for i, m in enumerate(run["mean_attention"]):
            info = run["heads"][i]
            drop = f" −{100 * info['drop']:.0f}%" if "drop" in info else ""
            panels.append((f"h={h} 头{i}\n{_offset(info['top_offset'])}{drop}", m))
    return panels


def render_maps(results: list[dict], out_dir: Path) -> None:
    r = pick(results, KIND)
    panels = _map_runs(r) if r is not None else []
    if not panels:
        placeholder_svg(out_dir, MAPS_SVG, "各个头的平均注意力图")
        return
    ncols = 3
    nrows = (len(panels) + ncols - 1) // ncols
    fig, axes = new_figure(FIG_WIDTH, 1.75 * nrows + 0.3, nrows=nrows, ncols=ncols, squeeze=False)
    scored = r["task"]["scored_positions"]
    for ax in axes.flat:
        ax.set_visible(False)
    for ax, (title, m) in zip(axes.flat, panels):
        ax.set_visible(True)
        ax.imshow(m, cmap=weight_colormap(), vmin=0.0, vmax=1.0, interpolation="nearest")
        ax.set_title(title, fontsize=10)
        ax.grid(False)
        ax.set_xticks([0, len(m) - 1])
        ax.set_yticks([scored[0], scored[-1]])
    fig.supxlabel("键的位置 j", fontsize=10)
    fig.suptitle("每幅：h、头号；最常看的相对位移、单头消融代价", fontsize=10)
    fig.supylabel("查询的位置 i", fontsize=10)
    fig.subplots_adjust(hspace=0.55, wspace=0.35)
    save_svg(fig, out_dir / MAPS_SVG, sources=[r])


def render_pruning(results: list[dict], out_dir: Path) -> None:
    r = pick(results, KIND)
    runs = [x for x in r["runs"] if x["h"] in PRUNE_H and "prune_curve" in x] if r is not None else []
    if not runs:
        placeholder_svg(out_dir, PRUNE_SVG, "逐个剪掉头之后的准确率")
        return
    fig, ax = new_figure(FIG_WIDTH, 3.0)
    for ci, h in enumerate(PRUNE_H):
        for j, run in enumerate(x for x in runs if x["h"] == h):
            curve = run["prune_curve"]
            ax.plot(range(len(curve)), curve, color=PALETTE[ci], linestyle=LINESTYLES[j % len(LINESTYLES)],
                    marker=MARKERS[2 * ci + j % 2], markersize=4, label=f"h = {h}，种子 {run['seed']}")
    ax.set_xlabel("累积剪掉的头数\n（按单头消融代价从小到大）")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("准确率（消融评估集）")
    ax.set_ylim(0.0, 1.02)
    legend_below(ax, ncol=2, gap=0.7)
    save_svg(fig, out_dir / PRUNE_SVG, sources=[r])


def render_ablation_table(results: list[dict], out_dir: Path) -> None:
    r = pick(results, KIND)
    runs = [x for x in r["runs"] if x["h"] == MAP_H] if r is not None else []
    if not runs:
        write_text(out_dir, ABLATION_MD, NO_RESULTS)
        return
    head = ["种子", "头", "注意力最集中的相对位移", "那里的平均注意力质量", "三个任务位移上的质量之和", "单头消融后准确率下降"]
    rows = []
    for run in sorted(runs, key=lambda x: x["seed"]):
        for info in sorted(run["heads"], key=lambda i: -i["drop"]):
            rows.append([run["seed"], info["head"], _offset(info["top_offset"]), f"{info['top_mass']:.2f}",
                         f"{info['task_mass']:.2f}", _pct(info["drop"])])
    note = (f"h = {MAP_H}，每个种子按消融代价从大到小排列；不剪时消融评估集上的准确率："
            + "，".join(f"种子 {x['seed']} {_pct(x['ablation_base_accuracy'])}" for x in sorted(runs, key=lambda x: x["seed"]))
            + "。\n\n")
    write_text(out_dir, ABLATION_MD, note + md_table(head, rows) + "\n" + md_caption(r))


def render_long_table(results: list[dict], out_dir: Path) -> None:
    """long 预设：每个 (h, 种子) 一行，列是各检查点的测试准确率；最后一列是训练完后能剪掉的头。"""
    r = pick(results, KIND, ("long",))
    if r is None:
        write_text(out_dir, LONG_MD, NO_RESULTS)
        return
    c = r["config"]
    steps = c["checkpoints"]
    head = ["h", "d_k", "种子"] + [f"{s} 步" for s in steps]
    rows = []
    for run in sorted(r["runs"], key=lambda x: (x["h"], x["seed"])):
        acc = {p["step"]: p["accuracy"] for p in run["curve"]}
        rows.append([run["h"], run["d_k"], run["seed"]] + [_pct(acc[s]) for s in steps])
    setup = (f"与上面的 full 预设同一个任务、模型、学习率 {c['lr']}、批大小 {c['batch_size']} 和 {c['eval_size']} 条测试序列，"
             f"只训练 h ∈ {{{', '.join(str(h) for h in c['heads'])}}}，种子 {c['seeds']}，每个 {c['steps']} 步，"
             f"在表头的步数上评估；初始化种子与训练数据和 full 预设相同。单线程 CPU。\n\n")
    write_text(out_dir, LONG_MD, setup + md_table(head, rows) + "\n" + md_caption(r))


RENDERERS = [render_sweep_figure, render_sweep_table, render_maps, render_pruning, render_ablation_table,
             render_long_table]
