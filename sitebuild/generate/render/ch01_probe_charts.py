"""Charts from the complexity probes (``results/<device-tag>.json``) → ``docs/generated/*.svg``.

Phone-width figures (sitebuild/generate/render/_style.py): one panel per row, legends below the axes,
series told apart by colour, marker and line style; the provenance is not drawn into the image
(``save_svg(..., sources=)``; sitebuild/generate/figures.py writes it as a caption line next to the figure).
"""

from __future__ import annotations

from pathlib import Path

from sitebuild.generate.render._probes import LAYERS, ORDER, device_short, fmt_slope, primary, probe_results, short
from sitebuild.generate.render._style import (FIG_WIDTH, LINESTYLES, MARKERS, PALETTE, TEXT_COLOR, legend_below, log_ticks,
                                    new_figure, placeholder_svg, save_svg, series_style)



def loglog_vs_n(ax, ylabel: str, y_base: int = 10) -> None:
    """Log-log axes against the sequence length n (base 2), with plain-text tick labels."""
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=y_base)
    log_ticks(ax.xaxis, 2)
    log_ticks(ax.yaxis, y_base)
    ax.set_xlabel("序列长度 n")
    ax.set_ylabel(ylabel)

def render_flops_vs_n(results: list[dict], out_dir: Path) -> None:
    r = primary(results)
    name = "flops-vs-n.svg"
    if r is None:
        return placeholder_svg(out_dir, name, "每层 FLOPs 随 n 的变化")
    fl = r["probes"]["flops"]
    d = fl["d_fixed"]
    fig, ax = new_figure(FIG_WIDTH, 3.0)
    for i, kind in enumerate(k for k in ORDER if any(row["layer"] == k for row in fl["rows"])):
        rows = sorted((row for row in fl["rows"] if row["layer"] == kind and row["d"] == d and row["mode"] == "fwd"),
                      key=lambda row: row["n"])
        if not rows:
            continue
        ns = [row["n"] for row in rows]
        st = series_style(i)
        ax.plot(ns, [row["closed_form"] for row in rows], color=st["color"], linestyle=st["linestyle"], linewidth=1.0)
        ax.plot(ns, [row["counted"] for row in rows], color=st["color"], marker=st["marker"], linestyle="none",
                label=f"{short(kind)}：{LAYERS[kind].text[0]}")
    loglog_vs_n(ax, "前向 FLOPs（batch 1）")
    ax.set_title(f"每层 FLOPs，d = {d}\n点：计数器；线：闭式")
    legend_below(ax, ncol=1, title=f"受限注意力 w = {fl['radius']}，卷积 k = {fl['kernel']}")
    save_svg(fig, out_dir / name, sources=[r])


def _walltime_panels(results):
    """[(结果, dtype, 模式)]：每个设备、每个数据类型、前向与前向 + 反向各一幅。"""
    panels = []
    for r in probe_results(results):
        for dt in r["probes"]["walltime"].get("dtypes", ["float32"]):
            panels += [(r, dt, "fwd"), (r, dt, "fwd+bwd")]
    return panels


def render_walltime_vs_n(results: list[dict], out_dir: Path) -> None:
    name = "walltime-vs-n.svg"
    panels = _walltime_panels(results)
    if not panels:
        return placeholder_svg(out_dir, name, "墙钟时间随 n 的变化")
    # 每幅：坐标轴 2.6 英寸 + 图例（每行一种层）；上下堆叠
    n_layers = len(ORDER)
    per_panel = 2.6 + 0.2 * n_layers + 0.9
    fig, axes = new_figure(FIG_WIDTH, per_panel * len(panels), nrows=len(panels), squeeze=False)
    for ax, (r, dt, mode) in zip(axes[:, 0], panels):
        series = [s for s in r["probes"]["walltime"]["series"] if s["sweep"] == "n" and s["dtype"] == dt]
        for i, kind in enumerate(ORDER):
            s = next((s for s in series if s["layer"] == kind and s["mode"] == mode), None)
            if s is None:
                continue
            st = series_style(i)
            pts = [p for p in s["points"] if p.get("median_s")]
            if not pts:
                continue
            ns = [p["size"] for p in pts]
            med = [p["median_s"] for p in pts]
            lo = [m - min(p["samples_s"]) for m, p in zip(med, pts)]
            hi = [max(p["samples_s"]) - m for m, p in zip(med, pts)]
            ax.errorbar(ns, med, yerr=[lo, hi], color=st["color"], linestyle=st["linestyle"], linewidth=1.2,
                        capsize=2)
            full = [p for p in pts if not p.get("overhead_dominated")]
            hollow = [p for p in pts if p.get("overhead_dominated")]
            lbl = (f"{short(kind)}（B = {s['batch']}）：斜率 {fmt_slope(s['fit']['slope'])}，"
                   f"FLOPs {fmt_slope(s['flop_slope'])}")
            ax.plot([p["size"] for p in full], [p["median_s"] for p in full], st["marker"], color=st["color"],
                    label=lbl)
            if hollow:
                ax.plot([p["size"] for p in hollow], [p["median_s"] for p in hollow], st["marker"],
                        color=st["color"], markerfacecolor="none")
        loglog_vs_n(ax, "每次调用的时间（秒）")
        ax.set_title(f"{'前向' if mode == 'fwd' else '前向 + 反向'} · {device_short(r)} · {dt}")
        legend_below(ax, title="图例：log-log 拟合斜率，FLOPs 斜率")
    fig.subplots_adjust(hspace=(0.2 * n_layers + 1.2) / 2.6)
    save_svg(fig, out_dir / name, sources=probe_results(results))


def render_path_length(results: list[dict], out_dir: Path) -> None:
    r = primary(results)
    name = "path-length.svg"
    if r is None:
        return placeholder_svg(out_dir, name, "最大路径长度")
    rows = r["probes"]["paths"]["rows"]
    configs = []
    for row in rows:
        if row["config"] not in configs:
            configs.append(row["config"])
    fig, ax = new_figure(FIG_WIDTH, 3.0)
    for i, cfg in enumerate(configs):
        rs = sorted((x for x in rows if x["config"] == cfg), key=lambda x: x["n"])
        st = series_style(i)
        ax.plot([x["n"] for x in rs], [x["theory"] for x in rs], color=st["color"], linestyle=st["linestyle"],
                linewidth=1.0)
        ax.plot([x["n"] for x in rs], [x["depth"] for x in rs], st["marker"], color=st["color"], label=cfg)
    loglog_vs_n(ax, "最小深度 N", y_base=2)
    ax.set_title("使 ∂y_n/∂x_1 ≠ 0 的最小深度\n点：实测；线：理论")
    legend_below(ax, ncol=2, title="float64 雅可比；RNN/LSTM 数单元应用次数")
    save_svg(fig, out_dir / name, sources=[r])


def render_memory_vs_n(results: list[dict], out_dir: Path) -> None:
    name = "memory-vs-n.svg"
    prs = probe_results(results)
    if not prs:
        return placeholder_svg(out_dir, name, "注意力的峰值内存")
    fig, ax = new_figure(FIG_WIDTH, 3.0)
    styles = {"naive": ("朴素注意力（n×n 分数 + softmax）", 1), "sdpa": ("SDPA（4-D）", 0),
              "online": ("在线 softmax（分块）", 2)}
    for j, r in enumerate(prs):
        mem = r["probes"]["memory"]
        dev = "CPU" if r["provenance"]["device"]["type"] == "cpu" else "GPU"
        for method, (label, i) in styles.items():
            rs = sorted((x for x in mem["rows"] if x["method"] == method), key=lambda x: x["n"])
            if rs:
                ax.plot([x["n"] for x in rs], [x["peak_bytes"] for x in rs], color=PALETTE[i],
                        marker=MARKERS[i] if j == 0 else MARKERS[i + 3], linestyle=LINESTYLES[j % 2],
                        label=f"{label} · {dev}")
        if j == 0:
            rs = sorted((x for x in mem["rows"] if x["method"] == "naive"), key=lambda x: x["n"])
            ax.plot([x["n"] for x in rs], [x["one_nxn_bytes"] for x in rs], color=TEXT_COLOR,
                    linestyle=":", label="一个 n×n fp32 矩阵（4n² B）")
            ax.plot([x["n"] for x in rs], [x["closed_form"] for x in rs], color=PALETTE[1], linestyle="-.",
                    linewidth=1.0, label="闭式 8n² + 4nd")
    loglog_vs_n(ax, "峰值分配字节数（不含输入）")
    d = prs[0]["probes"]["memory"]["d"]
    ax.set_title(f"注意力的峰值内存\nd = {d}，单头，fp32")
    legend_below(ax)
    save_svg(fig, out_dir / name, sources=prs)


def render_gradient_decay(results: list[dict], out_dir: Path) -> None:
    r = primary(results)
    name = "gradient-decay.svg"
    if r is None:
        return placeholder_svg(out_dir, name, "梯度随距离的衰减")
    gr = r["probes"]["gradients"]
    fig, ax = new_figure(FIG_WIDTH, 3.2)
    for i, row in enumerate(gr["rows"]):
        norms = row["per_seed"][0]["norms"]
        ks = list(range(len(norms)))
        pts = [(k, v) for k, v in zip(ks, norms) if v > 0]
        st = series_style(i)
        ax.plot([k for k, _ in pts], [v for _, v in pts], linewidth=1.2, markevery=max(1, len(pts) // 6),
                markersize=4, label=f"{row['label']}：{fmt_slope(row['slope'], 3)} /步", **st)
    ax.set_yscale("log")
    log_ticks(ax.yaxis)
    ax.set_xlabel("距离 k（位置 T − k）")
    ax.set_ylabel("‖∂L/∂x_{T−k}‖")
    ax.set_title(f"梯度随距离的衰减\nT = {gr['T']}，d = {gr['d']}，float64")
    legend_below(ax, title=f"拟合斜率（数量级/步），k = {gr['k_fit'][0]}–{gr['k_fit'][1]}")
    save_svg(fig, out_dir / name, sources=[r])


RENDERERS = [render_flops_vs_n, render_walltime_vs_n, render_path_length, render_memory_vs_n,
             render_gradient_decay]
