"""第 05 章的实验图表：results/depth-gradients.json 与 results/postln-warmup.json → docs/generated/。

- depth-gradients.svg  上：初始化时逐层参数梯度范数（Xavier 初始化，6 层与 12 层，Post-LN 与 Pre-LN）；
                       下：12 层栈里残差流的均方根随层号的变化；各种子的均值，竖线是最小–最大
- depth-gradients.md   逐层数字（Xavier 初始化）和首末层之比（两种初始化），每格「均值（最小–最大）」，
                       由 rows[*].per_seed 经 snippets.stats.summarize 算出
- postln-warmup.svg    四种条件（Post/Pre-LN × 有无预热）的训练损失曲线，每个种子一条细线（full 预设）
- postln-warmup.md     每种条件「学会 / 没学会 / 发散」的种子数、末尾损失、logits 对输入的依赖、
                       第 1 步的逐层梯度首末之比（full 预设）
- postln-warmup-sweep.md  峰值学习率 × 初始化 × 条件的网格：每格学会的种子数，以及每种条件
                       全部种子都学会的最大峰值学习率（sweep 预设，results/postln-warmup-sweep.json）

没有结果文件时写占位图和一行说明。同样的输入得到逐字节相同的文件。
"""

from __future__ import annotations

from pathlib import Path

from sitebuild.generate.render._style import (FIG_WIDTH, NO_RESULTS, PALETTE, TEXT_COLOR, legend_below, md_caption, md_table,
                                    mean_range, new_figure, pick, placeholder_svg, save_svg, seed_errorbars,
                                    value_range, write_text)

DEPTH_KIND, WARMUP_KIND = "depth-gradients", "postln-warmup"
NORM_LABEL = {"post": "Post-LN", "pre": "Pre-LN"}
NORM_COLOR = {"post": PALETTE[1], "pre": PALETTE[0]}
INIT_LABEL = {"xavier": "Xavier 均匀初始化", "torch-default": "PyTorch 默认初始化"}


def _row(r: dict, init: str, depth: int, norm: str) -> dict | None:
    for row in r["rows"]:
        if (row["init"], row["depth"], row["norm"]) == (init, depth, norm):
            return row
    return None


def _per_seed(row: dict, key: str) -> list[list[float]]:
    """逐层（或逐个残差流位置）的各种子值：[[种子 0, 种子 1, ...] 第 1 层, ...]。"""
    return [list(vals) for vals in zip(*(p[key] for p in row["per_seed"]))]


# ---------------------------------------------------------------------------- gradient norms
def render_depth_figure(results: list[dict], out_dir: Path) -> None:
    r = pick(results, DEPTH_KIND)
    if r is None:
        placeholder_svg(out_dir, "depth-gradients.svg", "初始化时的逐层梯度范数")
        return
    depths = sorted(r["config"]["depths"])
    fig, (left, right) = new_figure(FIG_WIDTH, 6.6, nrows=2)
    for norm in ("post", "pre"):
        for depth in depths:
            row = _row(r, "xavier", depth, norm)
            if row is None:
                continue
            layers = list(range(1, depth + 1))
            deepest = depth == depths[-1]
            mean, err = seed_errorbars(_per_seed(row, "param_grad"))
            left.errorbar(layers, mean, yerr=err, color=NORM_COLOR[norm], capsize=2,
                          marker=("o" if deepest else "s") if norm == "post" else ("^" if deepest else "D"),
                          linestyle="-" if deepest else "--", markersize=4 if deepest else 3,
                          label=f"{NORM_LABEL[norm]}，{depth} 层")
    left.set_xlabel("层号 l（1 = 最靠近输入）")
    left.set_ylabel("梯度范数 ‖∂L/∂θ_l‖")
    left.set_title("初始化时的逐层参数梯度范数\n（θ_l：第 l 层的全部参数）")
    left.set_ylim(bottom=0)
    legend_below(left, ncol=2)
    deepest = depths[-1]
    for norm in ("post", "pre"):
        row = _row(r, "xavier", deepest, norm)
        if row is not None:
            mean, err = seed_errorbars(_per_seed(row, "stream_rms"))
            right.errorbar(range(deepest + 1), mean, yerr=err, color=NORM_COLOR[norm], markersize=4, capsize=2,
                           marker="o" if norm == "post" else "^", linestyle="-" if norm == "post" else "--",
                           label=NORM_LABEL[norm])
    right.set_xlabel("层号 l（0 = 输入 x_0）")
    right.set_ylabel("残差流 x_l 的均方根")
    right.set_title(f"{deepest} 层栈里残差流的大小")
    right.set_ylim(bottom=0)
    seeds = len(r["config"]["seeds"])
    legend_below(right, ncol=2, title=f"Xavier 初始化，float64，{seeds} 个种子的均值\n竖线：最小–最大")
    fig.subplots_adjust(hspace=0.75)
    save_svg(fig, out_dir / "depth-gradients.svg", sources=[r])


def render_depth_table(results: list[dict], out_dir: Path) -> None:
    r = pick(results, DEPTH_KIND)
    if r is None:
        write_text(out_dir, "depth-gradients.md", NO_RESULTS)
        return
    cfg = r["config"]
    depths = sorted(cfg["depths"])
    cols = [(depth, norm) for depth in depths for norm in ("post", "pre")]
    head = ["层号 l"] + [f"{NORM_LABEL[n]} · {d} 层" for d, n in cols]
    rows = []
    for layer in range(max(depths)):
        cells = [str(layer + 1)]
        for depth, norm in cols:
            row = _row(r, "xavier", depth, norm)
            cells.append(mean_range(_per_seed(row, "param_grad")[layer], ".3f") if row and layer < depth else "")
        rows.append(cells)
    ratio_head = ["初始化", "层数", "Post-LN：末层 / 首层", "Pre-LN：末层 / 首层", "Pre-LN 栈顶残差流均方根"]
    ratio_rows = []
    for init in cfg["inits"]:
        for depth in depths:
            post, pre = _row(r, init, depth, "post"), _row(r, init, depth, "pre")
            ratio_rows.append([INIT_LABEL[init], depth,
                               mean_range([p["param_grad"][-1] / p["param_grad"][0] for p in post["per_seed"]], ".2f"),
                               mean_range([p["param_grad"][-1] / p["param_grad"][0] for p in pre["per_seed"]], ".2f"),
                               mean_range([p["stream_rms"][-1] for p in pre["per_seed"]], ".2f")])
    setup = (f"设置：d_model = {cfg['d_model']}，h = {cfg['num_heads']}，d_ff = {cfg['d_ff']}，"
             f"批 {cfg['batch']} × 长度 {cfg['n']}，输入元素 ~ N(0, 1)，随机目标上的交叉熵，"
             f"{cfg['dtype']}，dropout 0，种子 {cfg['seeds']}；单线程 CPU，本次运行用时 "
             f"{r['provenance']['runtime_s']:.0f} 秒。每格是各种子的均值（最小–最大）；首末层之比先在每个种子上算，"
             "再取均值与范围。\n\n"
             "**逐层参数梯度范数 ‖∂L/∂θ_l‖（Xavier 初始化）**\n\n")
    text = (setup + md_table(head, rows) + "\n**首末层之比与残差流的增长**\n\n"
            + md_table(ratio_head, ratio_rows) + "\n" + md_caption(r))
    write_text(out_dir, "depth-gradients.md", text)


# ---------------------------------------------------------------------------- warm-up probe
CONDITION_LABEL = {("post", False): "Post-LN，不预热", ("post", True): "Post-LN，预热",
                   ("pre", False): "Pre-LN，不预热", ("pre", True): "Pre-LN，预热"}
CONDITION_STYLE = {("post", False): (PALETTE[3], "-"), ("post", True): (PALETTE[1], "--"),
                   ("pre", False): (PALETTE[0], "-."), ("pre", True): (PALETTE[4], ":")}  # 线型各不相同


def render_warmup_figure(results: list[dict], out_dir: Path) -> None:
    r = pick(results, WARMUP_KIND)
    if r is None:
        placeholder_svg(out_dir, "postln-warmup.svg", "Post-LN 有无学习率预热的训练曲线")
        return
    cfg = r["config"]
    lr = max(cfg["lrs"])
    fig, ax = new_figure(FIG_WIDTH, 3.2)
    for cond, label in CONDITION_LABEL.items():
        color, style = CONDITION_STYLE[cond]
        runs = [x for x in r["runs"] if (x["norm"], x["warmup"]) == cond and x["lr"] == lr
                and x["init"] == "torch-default"]
        for i, run in enumerate(runs):
            steps = [p["step"] for p in run["curve"]]
            losses = [p["loss"] for p in run["curve"]]
            ax.plot(steps, losses, color=color, linestyle=style, linewidth=1.1, alpha=0.85,
                    label=label if i == 0 else None)
    ax.axhline(cfg["chance_loss"], color=TEXT_COLOR, linewidth=0.8, linestyle="-.")
    ax.text(cfg["steps"], cfg["chance_loss"] + 0.05, "ln V：均匀猜测", ha="right", va="bottom")
    ax.axvline(cfg["warmup_steps"], color=TEXT_COLOR, linewidth=0.8, linestyle=":")
    ax.text(cfg["warmup_steps"] + 2, 0.15, "预热结束", va="bottom")
    ax.set_xlabel("训练步数")
    ax.set_ylabel("训练损失（每步一个新批）")
    ax.set_title(f"{cfg['num_layers']} 层编码器、峰值学习率 {lr:g}\n每个种子一条线")
    ax.set_ylim(0, cfg["chance_loss"] + 0.5)
    legend_below(ax, ncol=2)
    save_svg(fig, out_dir / "postln-warmup.svg", sources=[r])


def _median(values: list[float]) -> float:
    values = sorted(values)
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def _std_at(run: dict, step: int) -> float | None:
    for point in run["curve"]:
        if point["step"] == step:
            return point["input_std"]
    return None


def _warmup_setup(r: dict) -> str:
    cfg = r["config"]
    return (f"设置：{cfg['num_layers']} 层编码器，d_model = {cfg['d_model']}，h = {cfg['num_heads']}，"
            f"d_ff = {cfg['d_ff']}，词表 {cfg['vocab']}，长度 {cfg['n']}，批 {cfg['batch']}；任务：反序；"
            f"Adam（β = {tuple(cfg['betas'])}，ε = {cfg['eps']:g}），{cfg['steps']} 步；"
            f"预热：前 {cfg['warmup_steps']} 步线性升到峰值，之后不变；"
            f"末尾损失 = 最后 {cfg['tail']} 步的平均，学会 < {cfg['learned_below']:g}，"
            f"没学会 > {cfg['stuck_above']:.3f}（0.9·ln {cfg['vocab']}）；种子 {cfg['seeds']}；"
            f"单线程 CPU，{len(r['runs'])} 次训练共用时 {r['provenance']['runtime_s'] / 60:.1f} 分钟。\n\n")


def render_warmup_table(results: list[dict], out_dir: Path) -> None:
    r = pick(results, WARMUP_KIND)
    if r is None:
        write_text(out_dir, "postln-warmup.md", NO_RESULTS)
        return
    cfg = r["config"]
    probe_step = cfg["log_every"]
    head = ["条件", "学会", "没学会", "发散（NaN）", "末尾损失中位数（最小–最大）",
            f"logits 沿输入的标准差：初始化 → 第 {probe_step} 步（中位数）→ 训练后（最小–最大）",
            "第 1 步梯度：末层 / 首层（最小–最大）"]
    rows = []
    for s in r["summary"]:
        runs = [x for x in r["runs"] if (x["init"], x["norm"], x["warmup"], x["lr"]) ==
                (s["init"], s["norm"], s["warmup"], s["lr"])]
        losses = [x["final_loss"] for x in runs if x["final_loss"] is not None]
        spread = ("—" if s["final_loss_median"] is None else
                  f"{s['final_loss_median']:.3f}（{value_range(losses, '.3f')}）")
        finals = [x["logit_std"]["final"]["across_inputs"] for x in runs if x["logit_std"]["final"]]
        early = [v for v in (_std_at(x, probe_step) for x in runs) if v is not None]
        dependence = (f"{_median([x['logit_std']['init']['across_inputs'] for x in runs]):.2f} → "
                      f"{_median(early):.3f} → {value_range(finals, '.3f')}" if finals and early else "—")
        ratios = [x["grad_ratio"] for x in runs if x["grad_ratio"] is not None]
        rows.append([CONDITION_LABEL[(s["norm"], s["warmup"])],
                     f"{s['n_learned']} / {s['n_seeds']}", f"{s['n_stuck']} / {s['n_seeds']}",
                     f"{s['n_diverged']} / {s['n_seeds']}", spread, dependence,
                     value_range(ratios, ".2f") if ratios else "—"])
    note = (f"峰值学习率 {'、'.join(f'{lr:g}' for lr in cfg['lrs'])}，"
            f"{'、'.join(INIT_LABEL[i] for i in cfg['inits'])}。"
            f"logits 沿输入的标准差：在固定的 {cfg['probe_batch']} 条探测序列上，固定位置和词表项、"
            "看不同输入之间 logits 差多少，再对位置和词表项取均方根；输出完全不依赖输入时为 0。\n\n")
    write_text(out_dir, "postln-warmup.md", _warmup_setup(r) + note + md_table(head, rows) + "\n" + md_caption(r))


def largest_learning_rate(r: dict, init: str, cond: tuple[str, bool]) -> float | None:
    """这种 (初始化, 条件) 下，全部种子都学会的最大峰值学习率；一个都没有时为 None。"""
    ok = [s["lr"] for s in r["summary"] if (s["init"], s["norm"], s["warmup"]) == (init, *cond)
          and s["n_learned"] == s["n_seeds"]]
    return max(ok) if ok else None


def render_warmup_sweep_table(results: list[dict], out_dir: Path) -> None:
    r = pick(results, WARMUP_KIND, ("sweep",))
    if r is None:
        write_text(out_dir, "postln-warmup-sweep.md", NO_RESULTS)
        return
    cfg = r["config"]
    lrs = sorted(cfg["lrs"])
    head = (["初始化", "条件"] + [f"峰值 {lr:g}" for lr in lrs]
            + ["全部种子都学会的最大峰值", "第 1 步梯度：末层 / 首层，中位数（最小–最大）",
               "没学会的训练：训练后 logits 沿输入的标准差（最小–最大）"])
    rows = []
    for init in cfg["inits"]:
        for cond in CONDITION_LABEL:
            cells = {s["lr"]: s for s in r["summary"] if (s["init"], s["norm"], s["warmup"]) == (init, *cond)}
            if not cells:
                continue
            row = [INIT_LABEL[init], CONDITION_LABEL[cond]]
            for lr in lrs:
                s = cells[lr]
                extra = [f"没学会 {s['n_stuck'] - s['n_diverged']}" if s["n_stuck"] > s["n_diverged"] else "",
                         f"发散 {s['n_diverged']}" if s["n_diverged"] else ""]
                extra = "，".join(e for e in extra if e)
                row.append(f"{s['n_learned']} / {s['n_seeds']}" + (f"（{extra}）" if extra else ""))
            best = largest_learning_rate(r, init, cond)
            row.append("—" if best is None else f"{best:g}")
            ratios = [x["grad_ratio"] for x in r["runs"] if (x["init"], x["norm"], x["warmup"]) == (init, *cond)
                      and x["grad_ratio"] is not None]
            row.append(f"{_median(ratios):.2f}（{value_range(ratios, '.2f')}）" if ratios else "—")
            stuck = [x["logit_std"]["final"]["across_inputs"] for x in r["runs"]
                     if (x["init"], x["norm"], x["warmup"]) == (init, *cond) and x["stuck"] and x["logit_std"]["final"]]
            row.append(f"{value_range(stuck, '.3f')}（{len(stuck)} 次）" if stuck else "—")
            rows.append(row)
    note = ("每格是「学会的种子数 / 种子数」，括号里是没学会（末尾损失仍在均匀猜测附近）和发散的种子数；"
            "剩下的种子在 200 步末尾介于两个阈值之间（学得慢，不算失败也不算学会）。"
            "第 1 步梯度之比与学习率和预热无关（第 1 步的参数相同），按初始化和归一化位置取全部种子的中位数，括号里是最小–最大。"
            "最后一列只看没学会的训练：接近 0 表示输出已经不随输入变化（塌缩），明显大于 0 表示输出仍随输入变化、只是没学到任务。\n\n")
    write_text(out_dir, "postln-warmup-sweep.md",
               _warmup_setup(r) + note + md_table(head, rows) + "\n" + md_caption(r))


RENDERERS = [render_depth_figure, render_depth_table, render_warmup_figure, render_warmup_table,
             render_warmup_sweep_table]
