"""第 06 章的图表：results/embedding-scale.json 与 results/vocab-sweep.json → docs/generated/。

- embedding-scale.svg  各种初始化的训练损失曲线（各种子的均值，对数纵轴；色带是各种子的最小–最大）
- embedding-scale.md   每种初始化：嵌入/位置编码范数之比、初始 logits（当前输入词元那一列与其余各列分开）、
                       argmax 是当前输入词元的位置占比、初始与最终损失、贪心准确率；每格「均值（最小–最大）」，
                       由逐种子的 runs 经 snippets.stats.summarize 算出
- bpe-agreement.md、vocab-sweep.*：单次运行（BPE 是确定的算法，没有种子）
- bpe-agreement.md     从零写的 BPE 与 tokenizers 库：合并列表是否逐条相同、并列步数、编码与还原
- vocab-sweep.svg      词表大小与留出句子的每句平均词元数：英文、中文，字符级与字节级基本符号；
                       字符起步的 BPE 另画训练句子（样本内）作对照
- vocab-sweep.md       同样的数字（留出与样本内），外加留出句子的字符数、UTF-8 字节数、空格分隔的词数

没有结果文件时写占位图和一行说明。同样的输入得到逐字节相同的文件。
"""

from __future__ import annotations

from pathlib import Path

from sitebuild.generate.render._style import (FIG_WIDTH, NO_RESULTS, PALETTE, legend_below, log_ticks, md_caption, md_table,
                                    mean_range, new_figure, pick, placeholder_svg, save_svg, seed_errorbars,
                                    series_style, write_text)

INIT_LABELS = {
    "t2t": "共享，N(0, 1/d) 且 ×√d（tensor2tensor）",
    "unit": "共享，N(0, 1) 且 ×√d（nn.Embedding 默认）",
    "unit-noscale": "共享，N(0, 1)，不乘 √d",
    "unit-untied": "不共享：输入 N(0, 1) 且 ×√d，输出 N(0, 1/d)",
    "t2t-untied": "不共享：输入 N(0, 1/d) 且 ×√d，输出 N(0, 1/d)",
}
LANG_LABELS = {"en": "英文", "zh": "中文"}
CORPUS_LABELS = {"en": "英文 81 句", "zh": "中文 81 句", "tiefree": "无并列语料（英文词表）"}


def _runs(r: dict, init: str) -> list[dict]:
    """一种初始化的逐种子运行，按种子排序。"""
    return sorted((x for x in r["runs"] if x["init"] == init), key=lambda x: x["seed"])


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def render_scale_figure(results: list[dict], out_dir: Path) -> None:
    r = pick(results, "embedding-scale", ("long", "full", "quick"))
    if r is None:
        placeholder_svg(out_dir, "embedding-scale.svg", "共享嵌入的初始化尺度：倒序任务的训练损失")
        return
    fig, ax = new_figure(FIG_WIDTH, 3.0)
    for i, init in enumerate(r["config"]["inits"]):
        runs = _runs(r, init)
        steps = [c["step"] for c in runs[0]["curve"]]
        mean, (below, above) = seed_errorbars([[x["curve"][j]["loss"] for x in runs] for j in range(len(steps))])
        style = series_style(i)
        ax.fill_between(steps, [m - d for m, d in zip(mean, below)], [m + d for m, d in zip(mean, above)],
                        color=style["color"], alpha=0.15, linewidth=0)
        ax.plot(steps, mean, label=INIT_LABELS[init], markevery=2, **style)
    ax.set_yscale("log")
    log_ticks(ax.yaxis)
    ax.set_xlabel("训练步数")
    ax.set_ylabel("训练损失")
    ax.set_title(f"每 {r['config']['log_every']} 步平均，{len(r['config']['seeds'])} 个种子的均值\n色带：各种子的最小–最大")
    legend_below(ax)
    save_svg(fig, out_dir / "embedding-scale.svg", sources=[r])


def render_scale_table(results: list[dict], out_dir: Path) -> None:
    r = pick(results, "embedding-scale", ("long", "full", "quick"))
    if r is None:
        write_text(out_dir, "embedding-scale.md", NO_RESULTS)
        return
    head = ["嵌入的初始化", "嵌入/位置编码范数比", "初始 logits 标准差", "当前输入词元的 logit",
            "其余 logits 的标准差", "argmax = 当前输入词元", "初始损失", "最终训练损失", "贪心逐词准确率"]
    rows = []
    for s in r["summary"]:
        runs = _runs(r, s["init"])
        init = [x["init_stats"] for x in runs]
        rows.append([INIT_LABELS[s["init"]], mean_range([x["emb_pe_ratio"] for x in init], ".2f"),
                     mean_range([x["logit_std"] for x in init], ".1f"),
                     mean_range([x["self_logit_mean"] for x in init], lambda v: f"{round(v, 1) + 0.0:.1f}"),
                     mean_range([x["other_logit_std"] for x in init], ".2f"),
                     mean_range([x["argmax_is_input"] for x in init], _pct),
                     mean_range([x["loss"] for x in init], ".1f"), mean_range([x["final_loss"] for x in runs], ".3f"),
                     mean_range([x["accuracy"] for x in runs], _pct)])
    t, c = r["task"], r["config"]
    setup = (f"任务：倒序，{t['vocab_size'] - 2} 个符号，长度 {t['seq_len']}；d_model = {t['d_model']}，"
             f"{t['num_layers']} 层，{t['num_heads']} 头，post-LN；{c['optimizer']}，学习率 {c['lr']}，"
             f"批大小 {c['batch_size']}，{c['steps']} 步，每种 {len(c['seeds'])} 个种子 {c['seeds']}；"
             f"初始 logits 在 256 条序列的每个解码位置上统计；"
             f"准确率在 {c['eval_sequences']} 条新序列上贪心解码；单线程 CPU。每格是各种子的均值（最小–最大）。\n\n")
    write_text(out_dir, "embedding-scale.md", setup + md_table(head, rows) + "\n" + md_caption(r))


def render_agreement_table(results: list[dict], out_dir: Path) -> None:
    r = pick(results, "vocab-sweep", ("long", "full", "quick"))
    if r is None:
        write_text(out_dir, "bpe-agreement.md", NO_RESULTS)
        return
    head = ["语料", "要求 / 学到的合并数", "基本符号 → 词表大小", "两份合并列表第一处不同", "最高次数并列的步数",
            "逐句词元相同", "逐句还原"]
    rows = []
    for a in r["agreement"]:
        diff = "无（逐条相同）" if a["first_difference"] is None else f"第 {a['first_difference']} 条"
        ties = f"{a['tie_steps']}（第一次在第 {a['first_tie']} 步）" if a["tie_steps"] else "0"
        rows.append([CORPUS_LABELS[a["corpus"]], f"{a['num_merges']} / {a['ours']}（库：{a['library']}）",
                     f"{a['base_size']} → {a['vocab_size']}", diff, ties,
                     f"{a['same_tokens']}/{a['sentences']}", f"{a['round_trip']}/{a['sentences']}"])
    note = "单次运行：BPE 的训练与编码是确定的算法，没有随机种子。\n\n"
    write_text(out_dir, "bpe-agreement.md", note + md_table(head, rows) + "\n" + md_caption(r))


def render_sweep_figure(results: list[dict], out_dir: Path) -> None:
    r = pick(results, "vocab-sweep", ("long", "full", "quick"))
    if r is None:
        placeholder_svg(out_dir, "vocab-sweep.svg", "词表大小与每句平均词元数")
        return
    fig, ax = new_figure(FIG_WIDTH, 3.0)
    for i, s in enumerate(r["sweeps"]):
        pts = s["points"]
        lang = LANG_LABELS[s["lang"]]
        ax.plot([p["vocab_size"] for p in pts], [p["tokens_mean"] for p in pts], color=PALETTE[i],
                marker="o" if i == 0 else "^", label=f"{lang}：字符起步的 BPE（本章代码），留出句子")
        ax.plot([p["vocab_size"] for p in pts], [p["train_tokens_mean"] for p in pts], color=PALETTE[i],
                marker="o" if i == 0 else "^", markerfacecolor="none", linestyle=(0, (1, 1)), linewidth=1.0,
                label=f"{lang}：同上，训练句子（样本内）")
        ax.plot([p["byte_level_vocab_size"] for p in pts], [p["byte_level_tokens_mean"] for p in pts],
                color=PALETTE[i], marker="s" if i == 0 else "D", linestyle="--" if i == 0 else "-.",
                label=f"{lang}：字节级 BPE（tokenizers），留出句子")
    ax.set_xscale("log")
    log_ticks(ax.xaxis)
    ax.set_xlabel("词表大小（基本符号 + 合并数）")
    ax.set_ylabel("每句平均词元数")
    ax.set_ylim(bottom=0)
    legend_below(ax)
    save_svg(fig, out_dir / "vocab-sweep.svg", sources=[r])


def render_sweep_table(results: list[dict], out_dir: Path) -> None:
    r = pick(results, "vocab-sweep", ("long", "full", "quick"))
    if r is None:
        write_text(out_dir, "vocab-sweep.md", NO_RESULTS)
        return
    head = ["语言", "合并数", "词表（字符起步）", "每句词元数：留出", "每句词元数：训练（样本内）",
            "词表（字节级）", "字节级每句词元数：留出", "字节级：训练（样本内）"]
    rows = [[LANG_LABELS[s["lang"]], p["merges"], p["vocab_size"], f"{p['tokens_mean']:.1f}",
             f"{p['train_tokens_mean']:.1f}", p["byte_level_vocab_size"], f"{p['byte_level_tokens_mean']:.1f}",
             f"{p['byte_level_train_tokens_mean']:.1f}"]
            for s in r["sweeps"] for p in s["points"]]
    facts = "".join(f"- {LANG_LABELS[s['lang']]}：{s['sentences']} 句，每 {r['config']['heldout_every']} 句留出 1 句"
                    f"（留出 {s['heldout_sentences']} 句，训练 {s['train_sentences']} 句）；留出句子每句平均 "
                    f"{s['chars_mean']:.1f} 个字符、{s['utf8_bytes_mean']:.1f} 个 UTF-8 字节、"
                    f"{s['words_mean']:.1f} 个空格分隔的词；训练句子的基本字符 {s['base_size']} 个，"
                    f"扫描时学了 {s['learned_merges']} 条合并；留出句子里有 {s['heldout_unseen_chars']} 种字符"
                    f"（共出现 {s['heldout_unseen_occurrences']} 次）在训练句子里没有出现过。\n"
                    for s in r["sweeps"])
    note = "单次运行：BPE 的训练与编码是确定的算法，没有随机种子；每句词元数是留出（或训练）句子上的平均。\n\n"
    write_text(out_dir, "vocab-sweep.md", facts + "\n" + note + md_table(head, rows) + "\n" + md_caption(r))


RENDERERS = [render_scale_figure, render_scale_table, render_agreement_table, render_sweep_figure,
             render_sweep_table]
