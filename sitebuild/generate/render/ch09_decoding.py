"""第 09 章的图表：results/toy-translation.json（与 -early、-long 两个预设的文件）→ docs/generated/。

- toy-translation.svg          五种解码方式的 BLEU：每个种子一个点，竖线是均值
- toy-translation.md           同样的数字：BLEU（本章的 corpus_bleu）、与 sacreBLEU 的最大差、长度比 c/r、整句正确的比例
- toy-translation-averaging.md 每个种子：最后一个检查点与最后 k 个的平均，测试集交叉熵与贪心、束搜索的 BLEU
- toy-translation-budgets.md   early（300 步）、full（600 步）、long（1800 步）并排的 BLEU
- toy-translation-paired.md    每个预算、每个种子内，按句子配对重抽（sacreBLEU 的 paired bootstrap）的 BLEU 差与 p 值

表里的均值都带各种子的最小–最大（逐种子的 runs 经 snippets.stats.summarize 算出）。

没有结果文件时写占位图和一行说明。同样的输入得到逐字节相同的文件。
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from snippets.stats import bleu_paired_bootstrap

from sitebuild.generate.render._style import (FIG_WIDTH, NO_RESULTS, TEXT_COLOR, md_caption, md_table, mean_range,
                                              new_figure, pick, placeholder_svg, save_svg, series_style, write_text)

# 短标签：手机上表格不必横向滚动。「束 4」= 束宽 4；「平均」= 最后 k 个检查点的平均
METHOD_LABELS = {"greedy": "贪心", "beam4": "束 4，α=0", "beam4-lp": "束 4，α=0.6",
                 "avg-greedy": "平均 + 贪心", "avg-beam4-lp": "平均 + 束 4，α=0.6"}
LEGEND = "「束 4」是束宽 4 的束搜索，α 是长度惩罚的指数；「平均」是最后 k 个检查点的平均，其余方法用最后一个检查点。"


def _per_seed(r: dict, method: str, key: str) -> list[float]:
    """一种解码方式的 key（bleu、length_ratio、exact_match）在各种子上的值。"""
    return [x["methods"][method][key] for x in sorted(r["runs"], key=lambda x: x["seed"])]


def _setup(r: dict) -> str:
    c, t = r["config"], r["task"]
    seen = max(x["test_sentences_seen_in_training"] for x in r["runs"])
    return (f"任务：合成语法的 SVO → SOV 翻译（形容词后置、副词跟主语、动词到句末），共享词表 {t['vocab_size']} 个词；"
            f"读者的 Transformer，d_model = {t['d_model']}，编码器、解码器各 {t['num_layers']} 层，{t['num_heads']} 头，"
            f"d_ff = {t['d_ff']}，dropout {t['dropout']}，标签平滑 {t['label_smoothing']}；{c['optimizer']}，峰值学习率 {c['lr']}，"
            f"预热 {c['warmup_steps']} 步后按步数的 −1/2 次方衰减，批大小 {c['batch_size']} 句，{c['steps']} 步，"
            f"种子 {c['seeds']}；最后 {c['ckpt_last']} 步里每 {c['ckpt_every']} 步存一个检查点，平均最后 {c['average_k']} 个。"
            f"测试集 {c['test_sentences']} 句（另一个种子抽样；训练流里出现过的比例最多 {100 * seen:.0f}%），"
            f"最大输出长度 = 输入长度 + {c['max_extra']}；单线程 CPU。")


def render_figure(results: list[dict], out_dir: Path) -> None:
    r = pick(results, "toy-translation")
    if r is None:
        placeholder_svg(out_dir, "toy-translation.svg", "玩具翻译任务上五种解码方式的 BLEU")
        return
    methods = [s["method"] for s in r["summary"]]
    fig, ax = new_figure(FIG_WIDTH, 3.2)
    for i, m in enumerate(methods):
        y = len(methods) - 1 - i
        bleu = [x["methods"][m]["bleu"] for x in r["runs"]]
        ax.plot(bleu, [y] * len(bleu), **{**series_style(i), "linestyle": "none"})
        mean = sum(bleu) / len(bleu)
        # the mean in the text colour: dark_variant swaps it for a light grey (#555555 all but vanished there)
        ax.plot([mean, mean], [y - 0.3, y + 0.3], color=TEXT_COLOR, linewidth=1.5)
    ax.set_yticks(range(len(methods)))
    ax.set_yticklabels([METHOD_LABELS[m] for m in reversed(methods)])
    ax.set_xlabel("BLEU（本章的 corpus_bleu，与 sacreBLEU 相同）")
    ax.set_title(f"{len(r['runs'])} 个种子各一个点，竖线是均值\n{r['config']['steps']} 步，测试集 "
                 f"{r['config']['test_sentences']} 句")
    save_svg(fig, out_dir / "toy-translation.svg", sources=[r])


def render_table(results: list[dict], out_dir: Path) -> None:
    r = pick(results, "toy-translation")
    if r is None:
        write_text(out_dir, "toy-translation.md", NO_RESULTS)
        return
    head = ["解码", "BLEU", "c/r", "全对"]
    rows = [[METHOD_LABELS[s["method"]], mean_range(_per_seed(r, s["method"], "bleu"), ".2f"),
             mean_range(_per_seed(r, s["method"], "length_ratio"), ".3f"),
             mean_range(_per_seed(r, s["method"], "exact_match"), lambda x: f"{100 * x:.1f}%",
                        lambda x: f"{100 * x:.1f}")] for s in r["summary"]]
    diff = max(abs(m["bleu"] - m["sacrebleu"]) for x in r["runs"] for m in x["methods"].values())
    sig = r["runs"][0]["methods"]["greedy"]["signature"]
    text = (_setup(r) + f"\n\nBLEU 由本章的 `corpus_bleu` 算出；sacreBLEU（签名 `{sig}`）对每个种子、每种解码给出的分数与它"
            f"最多相差 {diff:.1e}。c/r 是译文总词数与参考总词数之比（简短惩罚用的就是它），「全对」是与参考逐字相同的句子比例；"
            f"每格是各种子的均值，括号里是最小–最大（「全对」的括号里单位是 %）。{LEGEND}\n\n")
    write_text(out_dir, "toy-translation.md", text + md_table(head, rows) + "\n" + md_caption(r))


def render_averaging_table(results: list[dict], out_dir: Path) -> None:
    r = pick(results, "toy-translation")
    if r is None:
        write_text(out_dir, "toy-translation-averaging.md", NO_RESULTS)
        return
    k = r["config"]["average_k"]
    head = ["种子", "交叉熵", "贪心 BLEU", "束 4 BLEU"]
    rows = []
    for x in r["runs"]:
        m = x["methods"]
        rows.append([x["seed"], f"{x['test_loss']['last']:.3f} → {x['test_loss']['averaged']:.3f}",
                     f"{m['greedy']['bleu']:.2f} → {m['avg-greedy']['bleu']:.2f}",
                     f"{m['beam4-lp']['bleu']:.2f} → {m['avg-beam4-lp']['bleu']:.2f}"])
    text = (f"「最后」是训练结束时的检查点，「平均」是最后 {k} 个检查点（每 {r['config']['ckpt_every']} 步一个）的逐元素平均；"
            f"每格是「最后 → 平均」；交叉熵在测试集的参考译文上算（教师强制，不带标签平滑），束搜索用 α = 0.6。\n\n")
    write_text(out_dir, "toy-translation-averaging.md", text + md_table(head, rows) + "\n" + md_caption(r))


def _signed(values: list[float]) -> str:
    return "、".join(f"{v:+.2f}".replace("-", "−") for v in values)


def render_budget_table(results: list[dict], out_dir: Path) -> None:
    """early、full、long 三个预设并排：同样的设置与种子，只差训练步数。"""
    runs = [r for r in (pick(results, "toy-translation", (p,)) for p in ("early", "full", "long")) if r is not None]
    if len(runs) < 2 or not any(r["preset"] == "full" for r in runs):
        write_text(out_dir, "toy-translation-budgets.md", NO_RESULTS)
        return
    head = ["解码"] + [f"{r['config']['steps']} 步（{len(r['runs'])} 个种子）" for r in runs]
    rows = []
    for method in METHOD_LABELS:
        rows.append([METHOD_LABELS[method]] + [mean_range(_per_seed(r, method, "bleu"), ".2f") for r in runs])
    lines = []
    for r in runs:
        seeds = sorted(r["runs"], key=lambda x: x["seed"])
        beam = [x["methods"]["beam4"]["bleu"] - x["methods"]["greedy"]["bleu"] for x in seeds]
        lp = [x["methods"]["beam4-lp"]["bleu"] - x["methods"]["beam4"]["bleu"] for x in seeds]
        avg = [x["methods"]["avg-beam4-lp"]["bleu"] - x["methods"]["beam4-lp"]["bleu"] for x in seeds]
        loss = sum(x["test_loss"]["averaged"] < x["test_loss"]["last"] for x in seeds)
        lines.append(f"- {r['config']['steps']} 步（种子 {'、'.join(str(x['seed']) for x in seeds)} 依次）：束 4 减贪心 "
                     f"{_signed(beam)}；α=0.6 减 α=0 {_signed(lp)}；平均减最后一个（束 4，α=0.6）{_signed(avg)}；"
                     f"平均降低测试集交叉熵的种子 {loss}/{len(seeds)}")
    text = (f"BLEU，各种子的均值（最小–最大）。几次运行只差训练步数与种子数，其余设置与测试集都相同，同一个种子号"
            f"在各次运行里初始化相同。{LEGEND}\n\n"
            + md_table(head, rows) + "\n每个种子的 BLEU 差：\n\n" + "\n".join(lines) + "\n\n")
    write_text(out_dir, "toy-translation-budgets.md", text + md_caption(*runs))


# 页面读的 BLEU 比较：(后者, 前者, 标签)，差 = 后者 − 前者
COMPARISONS = [("beam4", "greedy", "束 4，α=0 − 贪心"), ("beam4-lp", "greedy", "束 4，α=0.6 − 贪心"),
               ("beam4-lp", "beam4", "α=0.6 − α=0"), ("avg-beam4-lp", "beam4-lp", "平均 − 最后（束 4，α=0.6）")]


@lru_cache(maxsize=None)
def _paired(path: str, commit: str, preset: str, b: str, a: str, seed: int, hyps_a: tuple, hyps_b: tuple, refs: tuple):
    return bleu_paired_bootstrap(list(hyps_a), list(hyps_b), list(refs))


def sentence_level(r: dict, b: str, a: str) -> list[tuple]:
    """每个种子内：方法 b 减方法 a 的语料级 BLEU 差，按测试句配对重抽（sacreBLEU PairedTest，Koehn 2004）。
    回答的是「这个测试集的抽样误差能不能解释这个差」，与逐种子配对（训练的随机性）是两个问题。
    按种子顺序返回 (BleuComparison, 两者逐句相同)；逐句相同时 sacreBLEU 的 p 值退化（1/(n+1)），不读它。"""
    refs = tuple(r["test_set"]["references"])
    out = []
    for x in sorted(r["runs"], key=lambda x: x["seed"]):
        ha, hb = tuple(x["hypotheses"][a]), tuple(x["hypotheses"][b])
        out.append((_paired(r.get("_file", ""), r["provenance"]["git"]["commit"], r["preset"], b, a, x["seed"],
                            ha, hb, refs), ha == hb))
    return out


def sentence_words(pairs: list[tuple]) -> str:
    """页面上的写法：几个种子各自显著（显著的差的方向），几个逐句相同，其余的 p 值范围。"""
    sig = [c for c, same in pairs if c.verdict == "显著"]
    text = f"{len(pairs)} 个种子中 {len(sig)} 个显著"
    if sig:
        signs = {c.difference > 0 for c in sig}
        text += "（显著的差都为正）" if signs == {True} else "（显著的差都为负）" if signs == {False} else "（显著的差方向不一）"
    same = sum(same for _, same in pairs)
    if same:
        text += f"，{same} 个逐句相同"
    ps = [c.p_value for c, same in pairs if not same]
    if ps:
        text += f"，p = {ps[0]:.3f}" if len(ps) == 1 else f"，p = {min(ps):.3f}–{max(ps):.3f}"
    return text


def _cell(c, same: bool) -> str:
    if same:
        return "逐句相同"
    mark = "，显著" if c.verdict == "显著" else ""
    return f"{c.difference:+.2f}（p={c.p_value:.3f}{mark}）".replace("-", "−")


def render_paired_table(results: list[dict], out_dir: Path) -> None:
    """每个预算、每个比较、每个种子：句子级配对自助的差与 p 值。"""
    runs = [r for r in (pick(results, "toy-translation", (p,)) for p in ("early", "full", "long")) if r is not None]
    runs = [r for r in runs if "test_set" in r]
    if not any(r["preset"] == "full" for r in runs):
        write_text(out_dir, "toy-translation-paired.md", NO_RESULTS)
        return
    seeds = [x["seed"] for x in sorted(runs[0]["runs"], key=lambda x: x["seed"])]
    head = ["步数", "比较"] + [f"种子 {s}" for s in seeds]
    rows, samples = [], set()
    for r in runs:
        for b, a, label in COMPARISONS:
            pairs = sentence_level(r, b, a)
            samples.update(c.n_samples for c, _ in pairs)
            rows.append([str(r["config"]["steps"]), label] + [_cell(c, same) for c, same in pairs])
    n = len(runs[0]["test_set"]["references"])
    text = (f"每个种子内，按测试句配对重抽（sacreBLEU 的配对自助法，{'、'.join(map(str, sorted(samples)))} 次重抽，"
            f"{n} 句）：格子里是 BLEU 差与 p 值；区间不含 0 且 p < 0.05 记作「显著」。它回答的是「这个测试集的抽样误差"
            f"能不能解释这个差」，与逐种子配对（训练的随机性）是两个问题。{LEGEND}\n\n")
    write_text(out_dir, "toy-translation-paired.md", text + md_table(head, rows) + "\n" + md_caption(*runs))


RENDERERS = [render_figure, render_table, render_averaging_table, render_budget_table, render_paired_table]
