"""第 03 章的实验图表：results/additive-vs-dot.json → docs/generated/。

- additive-vs-dot.svg  上下两幅折线图（手机宽度）：横轴 d_k（对数刻度），纵轴是第 early_step 步与训练结束时的
                       测试准确率（各种子的均值，竖线是最小值到最大值）；四种打分方式各一条线
- additive-vs-dot.md   同样的数字，外加初始化时与训练后进入 softmax 的 logits 标准差、初始最大注意力权重，
                       以及第一步打分参数的梯度范数（runs[*].init.scorer_grad_norm）；每格都是
                       「各种子的均值（最小–最大）」，由逐种子的 runs 经 snippets.stats.summarize 算出

没有结果文件时写占位图和一行说明。同样的输入得到逐字节相同的文件。
"""

from __future__ import annotations

from pathlib import Path

from sitebuild.generate.render._style import (FIG_WIDTH, NO_RESULTS, PALETTE, legend_below, md_caption, md_table,
                                    mean_range, new_figure, pick, placeholder_svg, save_svg, seed_errorbars,
                                    write_text)

KIND = "additive-vs-dot"
SVG, MD = "additive-vs-dot.svg", "additive-vs-dot.md"
LABELS = {
    "additive": "加性（带偏置 b_h）",
    "additive-nobias": "加性（无偏置，Bahdanau 原式）",
    "dot-unscaled": "点积，不缩放",
    "dot-scaled": "点积，除以 √d_k",
}
MARKERS = {"additive": "o", "additive-nobias": "v", "dot-unscaled": "s", "dot-scaled": "D"}
STYLES = {"additive": "-", "additive-nobias": "-", "dot-unscaled": "--", "dot-scaled": ":"}  # 两条点积线常重合：用线型区分


def render_figure(results: list[dict], out_dir: Path) -> None:
    r = pick(results, KIND)
    if r is None:
        placeholder_svg(out_dir, SVG, "加性注意力与点积注意力：查表任务的准确率")
        return
    cfg = r["config"]
    fig, axes = new_figure(FIG_WIDTH, 5.6, nrows=2, sharex=True)
    panels = ((axes[0], "early_accuracy", f"训练 {cfg['early_step']} 步后"),
              (axes[1], "accuracy", f"训练 {cfg['steps']} 步后（结束）"))
    for ax, key, title in panels:
        for i, mech in enumerate(cfg["mechanisms"]):
            x = sorted(d for d in cfg["d_k_values"] if _runs(r, mech, d))
            mean, err = seed_errorbars([[_accuracy(run, key, cfg) for run in _runs(r, mech, d)] for d in x])
            ax.errorbar(x, mean, yerr=err, label=LABELS[mech], color=PALETTE[i], marker=MARKERS[mech],
                        linestyle=STYLES[mech], capsize=3)
        ax.set_xscale("log", base=2)
        ax.set_xticks(cfg["d_k_values"], [str(d) for d in cfg["d_k_values"]])
        ax.minorticks_off()
        ax.set_title(title)
        ax.set_ylim(0.0, 1.02)
        ax.set_ylabel(f"测试准确率（{len(cfg['seeds'])} 个种子均值）")
    axes[1].set_xlabel("d_k（加性注意力：隐藏层宽度 d_h）")
    legend_below(axes[1])
    fig.subplots_adjust(hspace=0.3)
    save_svg(fig, out_dir / SVG, sources=[r])


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _runs(r: dict, mechanism: str, d_k: int) -> list[dict]:
    """一种打分方式、一个 d_k 的逐种子运行，按种子排序。"""
    return sorted((run for run in r["runs"] if (run["mechanism"], run["d_k"]) == (mechanism, d_k)),
                  key=lambda run: run["seed"])


def _accuracy(run: dict, key: str, cfg: dict) -> float:
    """一次运行的测试准确率：key = "accuracy"（训练结束）或 "early_accuracy"（第 early_step 步，取自曲线）。"""
    if key == "accuracy":
        return run["final"]["accuracy"]
    (acc,) = [p["accuracy"] for p in run["curve"] if p["step"] == cfg["early_step"]]
    return acc


def scorer_grad_norm_mean(r: dict, mechanism: str, d_k: int) -> float:
    """第一步（初始化时）打分参数梯度范数的种子均值：summary 里没有，从 runs 里算。"""
    vals = [run["init"]["scorer_grad_norm"] for run in _runs(r, mechanism, d_k)]
    return sum(vals) / len(vals)


def render_table(results: list[dict], out_dir: Path) -> None:
    r = pick(results, KIND)
    if r is None:
        write_text(out_dir, MD, NO_RESULTS)
        return
    cfg = r["config"]
    head = ["d_k", "打分方式", f"第 {cfg['early_step']} 步准确率", "最终准确率",
            "初始 logits 标准差", "初始最大权重", "第一步打分参数梯度范数", "训练后 logits 标准差"]
    rows = []
    for s in sorted(r["summary"], key=lambda s: (s["d_k"], cfg["mechanisms"].index(s["mechanism"]))):
        runs = _runs(r, s["mechanism"], s["d_k"])
        rows.append([s["d_k"], LABELS[s["mechanism"]],
                     mean_range([_accuracy(x, "early_accuracy", cfg) for x in runs], _pct),
                     mean_range([_accuracy(x, "accuracy", cfg) for x in runs], _pct),
                     mean_range([x["init"]["logit_std"] for x in runs], ".2f"),
                     mean_range([x["init"]["max_weight"] for x in runs], ".2f"),
                     mean_range([x["init"]["scorer_grad_norm"] for x in runs], ".3f"),
                     mean_range([x["final"]["logit_std"] for x in runs], ".2f")])
    t = r["task"]
    setup = (f"任务：{t['n_pairs']} 对键–值，键 ∈ ℝ^{t['d_in']}，{t['n_classes']} 个类别；"
             f"{cfg['optimizer']}，学习率 {cfg['lr']}，批大小 {cfg['batch_size']}，{cfg['steps']} 步，"
             f"种子 {cfg['seeds']}，测试集 {cfg['eval_size']} 个样本；单线程 CPU。每格是各种子的均值（最小–最大）。"
             f"「第一步打分参数梯度范数」：初始化时第一个训练批上，打分部分的参数（点积的 W_q、W_k，"
             f"加性注意力的全部参数）的梯度 L2 范数。\n\n")
    write_text(out_dir, MD, setup + md_table(head, rows) + "\n" + md_caption(r))


RENDERERS = [render_figure, render_table]
