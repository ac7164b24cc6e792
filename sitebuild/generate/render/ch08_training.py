"""第 08 章的图表：results/lr-schedule.json 与 results/training-recipe*.json → docs/generated/。

- lr-schedule.svg         公式 (3) 的学习率曲线，base 与 big（warmup 4000）
- lr-schedule.md          这张图的设定与两个峰值（由 snippets.training.noam_lr 算出，不是测量；单次运行）
- training-recipe.md      三种变体（论文设置、去掉标签平滑、β₂ = 0.999）在评估集上的困惑度、准确率、ECE，
                          以及 β₂ 探针（v̂ 与最近梯度平方之比）；均值都带各种子的最小–最大（逐种子的 runs
                          经 snippets.stats.summarize 算出）。有 beta2 预设的结果时，后面再接一张表：
                          1600 步时论文设置、β₂ = 0.999 配 100 步预热、β₂ = 0.999 配 1000 步预热；有 ls 预设的
                          结果时再接一张：400 步、更多种子，论文设置与去掉标签平滑的困惑度、准确率、平均置信度与 ECE
- training-batching.md    同一个训练集按长度分批与不排序装批的批数与填充浪费
- training-recipe-long.md long 预设（4 倍步数）与 full 并排：标签平滑的两种变体

没有结果文件时写占位图和一行说明。同样的输入得到逐字节相同的文件。
"""

from __future__ import annotations

from pathlib import Path

from sitebuild.generate.render._style import (FIG_WIDTH, NO_RESULTS, legend_below, md_caption, md_table, mean_range,
                                              new_figure, pick, placeholder_svg, same_runs_note, save_svg, series_style,
                                              value_range, write_text)

VARIANT_LABELS = {"paper": "论文设置（ε_ls 0.1，β₂ 0.98）", "no-ls": "去掉标签平滑（ε_ls 0）",
                  "beta2-999": "β₂ = 0.999（ε_ls 0.1）", "beta2-999-warm": "β₂ = 0.999，预热 1000 步（ε_ls 0.1）"}
SHORT = {"paper": "论文", "no-ls": "ε_ls = 0", "beta2-999": "β₂ 0.999", "beta2-999-warm": "β₂ 0.999，预热 1000"}


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def render_schedule_figure(results: list[dict], out_dir: Path) -> None:
    r = pick(results, "lr-schedule")
    if r is None:
        placeholder_svg(out_dir, "lr-schedule.svg", "论文公式 (3) 的学习率")
        return
    c = r["config"]
    fig, ax = new_figure(FIG_WIDTH, 3.0)
    for i, (name, d) in enumerate(c["models"].items()):
        ax.plot([s / 1000 for s in r["steps"]], [1e4 * x for x in r["lr"][name]], markevery=40,
                label=f"{name}（d_model = {d}），峰值 {1e4 * r['peak'][name]:.2f}", **series_style(i))
    ax.axvline(c["warmup"] / 1000, color="#888888", linewidth=0.8, linestyle=":")
    ax.set_xlabel("训练步数（千步）")
    ax.set_ylabel("学习率（单位：万分之一）")  # 上标负号 ⁻ 不在中文字体里，画出来是方框
    ax.set_title(f"warmup_steps = {c['warmup']}（点线）\n之前线性上升，之后按 1/√step 下降")
    legend_below(ax)
    save_svg(fig, out_dir / "lr-schedule.svg", sources=[r])


def render_schedule_table(results: list[dict], out_dir: Path) -> None:
    r = pick(results, "lr-schedule")
    if r is None:
        write_text(out_dir, "lr-schedule.md", NO_RESULTS)
        return
    c = r["config"]
    rows = [[name, d, f"{r['peak'][name]:.3e}", f"{r['lr'][name][-1]:.3e}"] for name, d in c["models"].items()]
    text = (f"warmup_steps = {c['warmup']}；曲线每 {c['every']} 步取一个点，到第 {c['max_step']:,} 步。"
            f"单次运行：这些数由 `snippets/training.py` 的 `noam_lr` 算出，不是测量。\n\n")
    head = ["模型", "d_model", "峰值", f"第 {c['max_step'] // 1000}K 步"]
    write_text(out_dir, "lr-schedule.md", text + md_table(head, rows) + "\n" + md_caption(r))


def _runs(r: dict, variant: str) -> list[dict]:
    """一种变体的逐种子运行，按种子排序。"""
    return sorted((x for x in r["runs"] if x["variant"] == variant), key=lambda x: x["seed"])


def _spread(r: dict, variant: str, key: str, pct: bool) -> str:
    """评估集上 key 的各种子均值（最小–最大）；百分数的括号里不带 %（手机上表格不必横向滚动）。"""
    values = [x["eval"][key] for x in _runs(r, variant)]
    return mean_range(values, _pct, lambda x: f"{100 * x:.1f}") if pct else mean_range(values, ".3f")


def _setup(r: dict) -> str:
    t, c = r["task"], r["config"]
    return (f"任务：倒序，{t['vocab_size'] - 2} 个符号，句长取自 `{t['length_source'].split()[0]}` 的词数（{t['min_length']}–"
            f"{t['max_length']}）；读者的 Transformer，d_model = {t['d_model']}，{t['num_layers']} + {t['num_layers']} 层，"
            f"{t['num_heads']} 头，post-LN，dropout {t['dropout']}；训练集固定 {c['n_train']} 对、评估集另 {c['n_eval']} 对；"
            f"按长度分批，每批填充后 ≤ {c['max_tokens']} 个词元；学习率 {c['lr_scale']} × noam_lr(step, {t['d_model']}, "
            f"{c['warmup']})；{c['steps']} 步，种子 {c['seeds']}；单线程 CPU。")


def render_recipe_table(results: list[dict], out_dir: Path) -> None:
    r = pick(results, "training-recipe")
    if r is None:
        write_text(out_dir, "training-recipe.md", NO_RESULTS)
        return
    # ECE 的均值与范围分两列：均值一列的写法是第 08 章测试读的
    head = ["变体", "困惑度", "准确率", "ECE", "ECE 最小–最大"]
    rows = [[SHORT[s["variant"]], _spread(r, s["variant"], "perplexity", False), _spread(r, s["variant"], "accuracy", True),
             f"{s['ece_mean']:.3f}", value_range([x["eval"]["ece"] for x in _runs(r, s["variant"])], ".3f")]
            for s in r["summary"]]
    probe = "；".join(SHORT[s["variant"]] + " "
                     + mean_range([x["v_hat_over_recent_grad_sq"] for x in _runs(r, s["variant"])], ".2f")
                     for s in r["summary"])
    text = (_setup(r) + "评估集上教师强制：困惑度只含 −log p_y（不含平滑项），写作均值（各种子的最小–最大）；"
            "ECE 是 10 个置信度区间的期望校准误差，各种子的均值，下一列是它的最小–最大。\n\n")
    tail = (f"\nβ₂ 探针（训练结束时 Σ v̂ 与最近 {r['config']['grad_window']} 步 ‖g‖² 均值之比，各种子的均值（最小–最大））：{probe}。\n\n")
    beta2 = pick(results, "training-recipe", ("beta2",))
    ls = pick(results, "training-recipe", ("ls",))
    sources = (r,) + tuple(x for x in (beta2, ls) if x is not None)
    write_text(out_dir, "training-recipe.md",
               text + md_table(head, rows) + tail + _beta2_table(beta2) + _ls_table(ls, r) + md_caption(*sources))


def _ls_table(r: dict | None, full: dict) -> str:
    """ls 预设：与 full 同样的 400 步，只跑论文设置与去掉标签平滑，种子更多。没有这个文件时为空。"""
    if r is None:
        return ""
    c = r["config"]
    text = (f"**标签平滑，{len(c['seeds'])} 个种子（`--preset ls`）。** 设置同上，{c['steps']} 步，只跑"
            + "与".join(VARIANT_LABELS[v] for v in c["variants"]) + f"两种，种子 {c['seeds']}。"
            + same_runs_note(r, full, "variant") +
            "困惑度、准确率同上表；平均置信度是 max p 的均值。均值（各种子的最小–最大）。\n\n")
    rows = [[SHORT[v], _spread(r, v, "perplexity", False), _spread(r, v, "accuracy", True),
             _spread(r, v, "confidence", True), _spread(r, v, "ece", False)] for v in c["variants"]]
    return text + md_table(["变体", "困惑度", "准确率", "平均置信度", "ECE"], rows) + "\n"


def _beta2_table(r: dict | None) -> str:
    """beta2 预设：同样的步数，β₂ = 0.999 配 100 步与 1000 步预热，对照论文设置。没有这个文件时为空。"""
    if r is None:
        return ""
    c = r["config"]
    rows = []
    for v in c["variants"]:
        warmup = _runs(r, v)[0]["warmup"]
        label = SHORT[v] if v == "beta2-999-warm" else f"{SHORT[v]}，预热 {warmup}"
        rows.append([label, _spread(r, v, "perplexity", False), _spread(r, v, "accuracy", True),
                     mean_range([x["v_hat_over_recent_grad_sq"] for x in _runs(r, v)], ".2f")])
    text = (f"**β₂ 与预热（`--preset beta2`）。** 设置同上，只是 {c['steps']} 步、种子 {c['seeds']}；"
            f"β₂ = 0.999 一组配论文的 {c['warmup']} 步预热，另一组配 1000 步 = 1/(1 − β₂)。公式 (3) 在预热之后只按 "
            "1/√step 衰减、与预热步数无关，所以第 1000 步起三组的学习率逐步相同，只有前 1000 步不同（预热 1000 的一组"
            "线性上升到较低的峰值）。困惑度、准确率同上表；最后一列是 β₂ 探针。均值（各种子的最小–最大）。\n\n")
    return text + md_table(["变体", "困惑度", "准确率", "Σv̂ / 最近 ‖g‖²"], rows) + "\n"


def render_batching_table(results: list[dict], out_dir: Path) -> None:
    r = pick(results, "training-recipe")
    if r is None:
        write_text(out_dir, "training-batching.md", NO_RESULTS)
        return
    b = r["batching"]
    rows = [["按长度排序", b["sorted"]["batches"], _pct(b["sorted"]["padding_waste"])],
            ["不排序（随机顺序）", b["unsorted"]["batches"], _pct(b["unsorted"]["padding_waste"])]]
    text = (f"实验的训练集（种子 0）：{b['n_examples']} 个样本，共 {b['real_tokens']:,} 个真实词元，每批填充后 ≤ "
            f"{b['max_tokens']} 个词元，由 `token_batches` 装批。\n\n")
    write_text(out_dir, "training-batching.md", text + md_table(["装批方式", "批数", "填充浪费"], rows) + "\n" + md_caption(r))


def render_long_table(results: list[dict], out_dir: Path) -> None:
    long, full = pick(results, "training-recipe", ("long",)), pick(results, "training-recipe", ("full",))
    if long is None or full is None:
        write_text(out_dir, "training-recipe-long.md", NO_RESULTS)
        return
    steps = (full["config"]["steps"], long["config"]["steps"])
    rows = []
    for s in long["summary"]:
        for x, n in ((full, steps[0]), (long, steps[1])):
            rows.append([f"{SHORT[s['variant']]}，{n} 步", _spread(x, s["variant"], "perplexity", False),
                         _spread(x, s["variant"], "accuracy", True)])
    text = (f"两次运行只差步数（{steps[0]} 对 {steps[1]}），其余设置与种子 {long['config']['seeds']} 相同；"
            "评估集上的困惑度与准确率，均值（各种子的最小–最大）。\n\n")
    write_text(out_dir, "training-recipe-long.md",
               text + md_table(["变体与步数", "困惑度", "准确率"], rows) + "\n" + md_caption(full, long))


RENDERERS = [render_schedule_figure, render_schedule_table, render_recipe_table, render_batching_table,
             render_long_table]
