"""「怎样读本书的实验」的表：t 分位数与区间半宽（snippets.stats），以及第 08 章标签平滑的例子
（results/training-recipe.json 与 -long.json，逐种子配对）→ docs/generated/。

- reading-t-table.md    n = 2…10 个种子：t_{0.975, n−1}，以及区间半宽是每种子标准差 s 的几倍
- reading-example.md    标签平滑 0.1 对比不平滑：400 步的准确率、1600 步的校准误差，逐种子的值、差与结论
- reading-why-four.md   一段话：那个例子的 s，4 个种子的区间半宽，定下 2 个点的差要多少个种子

没有结果文件时写一行说明。同样的输入得到逐字节相同的文件。
"""

from __future__ import annotations

import math
from pathlib import Path

from sitebuild.generate.render._style import NO_RESULTS, md_caption, md_table, pick, write_text
from sitebuild.generate.render._verdicts import cells, per_seed_rows
from snippets.stats import compare_seeds, describe, t_quantile

SEED_COUNTS = range(2, 11)
KIND = "training-recipe"
# (预设, 指标, 说明, 换算成百分点)
EXAMPLES = [("full", "accuracy", "评估集逐词准确率", 100.0), ("long", "ece", "评估集校准误差 ECE", 100.0)]


def render_t_table(results: list[dict], out_dir: Path) -> None:
    head = ["种子数 n", "t₀.₉₇₅,ₙ₋₁", "区间半宽 ÷ s"]
    rows = []
    for n in SEED_COUNTS:
        t = t_quantile(0.975, n - 1)
        rows.append([str(n), f"{t:.2f}", f"{t / math.sqrt(n):.2f}"])
    text = ("由 `snippets.stats.t_quantile` 算出。s 是逐种子差值的标准差；平均差的绝对值超过「区间半宽」，"
            "t 区间才不含 0。\n\n")
    write_text(out_dir, "reading-t-table.md", text + md_table(head, rows))


def comparison(r: dict, metric: str):
    runs = {(x["variant"], x["seed"]): x for x in r["runs"]}
    seeds = r["config"]["seeds"]
    a = [runs[("no-ls", s)]["eval"][metric] for s in seeds]
    b = [runs[("paper", s)]["eval"][metric] for s in seeds]
    tokens = r["runs"][0]["eval"]["tokens"]
    return compare_seeds(a, b, seeds, resolution=1 / tokens if metric == "accuracy" else 0.0), tokens


def render_example(results: list[dict], out_dir: Path) -> None:
    parts, used = [], []
    for preset, metric, label, scale in EXAMPLES:
        r = pick(results, KIND, prefer=(preset,))
        if r is None:
            continue
        used.append(r)
        c, tokens = comparison(r, metric)
        steps = r["config"]["steps"]
        pct = lambda x: f"{x * scale:.1f}"  # noqa: E731
        mean, interval, agree, verdict = cells(c, scale)
        rows = per_seed_rows(c, pct, scale) + [["平均", "", "", f"{mean}（95% 区间 {interval}）"]]
        seed_table = md_table(["种子", "不平滑", "平滑 0.1", "差（平滑 − 不平滑）"], rows)
        verdict_table = f"同向的种子：{agree}；结论：**{verdict}**。\n"
        resolution = f"，一个词元是 {100 / tokens:.3f} 个点" if metric == "accuracy" else ""
        parts.append(f"**{label}，{steps} 步**（单位：百分点；评估集 {tokens} 个词元{resolution}）：\n\n"
                     f"{seed_table}\n{verdict_table}\n"
                     f"一句话：{describe(c, ' 个点', scale=scale)}。\n")
    if not used:
        write_text(out_dir, "reading-example.md", NO_RESULTS)
        return
    write_text(out_dir, "reading-example.md", "\n".join(parts) + "\n" + md_caption(*used))


def render_why_four(results: list[dict], out_dir: Path) -> None:
    """一段话：第 08 章例子的 s，4 个种子时的区间半宽，为什么 2 个点的差定不下来。"""
    r = pick(results, KIND, prefer=("full",))
    if r is None:
        write_text(out_dir, "reading-why-four.md", NO_RESULTS)
        return
    c, _ = comparison(r, "accuracy")
    n = c.n
    mean = c.mean_difference
    s = math.sqrt(sum((d - mean) ** 2 for d in c.differences) / (n - 1))
    half = t_quantile(0.975, n - 1) / math.sqrt(n)
    text = (f"第 08 章的例子里，{n} 个种子上「平滑 − 不平滑」的准确率差，标准差 s = {100 * s:.1f} 个点。"
            f"{n} 个种子时区间半宽是 {half:.2f} s = {100 * half * s:.1f} 个点：平均差要超过 {100 * half * s:.1f} 个点，"
            f"t 区间才不含 0。同样的波动下，一个 2 个点的差要有 n 个种子，使 t₀.₉₇₅,ₙ₋₁ · s / √n < 2 个点，"
            f"也就是至少 {_seeds_needed(s, 0.02)} 个种子。\n")
    write_text(out_dir, "reading-why-four.md", text)


def _seeds_needed(s: float, difference: float) -> int:
    """最小的 n，使 t_{0.975, n−1} · s / √n < difference（上限 1000）。"""
    for n in range(2, 1001):
        if t_quantile(0.975, n - 1) * s / math.sqrt(n) < difference:
            return n
    return 1000


RENDERERS = [render_t_table, render_example, render_why_four]
