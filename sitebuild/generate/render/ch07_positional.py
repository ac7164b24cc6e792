"""第 07 章的图表：results/length-generalization.json 与 results/rope-scaling.json → docs/generated/。

- length-generalization.svg  四种位置编码与 NoPE：训练长度之外的位置上的准确率随评估长度的变化（各种子的均值，
                             竖线是最小–最大）
- length-generalization.md   同样的数字：每种编码、每个评估长度，全部位置与只看超出训练长度的位置；
                             然后是机制的两张表（最长评估长度上）：按位置分段的准确率，与「前一个词元头」的注意力去向
- length-generalization-long.md  long 预设（正弦、RoPE 与 NoPE，4 倍步数）与 full 预设并排：超出训练长度的位置上的准确率
- rope-wavelengths.svg       每一对维度的波长：原始 RoPE、PI、NTK-aware、YaRN、底数 500000（对数纵轴）
- rope-wavelengths.md        这张图的设定与几个关键数（最短、最长波长，NTK 的新底数，YaRN 的系数）；单次运行（由代码算出）

长度泛化的均值与范围都由逐种子的 runs 经 snippets.stats.summarize 算出。

没有结果文件时写占位图和一行说明。同样的输入得到逐字节相同的文件。
"""

from __future__ import annotations

from pathlib import Path

from sitebuild.generate.render._style import (FIG_WIDTH, NO_RESULTS, legend_below, log_ticks, md_caption, md_table,
                                              mean_range, new_figure, pick, placeholder_svg, save_svg, seed_errorbars,
                                              series_style, write_text)

ENCODING_LABELS = {"sinusoid": "正弦（输入端相加）", "learned": "可学习位置嵌入（输入端相加）",
                   "rope": "RoPE（旋转 q、k）", "alibi": "ALiBi（分数加线性偏置）", "nope": "NoPE（只有因果掩码）"}
SHORT_LABELS = {"sinusoid": "正弦", "learned": "可学习", "rope": "RoPE", "alibi": "ALiBi", "nope": "NoPE"}
GRID_LABELS = {"rope": "原始 RoPE（底数 10000）", "pi": "位置插值 PI", "ntk": "NTK-aware", "yarn": "YaRN",
               "rope-500k": "底数 500000"}


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _spread(values: list[float]) -> str:
    """均值（最小–最大），后两个不带 %：手机上表格不必横向滚动。"""
    return mean_range(values, _pct, lambda x: f"{100 * x:.1f}")


def _per_seed(r: dict, encoding: str, length: int, key: str) -> list[float]:
    """一种编码、一个评估长度上各种子的准确率（key：accuracy 全部位置，accuracy_beyond 只看训练长度以后）。"""
    runs = sorted((x for x in r["runs"] if x["encoding"] == encoding), key=lambda x: x["seed"])
    return [e[key] for x in runs for e in x["eval"] if e["length"] == length]


def render_length_figure(results: list[dict], out_dir: Path) -> None:
    r = pick(results, "length-generalization")
    if r is None:
        placeholder_svg(out_dir, "length-generalization.svg", "四种位置编码在训练长度之外的准确率")
        return
    c = r["config"]
    lens = [n for n in c["eval_lens"] if n > c["train_len"]]
    fig, ax = new_figure(FIG_WIDTH, 3.0)
    for i, enc in enumerate(c["encodings"]):
        mean, err = seed_errorbars([[100 * v for v in _per_seed(r, enc, n, "accuracy_beyond")] for n in lens])
        ax.errorbar(lens, mean, yerr=err, capsize=3, label=ENCODING_LABELS[enc], **series_style(i))
    ax.axhline(100 / r["task"]["vocab_size"], color="#888888", linewidth=0.8, linestyle=":")
    ax.set_xscale("log", base=2)
    log_ticks(ax.xaxis, base=2)
    ax.set_ylim(0, 105)
    ax.set_xlabel("评估长度（训练长度 %d）" % c["train_len"])
    ax.set_ylabel("超出训练长度的位置上的准确率（%）")
    ax.set_title(f"{len(c['seeds'])} 个种子的均值与最小–最大\n点线是随机猜测")
    legend_below(ax)
    save_svg(fig, out_dir / "length-generalization.svg", sources=[r])


def render_length_table(results: list[dict], out_dir: Path) -> None:
    r = pick(results, "length-generalization")
    if r is None:
        write_text(out_dir, "length-generalization.md", NO_RESULTS)
        return
    c, t = r["config"], r["task"]
    head = ["编码", "长度", "准确率：均值（最小–最大）"]
    rows = []
    for s in r["summary"]:
        if "beyond_mean" in s:                                           # 只看超出训练长度的位置
            cell = _spread(_per_seed(r, s["encoding"], s["length"], "accuracy_beyond"))
        else:                                                            # 训练长度：全部位置
            cell = _spread(_per_seed(r, s["encoding"], s["length"], "accuracy")) + "，全部位置"
        rows.append([SHORT_LABELS[s["encoding"]], s["length"], cell])
    learned = [x["learned_unseen_rows_max_change"] for x in r["runs"] if "learned_unseen_rows_max_change" in x]
    setup = (f"任务：前一个词元（位置 i 输出 x_(i−1)），{t['vocab_size']} 个符号，随机猜测 {100 / t['vocab_size']:.2f}%；"
             f"d_model = {t['d_model']}，{t['num_layers']} 层，{t['num_heads']} 头，pre-LN，因果掩码；"
             f"只在长度 {c['train_len']} 上训练，{c['optimizer']}，学习率 {c['lr']}，批大小 {c['batch_size']}，"
             f"{c['steps']} 步，每种编码 {len(c['seeds'])} 个种子 {c['seeds']}；每个评估长度 {c['eval_sequences']} "
             f"条新序列；单线程 CPU。可学习位置嵌入表里训练中从未用到的行（第 {c['train_len']} 行起）与初始值的最大差："
             f"{max(learned):g}（{len(learned)} 个种子）。表中长度 {c['train_len']} 一行是全部位置（都在训练长度内），"
             f"其余各行只看第 {c['train_len']} 个位置以后（训练时从未出现过的位置），写作均值（各种子的最小–最大，单位 %）；「正弦」「可学习」加在输入端，"
             f"RoPE、ALiBi 在注意力里，NoPE 哪里都不加（只有因果掩码）。\n\n")
    write_text(out_dir, "length-generalization.md",
               setup + md_table(head, rows) + "\n" + _mechanism_tables(r) + md_caption(r))


def _probes(r: dict, encoding: str) -> list[dict]:
    """一种编码各种子的探针（最长评估长度上），按种子排序。"""
    return [x["probe"] for x in sorted(r["runs"], key=lambda x: x["seed"]) if x["encoding"] == encoding]


def _mechanism_tables(r: dict) -> str:
    """机制的两张表：最长评估长度上按查询位置分段的准确率；每个种子的「前一个词元头」把注意力放在哪里。"""
    c = r["config"]
    L, first = c["train_len"], _probes(r, c["encodings"][0])[0]
    buckets = [(b["start"], b["end"]) for b in first["buckets"]]
    head = ["编码"] + [f"位置 {a}–{b - 1}" for a, b in buckets]
    rows = []
    for enc in c["encodings"]:
        probes = _probes(r, enc)
        rows.append([SHORT_LABELS[enc]] + [_spread([p["buckets"][k]["accuracy"] for p in probes])
                                           for k in range(len(buckets))])
    text = (f"**机制。** 长度 {first['length']} 上（与上表同一批 {c['eval_sequences']} 条序列），按查询位置分段的准确率；"
            f"第一段 1–{L - 1} 在训练长度内，其余各段训练时从未出现过：\n\n" + md_table(head, rows) + "\n")
    head = ["编码", "头在第 2 层", f"偏移 −1 的权重：位置 1–{L - 1}", f"位置 ≥ {L}", f"距离 ≥ {L} 的键"]
    rows = []
    for enc in c["encodings"]:
        chosen = [p["heads"][p["previous_token_head"]] for p in _probes(r, enc)]
        rows.append([SHORT_LABELS[enc], f"{sum(h['layer'] == 1 for h in chosen)} / {len(chosen)}"]
                    + [_spread([h[k] for h in chosen]) for k in ("offset1_in_range", "offset1_beyond", "far_mass_beyond")])
    text += (f"每个种子的「前一个词元头」：两层共 {len(first['heads'])} 个头里，在位置 1–{L - 1} 上给偏移 −1 的键"
             f"（前一个词元）权重最大的那一个。表中是它的注意力权重，对 {c['eval_sequences']} 条序列和各查询位置取平均："
             f"偏移 −1 上的权重分训练长度内、外；最后一列是位置 ≥ {L} 的查询落在距离 ≥ {L} 的键"
             f"（训练时从未出现过的距离）上的权重之和。写作均值（各种子的最小–最大，单位 %）；「头在第 2 层」是这个头在第 2 层的种子数。\n\n"
             + md_table(head, rows) + "\n")
    return text


def render_long_table(results: list[dict], out_dir: Path) -> None:
    long, full = pick(results, "length-generalization", ("long",)), pick(results, "length-generalization", ("full",))
    if long is None or full is None:
        write_text(out_dir, "length-generalization-long.md", NO_RESULTS)
        return
    steps = (full["config"]["steps"], long["config"]["steps"])
    head = ["编码", "长度", f"{steps[0]} 步", f"{steps[1]} 步"]
    rows = []
    for s in long["summary"]:
        if "beyond_mean" not in s:
            continue
        rows.append([SHORT_LABELS[s["encoding"]], s["length"]]
                    + [_spread(_per_seed(x, s["encoding"], s["length"], "accuracy_beyond")) for x in (full, long)])
    c, seeds = long["config"], [x["config"]["seeds"] for x in (full, long)]
    counts = "；".join(f"{n} 步 {len(s)} 个种子（{s[0]}–{s[-1]}）" for n, s in zip(steps, seeds))
    shared = sorted(set(seeds[0]) & set(seeds[1]))
    same = "种子相同" if seeds[0] == seeds[1] else f"种子 {shared[0]}–{shared[-1]} 两次都跑了"
    text = (f"超出训练长度的位置上的准确率，均值（各种子的最小–最大，单位 %）：{counts}。两次运行只差步数与种子数（{same}），其余设置相同："
            f"训练长度 {c['train_len']}，每个评估长度 {c['eval_sequences']} 条新序列。\n\n")
    write_text(out_dir, "length-generalization-long.md", text + md_table(head, rows) + "\n" + md_caption(full, long))


def render_wavelength_figure(results: list[dict], out_dir: Path) -> None:
    r = pick(results, "rope-scaling")
    if r is None:
        placeholder_svg(out_dir, "rope-wavelengths.svg", "RoPE 各对维度的波长")
        return
    fig, ax = new_figure(FIG_WIDTH, 3.0)
    for i, name in enumerate(["rope", "pi", "ntk", "yarn", "rope-500k"]):
        lam = r["wavelengths"][name]
        ax.plot(range(len(lam)), lam, label=GRID_LABELS[name], markevery=8, **series_style(i))
    ax.axhline(r["config"]["original_len"], color="#888888", linewidth=0.8, linestyle=":")
    ax.set_yscale("log")
    log_ticks(ax.yaxis)
    ax.set_xlabel("维度对的编号 i")
    ax.set_ylabel("波长 2π/θ_i（词元）")
    ax.set_title(f"d = {r['config']['d']}，s = {r['config']['factor']:g}\n点线是原长度 L = {r['config']['original_len']}")
    legend_below(ax)
    save_svg(fig, out_dir / "rope-wavelengths.svg", sources=[r])


def render_wavelength_table(results: list[dict], out_dir: Path) -> None:
    r = pick(results, "rope-scaling")
    if r is None:
        write_text(out_dir, "rope-wavelengths.md", NO_RESULTS)
        return
    c = r["config"]
    head = ["频率网格", "最短波长", "最长波长"]
    rows = [[GRID_LABELS[k], f"{min(v):.2f}", f"{max(v):,.0f}"] for k, v in r["wavelengths"].items()]
    text = (f"设定：每个头 d = {c['d']}，原长度 L = {c['original_len']}，扩展倍数 s = {c['factor']:g}，"
            f"YaRN 的 α = {c['alpha']:g}、β = {c['beta']:g}。NTK-aware 的新底数 {r['ntk_base']:,.0f}；"
            f"YaRN 乘在 cos、sin 上的系数 {r['yarn_mscale']:.4f}。单次运行：这些数由 `snippets/positional.py` 算出，不是测量。\n\n")
    write_text(out_dir, "rope-wavelengths.md", text + md_table(head, rows) + "\n" + md_caption(r))


RENDERERS = [render_length_figure, render_length_table, render_long_table, render_wavelength_figure,
             render_wavelength_table]
