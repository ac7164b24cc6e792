"""复制任务的注意力热图与结果表：results/copy-task.json → docs/generated/。

render_attention_heatmaps(results, out_dir) 在 results（已读入的结果字典列表，签名与
其它渲染函数相同）里找出 kind == "copy-task" 的那一份，写出：

- attn-encoder-self.svg     编码器最后一层自注意力（各头平均），n × n
- attn-decoder-masked.svg   解码器最后一层掩码自注意力，m × m；对角线右上方的三角形用斜线标出（权重恒为 0）
- attn-cross.svg            解码器最后一层交叉注意力，m × n
- copy-task.md              任务、模型、训练、准确率与训练时间的小表（单次运行，一个种子），表下一行出处（设备、torch 版本、
                            日期、commit、结果文件）

同样的输入得到逐字节相同的 SVG（sitebuild.generate.render._style.save_svg）。
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Polygon

from sitebuild.generate.render._style import (FIG_WIDTH, MIN_FONT, NO_RESULTS, TEXT_COLOR, apply_style, md_caption, md_table,
                                    placeholder_svg, save_svg, weight_colormap)

BOS_LABEL = "BOS"


def find_copy_task(results: list[dict]) -> dict | None:
    for result in results:
        if result.get("kind") == "copy-task":
            return result
    return None


def _upper_triangle(n: int) -> Polygon:
    """覆盖 j > i 的所有格子（数据坐标里格子中心是整数）的阶梯形多边形。"""
    vertices = [(0.5, -0.5), (n - 0.5, -0.5), (n - 0.5, n - 1.5)]
    for i in range(n - 2, -1, -1):
        vertices += [(i + 0.5, i + 0.5), (i + 0.5, i - 0.5)]
    return Polygon(vertices, closed=True, fill=False, hatch="///", edgecolor=TEXT_COLOR,
                   linewidth=0.8)


def _heatmap(weights: list[list[float]], row_labels: list[str], col_labels: list[str],
             title: str, xlabel: str, ylabel: str, source: dict, path: Path,
             causal: bool = False) -> None:
    w = np.asarray(weights, dtype=float)                     # (n_q, n_k)
    n_q, n_k = w.shape
    apply_style()
    cell = min(0.36, 2.9 / n_k)                              # 手机宽度：格子连同色条和标签不超过 FIG_WIDTH
    fig, ax = plt.subplots(figsize=(min(FIG_WIDTH, cell * n_k + 1.3), cell * n_q + 1.6))
    ax.grid(False)
    shown = np.ma.masked_where(np.triu(np.ones_like(w, dtype=bool), k=1), w) if causal else w
    image = ax.imshow(shown, cmap=weight_colormap(), vmin=0.0, vmax=1.0, aspect="equal",
                      interpolation="nearest")
    if causal:
        ax.add_patch(_upper_triangle(n_q))
        title += "\n斜线：因果掩码遮住的未来位置，权重恒为 0"
    for i in range(n_q):
        for j in range(n_k):
            if (causal and j > i) or w[i, j] < 0.005:       # 被遮住的格子、四舍五入为 0 的格子不标数
                continue
            ax.text(j, i, f"{w[i, j]:.2f}".lstrip("0") if w[i, j] < 1 else "1", ha="center",
                    va="center", fontsize=MIN_FONT, color="#ffffff" if w[i, j] > 0.55 else TEXT_COLOR)
    ax.set_xticks(range(n_k), col_labels)
    ax.set_yticks(range(n_q), row_labels)
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    fig.colorbar(image, ax=ax, fraction=0.046, pad=0.03).outline.set_visible(False)
    save_svg(fig, path, sources=[source])


def _labels(tokens: list[int]) -> list[str]:
    return [str(t) for t in tokens]


def render_attention_heatmaps(results: list[dict], out_dir: Path) -> None:
    """找到复制任务的结果，写出三张注意力热图和 copy-task.md 到 out_dir（通常是 docs/generated）。"""
    result = find_copy_task(results)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if result is None:  # 页面的 include 不能断：写明"尚无结果"
        (out_dir / "copy-task.md").write_text(NO_RESULTS, encoding="utf-8")
        for name in ("attn-encoder-self.svg", "attn-decoder-masked.svg", "attn-cross.svg"):
            placeholder_svg(out_dir, name, "复制任务的注意力热图")
        return
    att = result["attention"]
    where = f"第 {att['layer'] + 1} 层（最后一层），{att['num_heads']} 个头平均"
    src = _labels(att["src_tokens"])
    tgt_in = [BOS_LABEL] + _labels(att["tgt_input_tokens"][1:])
    _heatmap(att["encoder_self"], src, src, f"编码器自注意力\n{where}",
             "键：源句词元", "查询：源句词元", result, out_dir / "attn-encoder-self.svg")
    _heatmap(att["decoder_masked_self"], tgt_in, tgt_in, f"解码器掩码自注意力\n{where}",
             "键：解码器输入（右移一位）", "查询：解码器输入（右移一位）", result,
             out_dir / "attn-decoder-masked.svg", causal=True)
    _heatmap(att["cross"], tgt_in, src, f"交叉注意力\n{where}",
             "键 / 值：源句词元（编码器输出）", "查询：解码器输入（右移一位）", result,
             out_dir / "attn-cross.svg")
    (out_dir / "copy-task.md").write_text(copy_task_table(result), encoding="utf-8")


def copy_task_table(result: dict) -> str:
    hp = result["hyperparameters"]
    task = {"copy": "复制（copy）：目标 = 源句", "reverse": "倒序（reverse）：目标 = 源句倒序"}[hp["task"]]
    norm = "Pre-LN" if hp["norm_first"] else "Post-LN"
    tied = "三处共享" if hp["tie_weights"] else "不共享"
    rows = [
        ("任务", f"{task}，序列长度 {hp['seq_len']}，词表 {hp['vocab_size']}"),
        ("模型", f"N = {hp['num_layers']}，d_model = {hp['d_model']}，h = {hp['num_heads']}，"
                 f"d_ff = {hp['d_ff']}，{norm}，嵌入权重{tied}，共 {result['num_parameters']:,} 个参数"),
        ("训练", f"{hp['steps']} 步 × 批大小 {hp['batch_size']}，Adam，学习率 {hp['lr']:g}"
                 f"（预热 {hp['warmup_steps']} 步后线性降到 0），随机种子 {hp['seed']}"),
        ("最终训练损失", f"{result['final_loss']:.4f}"),
        ("贪心解码逐词准确率", f"{100 * result['greedy_token_accuracy']:.2f}%"
                             f"（{hp['eval_sequences']} 条新序列，带 KV 缓存）"),
        ("训练时间", f"{result['train_seconds']:.1f} s（{hp['num_threads']} 个 CPU 线程）"),
    ]
    note = f"单次运行（随机种子 {hp['seed']}）：只训练了一个模型，表里的数没有种子间的范围。\n\n"
    return note + md_table(["项目", "值"], rows) + "\n" + md_caption(result)


RENDERERS = [render_attention_heatmaps]
