"""第 10 章的表格与图：论文表 3（snippets/variations.py 的 table3()）、逐行重算的参数量，以及
results/model-variations.json（表 3 (B)(C)(D) 的玩具版）→ docs/generated/。

- ch10-table3.md          表 3 的 20 行：改了什么、困惑度、BLEU、论文的参数量
- ch10-param-count.md     有参数量的 11 行与 (E)：论文的值，按读者模型的约定在 |V| = 37000、41000、36000 下重算
- ch10-variations.md      玩具扫描：每个变体的参数量、评估集困惑度、训练集困惑度、准确率（各种子的均值与范围，
                          逐种子的 runs 经 snippets.stats.summarize 算出）
- ch10-variations.svg     同样的评估集困惑度：每个种子一个点，竖线是均值

没有结果文件时写占位图和一行说明。同样的输入得到逐字节相同的文件。
"""

from __future__ import annotations

from pathlib import Path

from sitebuild.generate.render._style import (FIG_WIDTH, NO_RESULTS, TEXT_COLOR, md_caption, md_table, mean_range,
                                              new_figure, pick, placeholder_svg, save_svg, series_style, write_text)
from snippets.variations import row_param_count, rounds_to, table3

VOCABS = (37000, 41000, 36000)
E_POSITIONS = 512            # (E) 行示例：可学习位置表的行数（论文没有写）

# 玩具变体的短标签（手机上不必横向滚动）
VARIANT_LABELS = {"base": "基线", "dk-4": "(B) d_k 16→4", "d-32": "(C) d 64→32", "d-128": "(C) d 64→128",
                  "layers-1": "(C) 层 2→1", "layers-4": "(C) 层 2→4", "drop-0": "(D) dropout 0",
                  "drop-0.3": "(D) dropout 0.3", "small-drop-0": "100 对，dropout 0",
                  "small-drop-0.1": "100 对，dropout 0.1", "small-drop-0.3": "100 对，dropout 0.3"}


def variant_label(r: dict, variant: str) -> str:
    """变体的短标签；改了 d_model 的变体若 d_ff 也随之改了（玩具的 (C) 宽度一次动了两个旋钮，
    表 3 的 d 行不改 d_ff），从结果文件里读出新的 d_ff 写进标签。"""
    label = VARIANT_LABELS[variant]
    base = r["task"]["base_model"]
    model = next(x["model"] for x in r["runs"] if x["variant"] == variant)
    if model["d_model"] != base["d_model"] and model["d_ff"] != base["d_ff"]:
        label += f"（d_ff {model['d_ff']}）"
    return label


def row_label(row: dict) -> str:
    """表 3 一行的短名：组 + 改了的那一列。"""
    if row["group"] in ("base", "big"):
        return row["group"]
    if row["group"] == "E":
        return "(E) 可学习位置"
    names = {"N": "N", "d_model": "d", "d_ff": "d_ff", "h": "h", "d_k": "d_k", "p_drop": "P_drop", "eps_ls": "ε_ls"}
    key = next(k for k in ("h", "d_model", "N", "d_ff", "d_k", "p_drop", "eps_ls") if k in row["changed"])
    return f"({row['group']}) {names[key]} = {row[key]}"


def render_table3(results: list[dict], out_dir: Path) -> None:
    head = ["行", "困惑度", "BLEU", "参数（M）"]
    rows = [[row_label(r), f"{r['ppl']:.2f}", f"{r['bleu']:.1f}", "—" if r["params_m"] is None else r["params_m"]]
            for r in table3()]
    text = ("论文表 3（newstest2013 开发集；困惑度按 word-piece 计；束搜索，不做检查点平均）。表里空着的格子按表注"
            "「与 base 相同」补上；「—」是论文没有报告的参数量。数据来自 `snippets/variations.py` 的 `table3()`，"
            "本章的测试与这张表读的是同一份。\n\n")
    write_text(out_dir, "ch10-table3.md", text + md_table(head, rows))


def render_param_count(results: list[dict], out_dir: Path) -> None:
    head = ["行", "论文", *(f"词表 {v // 1000}K" for v in VOCABS)]
    rows = []
    for r in table3():
        if r["params_m"] is None and r["group"] != "E":
            continue
        lp = E_POSITIONS if r["group"] == "E" else 0
        cells = []
        for v in VOCABS:
            c = row_param_count(r, v, lp)
            ok = r["params_m"] is not None and rounds_to(c, r["params_m"])
            cells.append(f"{c / 1e6:.2f}" + (" ✔" if ok else ""))
        rows.append([row_label(r), "—" if r["params_m"] is None else r["params_m"], *cells])
    text = ("单位：百万个参数；后三列是按三个词表大小重算的值。按读者模型的约定（每个线性层带偏置，LayerNorm 有增益和偏置，没有末尾 LayerNorm，"
            "输出投影无偏置，三处共享一个嵌入矩阵）用 `table3_param_count` 算出；✔ 表示四舍五入到百万后等于论文的值。"
            f"(E) 行按 {E_POSITIONS} 个位置的可学习表示意（论文没有写表长，也没有报告参数量）。\n\n")
    write_text(out_dir, "ch10-param-count.md", text + md_table(head, rows))


def _per_seed(r: dict, variant: str, split: str, key: str) -> list[float]:
    """一个变体在各种子上的 run[split][key]（split：eval 评估集，train_eval 训练集）。"""
    return [x[split][key] for x in sorted(r["runs"], key=lambda x: x["seed"]) if x["variant"] == variant]


def _setup(r: dict) -> str:
    c, m = r["config"], r["task"]["base_model"]
    return (f"任务：第 08 章的倒序任务（同一份数据、同一个训练循环）。基线：读者的 Transformer，d_model = {m['d_model']}，"
            f"{m['num_heads']} 个头（d_k = {m['d_model'] // m['num_heads']}），编码器、解码器各 {m['num_layers']} 层，"
            f"d_ff = {m['d_ff']}，dropout {m['dropout']}，标签平滑 {c['label_smoothing']}；Adam(0.9, {c['beta2']}, 1e−9)，"
            f"学习率 {c['lr_scale']} · noam_lr(step, d_model, {c['warmup']})；训练集 {c['n_train']} 对（「100 对」的变体只有 100 对），"
            f"评估集 {c['n_eval']} 对新序列；{c['steps']} 步，种子 {c['seeds']}；单线程 CPU。")


def render_sweep_table(results: list[dict], out_dir: Path) -> None:
    r = pick(results, "model-variations")
    if r is None:
        write_text(out_dir, "ch10-variations.md", NO_RESULTS)
        return
    head = ["变体", "参数量", "评估困惑度", "训练困惑度", "准确率"]
    rows = [[variant_label(r, s["variant"]), f"{s['params']:,}",
             mean_range(_per_seed(r, s["variant"], "eval", "perplexity"), ".3f"),
             mean_range(_per_seed(r, s["variant"], "train_eval", "perplexity"), ".3f"),
             mean_range(_per_seed(r, s["variant"], "eval", "accuracy"), lambda x: f"{100 * x:.1f}%",
                        lambda x: f"{100 * x:.1f}")] for s in r["summary"]]
    text = (_setup(r) + "\n\n困惑度是教师强制下 exp(平均负对数似然)（不含平滑项）。每格是各种子的均值，括号里是最小–最大"
            "（准确率的括号里单位是 %）。\n\n")
    write_text(out_dir, "ch10-variations.md", text + md_table(head, rows) + "\n" + md_caption(r))


def render_sweep_figure(results: list[dict], out_dir: Path) -> None:
    r = pick(results, "model-variations")
    if r is None:
        placeholder_svg(out_dir, "ch10-variations.svg", "表 3 (B)(C)(D) 的玩具版：各变体的评估集困惑度")
        return
    names = [s["variant"] for s in r["summary"]]
    fig, ax = new_figure(FIG_WIDTH, 3.8)
    for i, name in enumerate(names):
        y = len(names) - 1 - i
        ppl = [x["eval"]["perplexity"] for x in r["runs"] if x["variant"] == name]
        ax.plot(ppl, [y] * len(ppl), **{**series_style(0 if name == "base" else 1), "linestyle": "none"})
        mean = sum(ppl) / len(ppl)
        # the mean in the text colour: dark_variant swaps it for a light grey (#555555 all but vanished there)
        ax.plot([mean, mean], [y - 0.3, y + 0.3], color=TEXT_COLOR, linewidth=1.5)
    ax.set_yticks(range(len(names)))
    ax.set_yticklabels([variant_label(r, n) for n in reversed(names)])
    ax.set_xlabel("评估集困惑度（越低越好）")
    ax.set_title(f"每个种子一个点，竖线是均值\n{r['config']['steps']} 步，{len(r['config']['seeds'])} 个种子")
    save_svg(fig, out_dir / "ch10-variations.svg", sources=[r])


RENDERERS = [render_table3, render_param_count, render_sweep_table, render_sweep_figure]


def render_long_table(results: list[dict], out_dir: Path) -> None:
    """full（300 步）与 long（900 步）并排：同样的种子与设置，只差步数，只有 long 跑过的 5 个变体。"""
    full, long = pick(results, "model-variations", ("full",)), pick(results, "model-variations", ("long",))
    if full is None or long is None:
        write_text(out_dir, "ch10-variations-long.md", NO_RESULTS)
        return
    head = ["变体", f"{full['config']['steps']} 步", f"{long['config']['steps']} 步"]
    rows = []
    for s in long["summary"]:
        rows.append([variant_label(long, s["variant"])]
                    + [mean_range(_per_seed(x, s["variant"], "eval", "perplexity"), ".3f") for x in (full, long)])
    text = (f"评估集困惑度，种子 {long['config']['seeds']} 的均值（最小–最大）。两次运行只差训练步数，"
            "其余设置、数据与种子都相同。\n\n")
    write_text(out_dir, "ch10-variations-long.md", text + md_table(head, rows) + "\n" + md_caption(full, long))


RENDERERS.append(render_long_table)
