"""第 03 章：去掉 1/√d_k 时传回 Q、K 的梯度，results/qk-gradient.json → docs/generated/qk-gradient.md。

一张表，每个 d_k 一行：不缩放/缩放时 ‖∂L/∂s‖、‖∂L/∂q‖、‖∂L/∂k‖ 中位数之比，‖∂L/∂q‖² 最大的 10% 的查询所占的
份额（缩放 / 不缩放），以及不缩放时几乎收不到信号的查询比例；每个数都是各种子的均值，括号里最小–最大
（逐种子的 runs 经 snippets.stats.summarize 算出）。

没有结果文件时写一行说明。同样的输入得到逐字节相同的文件。
"""

from __future__ import annotations

from pathlib import Path

from sitebuild.generate.render._style import NO_RESULTS, md_caption, md_table, mean_range, pick, write_text

KIND = "qk-gradient"
MD = "qk-gradient.md"


def _ratio(x: float) -> str:
    return f"{x:.3f}" if x < 0.1 else f"{x:.2f}"


def _span(runs: list[dict], key: str, fmt) -> str:
    """各种子的均值（最小–最大）。"""
    return mean_range([x[key] for x in runs], fmt)


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%" if x >= 0.01 else f"{100 * x:.1f}%"


def render_table(results: list[dict], out_dir: Path) -> None:
    r = pick(results, KIND)
    if r is None:
        write_text(out_dir, MD, NO_RESULTS)
        return
    cfg = r["config"]
    tail = _pct(cfg["tail"])
    head = ["d_k", "‖∂L/∂s‖ 之比", "‖∂L/∂q‖ 之比", "‖∂L/∂k‖ 之比",
            f"前 {tail} 的查询占 ‖∂L/∂q‖² 的份额（缩放 → 不缩放）",
            f"不缩放时 ‖∂L/∂q‖ 不到缩放中位数 {_pct(cfg['starved'])} 的查询"]
    rows = []
    for s in sorted(r["summary"], key=lambda s: s["d_k"]):
        runs = sorted((x for x in r["runs"] if x["d_k"] == s["d_k"]), key=lambda x: x["seed"])
        rows.append([s["d_k"], _span(runs, "ds_ratio", _ratio), _span(runs, "dq_ratio", _ratio),
                     _span(runs, "dk_ratio", _ratio),
                     f"{_span(runs, 'dq_tail_share_scaled', _pct)} → {_span(runs, 'dq_tail_share_unscaled', _pct)}",
                     _span(runs, "dq_starved_unscaled", _pct)])
    rows_per_seed = cfg["groups"] * cfg["n_q"]
    setup = (f"「之比」= 不缩放时的中位数 ÷ 缩放时的中位数（同一批 q、k、v 与上游梯度），"
             f"每格是 {len(cfg['seeds'])} 个种子的均值，括号里是最小–最大。"
             f"初始化时：q、k、v 与上游梯度 ∂L/∂o 的分量独立标准正态，每组 {cfg['n_q']} 个查询、"
             f"{cfg['n_k']} 个键，d_v = {cfg['d_v']}，每个种子 {rows_per_seed} 个查询；{cfg['dtype']}，单线程 CPU。\n\n")
    write_text(out_dir, MD, setup + md_table(head, rows) + "\n" + md_caption(r))


RENDERERS = [render_table]
