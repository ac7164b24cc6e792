"""第 11 章的实验图表：results/attention-residuals.json（full）与 attention-residuals-long.json（long）→ docs/generated/。

- attention-residuals.md        三种残差的验证损失、超额损失（种子均值与范围）、参数量，以及设置与预算
- attention-residuals-long.md   同样的表，900 步（long 预设）
- attention-residuals.svg       上：训练结束时每个子层输入的均方根；中：每个子层写出的输出 f_l(h_l) 的均方根
                                （论文图 5(b) 看的是输出的大小）；下：每个子层参数的梯度范数（种子均值，竖线是最小–最大）
- attention-residuals-alpha.svg Full 与 Block AttnRes 学到的平均深度注意力权重（热图，种子均值；标题写出
                                各格种子间最大与最小之差的最大值）

均值与范围都由逐种子的 runs 经 snippets.stats.summarize 算出。
- attention-residuals-stream.md 普通残差：‖h_L‖ 与「各输出互不相关」时预测值之比、各输出两两的平均余弦
                                （初始化时 32 个子层的探针；训练前后的 8 个子层）

没有结果文件时写占位图和一行说明。同样的输入得到逐字节相同的文件。
"""

from __future__ import annotations

import statistics
from pathlib import Path

from sitebuild.generate.render._style import (FIG_WIDTH, NO_RESULTS, PALETTE, TEXT_COLOR, legend_below, md_caption, md_table,
                                              mean_range, new_figure, pick, placeholder_svg, save_svg, seed_errorbars,
                                              weight_colormap, write_text)

KIND = "attention-residuals"
LABEL = {"baseline": "普通残差", "full": "Full AttnRes", "block": "Block AttnRes"}
COLOR = {"baseline": PALETTE[1], "full": PALETTE[0], "block": PALETTE[2]}
STYLE = {"baseline": ("o", "-"), "full": ("^", "--"), "block": ("s", ":")}


def _runs(r: dict, variant: str) -> list[dict]:
    return sorted((x for x in r["runs"] if x["variant"] == variant), key=lambda x: x["seed"])


def _setup(r: dict) -> str:
    cfg, m = r["config"], r["config"]["model"]
    return (f"设置：二阶马尔可夫链（词表 {r['task']['vocab_size']}，每个上下文 {r['task']['successors']} 个后继），"
            f"{m['n_layers']} 层（{2 * m['n_layers']} 个子层）、d_model {m['d_model']}、{m['n_heads']} 头、d_ff {m['d_ff']}；"
            f"{cfg['steps']} 步、批 {cfg['batch_size']} × 长度 {cfg['seq_len']}、峰值学习率 {cfg['lr']:g}（预热 "
            f"{cfg['warmup_steps']} 步后线性下降），种子 {cfg['seeds']}；三种残差用同样的种子、同样的数据与步数。"
            f"验证集 {cfg['val_sequences']} 条序列，熵下界 {r['task']['entropy_floor']:.4f}。"
            f"单线程 CPU，本次运行用时 {r['provenance']['runtime_s']:.0f} 秒。\n\n")


def _loss_table(r: dict) -> str:
    floor = r["task"]["entropy_floor"]
    head = ["残差", "参数", "验证损失：均值（范围）", "超额损失：均值（范围）"]
    rows = [[LABEL[s["variant"]], f"{s['params']:,}",
             mean_range([x["val_loss"] for x in _runs(r, s["variant"])], ".4f"),
             mean_range([x["val_loss"] - floor for x in _runs(r, s["variant"])], ".4f")]
            for s in r["summary"]]
    note = ("超额损失 = 验证损失 − 熵下界（真实分布自己的交叉熵），逐种子减后取均值与范围。每个种子的最终值：" +
            "；".join(f"{LABEL[v]} " + "、".join(f"{x['val_loss']:.4f}" for x in _runs(r, v))
                     for v in r["config"]["variants"]) + "。\n\n")
    return md_table(head, rows) + "\n" + note


def render_table(results: list[dict], out_dir: Path) -> None:
    r = pick(results, KIND, prefer=("full",))
    if r is None:
        write_text(out_dir, "attention-residuals.md", NO_RESULTS)
        return
    write_text(out_dir, "attention-residuals.md", _setup(r) + _loss_table(r) + md_caption(r))


def render_long_table(results: list[dict], out_dir: Path) -> None:
    r = pick(results, KIND, prefer=("long",))
    if r is None:
        write_text(out_dir, "attention-residuals-long.md", NO_RESULTS)
        return
    write_text(out_dir, "attention-residuals-long.md", _setup(r) + _loss_table(r) + md_caption(r))


def render_depth_figure(results: list[dict], out_dir: Path) -> None:
    r = pick(results, KIND, prefer=("full",))
    if r is None:
        placeholder_svg(out_dir, "attention-residuals.svg", "逐层大小与梯度")
        return
    fig, (top, middle, bottom) = new_figure(FIG_WIDTH, 9.6, nrows=3)
    for v in r["config"]["variants"]:
        runs = _runs(r, v)
        marker, style = STYLE[v]
        rms, err = seed_errorbars(zip(*(x["input_rms"] for x in runs)))
        top.errorbar(range(len(rms)), rms, yerr=err, color=COLOR[v], marker=marker, linestyle=style, markersize=4,
                     capsize=2, label=LABEL[v])
        out, err = seed_errorbars(zip(*(x["output_rms"] for x in runs)))
        middle.errorbar(range(1, len(out) + 1), out, yerr=err, color=COLOR[v], marker=marker, linestyle=style,
                        markersize=4, capsize=2, label=LABEL[v])
        grad, err = seed_errorbars(zip(*(x["grad_norm"] for x in runs)))
        bottom.errorbar(range(1, len(grad) + 1), grad, yerr=err, color=COLOR[v], marker=marker, linestyle=style,
                        markersize=4, capsize=2, label=LABEL[v])
    n = 2 * r["config"]["model"]["n_layers"]
    top.set_xlabel(f"子层 l（0 = 第一个子层的输入，{n} = 送往输出层）")
    top.set_ylabel("输入 h_l 的均方根")
    top.set_title("训练结束时每个子层的输入有多大")
    top.set_ylim(bottom=0)
    legend_below(top, ncol=3)
    middle.set_xlabel("子层 l（奇数 = 注意力，偶数 = FFN）")
    middle.set_ylabel("输出 f_l(h_l) 的均方根")
    middle.set_title("每个子层写出的输出有多大（论文图 5(b) 看的是输出）")
    middle.set_ylim(bottom=0)
    legend_below(middle, ncol=3)
    bottom.set_xlabel("子层 l（奇数 = 注意力，偶数 = FFN）")
    bottom.set_ylabel("参数梯度范数")
    bottom.set_title("训练结束时每个子层的梯度（验证批上反传一次）")
    bottom.set_ylim(bottom=0)
    legend_below(bottom, ncol=3, title=f"{len(r['config']['seeds'])} 个种子的均值（竖线：最小–最大），"
                                       f"{r['config']['steps']} 步")
    fig.subplots_adjust(hspace=0.95)
    save_svg(fig, out_dir / "attention-residuals.svg", sources=[r])


def _mean_alpha(runs: list[dict]) -> list[list[float]]:
    return [[statistics.fmean(vals) for vals in zip(*rows)] for rows in zip(*(x["alpha"] for x in runs))]


def _alpha_spread(runs: list[dict]) -> float:
    """各格（运算, 来源）上种子间最大与最小权重之差，取全部格子的最大值。"""
    return max(max(vals) - min(vals) for rows in zip(*(x["alpha"] for x in runs)) for vals in zip(*rows))


def render_alpha_figure(results: list[dict], out_dir: Path) -> None:
    r = pick(results, KIND, prefer=("full",))
    if r is None or not _runs(r, "full"):
        placeholder_svg(out_dir, "attention-residuals-alpha.svg", "学到的深度注意力权重")
        return
    variants = [v for v in ("full", "block") if _runs(r, v)]
    fig, axes = new_figure(FIG_WIDTH, 3.4 * len(variants), nrows=len(variants))
    axes = axes if len(variants) > 1 else [axes]
    for ax, v in zip(axes, variants):
        alpha = _mean_alpha(_runs(r, v))
        width = max(len(row) for row in alpha)
        grid = [row + [float("nan")] * (width - len(row)) for row in alpha]
        image = ax.imshow(grid, cmap=weight_colormap(), vmin=0.0, vmax=1.0, interpolation="nearest", aspect="auto")
        for i, row in enumerate(alpha):
            for j, a in enumerate(row):
                ax.text(j, i, f"{a:.2f}", ha="center", va="center", fontsize=7,
                        color="white" if a > 0.55 else TEXT_COLOR)
        ax.set_yticks(range(len(alpha)))
        ax.set_yticklabels([f"{i + 1}" for i in range(len(alpha) - 1)] + ["出"])
        ax.set_xticks(range(width))
        ax.set_xlabel("来源（0 = 嵌入）" if v == "full" else "来源（0 = 嵌入，其后是块摘要，最后是部分和）")
        ax.set_ylabel("AttnRes 运算（子层）")
        ax.set_title(f"{LABEL[v]}：平均权重 α\n{len(_runs(r, v))} 个种子的均值，每格种子间的差 ≤ {_alpha_spread(_runs(r, v)):.2f}")
        fig.colorbar(image, ax=ax, fraction=0.04)
    fig.subplots_adjust(hspace=0.6)
    save_svg(fig, out_dir / "attention-residuals-alpha.svg", sources=[r])


def render_stream_table(results: list[dict], out_dir: Path) -> None:
    r = pick(results, KIND, prefer=("full",))
    if r is None:
        write_text(out_dir, "attention-residuals-stream.md", NO_RESULTS)
        return
    probe = r["depth_probe"]
    head = ["模型", "种子", "子层数", "‖h_L‖ / 预测", "平均余弦"]
    rows = [[f"初始化（{probe['dtype']}）", p["seed"], 2 * probe["n_layers"], f"{p['ratio_last']:.3f}",
             f"{p['mean_cosine']:+.4f}"] for p in probe["runs"]]
    n = 2 * r["config"]["model"]["n_layers"]
    for x in _runs(r, "baseline"):
        for when, key in (("训练前", "stream_init"), (f"训练 {r['config']['steps']} 步后", "stream_final")):
            rows.append([when, x["seed"], n, f"{x[key]['ratio_last']:.3f}", f"{x[key]['mean_cosine']:+.4f}"])
    note = ("「预测」是 √(Σ‖v_i‖²)：各来源（嵌入与每个子层的输出）两两不相关时 ‖h_L‖ 应有的值；比值大于 1 表示输出之间"
            "正相关，增长快于 √L。平均余弦对词元、对所有来源对取平均。普通残差模型，pre-RMSNorm。\n\n")
    write_text(out_dir, "attention-residuals-stream.md", note + md_table(head, rows) + "\n" + md_caption(r))


RENDERERS = [render_table, render_long_table, render_depth_figure, render_alpha_figure, render_stream_table]
