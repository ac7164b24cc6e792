"""Charts from the complexity probes (``results/<device-tag>.json``) → ``docs/generated/*.svg``."""

from __future__ import annotations

from pathlib import Path

from sitebuild.render.probe_select import LAYERS, ORDER, device_short, fmt_slope, primary, probe_results, short
from sitebuild.render.style import PALETTE, TEXT_COLOR, caption, new_figure, placeholder_svg, save_svg


def render_flops_vs_n(results: list[dict], out_dir: Path) -> None:
    r = primary(results)
    name = "flops-vs-n.svg"
    if r is None:
        return placeholder_svg(out_dir, name, "每层 FLOPs 随 n 的变化")
    fl = r["probes"]["flops"]
    d = fl["d_fixed"]
    fig, ax = new_figure(6.8, 4.4)
    for i, kind in enumerate(k for k in ORDER if any(row["layer"] == k for row in fl["rows"])):
        rows = sorted((row for row in fl["rows"] if row["layer"] == kind and row["d"] == d and row["mode"] == "fwd"),
                      key=lambda row: row["n"])
        if not rows:
            continue
        ns = [row["n"] for row in rows]
        c = PALETTE[i % len(PALETTE)]
        ax.plot(ns, [row["closed_form"] for row in rows], color=c, linestyle="--", linewidth=1.0)
        ax.plot(ns, [row["counted"] for row in rows], color=c, marker="o", linestyle="none",
                label=f"{short(kind)}：{LAYERS[kind].text[0]}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("序列长度 n")
    ax.set_ylabel("前向 FLOPs（batch 1）")
    ax.set_title(f"每层 FLOPs：计数器（点）与闭式（虚线），d = {d}", fontsize=11)
    ax.legend(fontsize=7.5, loc="upper left")
    fig.text(0.01, -0.02, caption(r) + f"；受限注意力半径 w = {fl['radius']}，卷积 k = {fl['kernel']}",
             fontsize=7, ha="left", va="top")
    save_svg(fig, out_dir / name)


def _walltime_panels(results):
    """[(结果, dtype)]：每个设备、每个数据类型一行。"""
    panels = []
    for r in probe_results(results):
        for dt in r["probes"]["walltime"].get("dtypes", ["float32"]):
            panels.append((r, dt))
    return panels


def render_walltime_vs_n(results: list[dict], out_dir: Path) -> None:
    name = "walltime-vs-n.svg"
    panels = _walltime_panels(results)
    if not panels:
        return placeholder_svg(out_dir, name, "墙钟时间随 n 的变化")
    fig, axes = new_figure(11.0, 6.2 * len(panels), nrows=len(panels), ncols=2, squeeze=False)
    for row, (r, dt) in enumerate(panels):
        series = [s for s in r["probes"]["walltime"]["series"] if s["sweep"] == "n" and s["dtype"] == dt]
        for col, mode in enumerate(("fwd", "fwd+bwd")):
            ax = axes[row][col]
            for i, kind in enumerate(ORDER):
                s = next((s for s in series if s["layer"] == kind and s["mode"] == mode), None)
                if s is None:
                    continue
                c = PALETTE[i % len(PALETTE)]
                pts = [p for p in s["points"] if p.get("median_s")]
                if not pts:
                    continue
                ns = [p["size"] for p in pts]
                med = [p["median_s"] for p in pts]
                lo = [m - min(p["samples_s"]) for m, p in zip(med, pts)]
                hi = [max(p["samples_s"]) - m for m, p in zip(med, pts)]
                ax.errorbar(ns, med, yerr=[lo, hi], color=c, linewidth=1.2, capsize=2)
                full = [p for p in pts if not p.get("overhead_dominated")]
                hollow = [p for p in pts if p.get("overhead_dominated")]
                lbl = (f"{short(kind)}（B = {s['batch']}）：斜率 {fmt_slope(s['fit']['slope'])}，"
                       f"FLOPs {fmt_slope(s['flop_slope'])}")
                ax.plot([p["size"] for p in full], [p["median_s"] for p in full], "o", color=c, label=lbl)
                if hollow:
                    ax.plot([p["size"] for p in hollow], [p["median_s"] for p in hollow], "o", color=c,
                            markerfacecolor="none")
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xlabel("序列长度 n")
            ax.set_ylabel("每次调用的时间（秒）")
            ax.set_title(f"{'前向' if mode == 'fwd' else '前向 + 反向'} · {device_short(r)} · {dt}", fontsize=10)
            ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2, frameon=False)
    nrow = len(panels)
    fig.subplots_adjust(hspace=0.75, wspace=0.25, bottom=0.27 / nrow, top=1 - 0.08 / nrow)
    caps = "\n".join(caption(r) for r in probe_results(results))
    fig.text(0.06, 0.01 / nrow, caps + "\n点 = 各轮中位数，竖线 = 各轮最小–最大，空心点 = 开销主导（不参与拟合）；"
             "图例：log-log 拟合斜率，以及同一组尺寸上闭式 FLOPs 的斜率",
             fontsize=7, ha="left", va="top")
    fig.suptitle("墙钟时间随序列长度 n 的变化", fontsize=11)
    save_svg(fig, out_dir / name)


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
    fig, ax = new_figure(6.8, 4.4)
    for i, cfg in enumerate(configs):
        rs = sorted((x for x in rows if x["config"] == cfg), key=lambda x: x["n"])
        c = PALETTE[i % len(PALETTE)]
        ax.plot([x["n"] for x in rs], [x["theory"] for x in rs], color=c, linestyle="--", linewidth=1.0)
        ax.plot([x["n"] for x in rs], [x["depth"] for x in rs], "o", color=c, label=cfg)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xlabel("序列长度 n")
    ax.set_ylabel("使 ∂y_n/∂x_1 ≠ 0 的最小深度 L")
    ax.set_title("最大路径长度：实测（点）与理论（虚线）", fontsize=11)
    ax.legend(fontsize=7.5, loc="upper left", ncol=2)
    fig.text(0.01, -0.02, caption(r) + "；float64 雅可比；RNN/LSTM 数单元应用次数",
             fontsize=7, ha="left", va="top")
    save_svg(fig, out_dir / name)


def render_memory_vs_n(results: list[dict], out_dir: Path) -> None:
    name = "memory-vs-n.svg"
    prs = probe_results(results)
    if not prs:
        return placeholder_svg(out_dir, name, "注意力的峰值内存")
    fig, ax = new_figure(6.8, 4.4)
    styles = {"naive": ("朴素注意力（n×n 分数 + softmax）", PALETTE[1]), "sdpa": ("SDPA（4-D）", PALETTE[0]),
              "online": ("在线 softmax（分块）", PALETTE[2])}
    caps = []
    for j, r in enumerate(prs):
        mem = r["probes"]["memory"]
        marker = "o" if j == 0 else "s"
        dev = "CPU" if r["provenance"]["device"]["type"] == "cpu" else "GPU"
        for method, (label, c) in styles.items():
            rs = sorted((x for x in mem["rows"] if x["method"] == method), key=lambda x: x["n"])
            if rs:
                ax.plot([x["n"] for x in rs], [x["peak_bytes"] for x in rs], marker=marker, color=c,
                        label=f"{label} · {dev}")
        if j == 0:
            rs = sorted((x for x in mem["rows"] if x["method"] == "naive"), key=lambda x: x["n"])
            ax.plot([x["n"] for x in rs], [x["one_nxn_bytes"] for x in rs], color=TEXT_COLOR,
                    linestyle=":", label="一个 n×n fp32 矩阵（4n² B）")
            ax.plot([x["n"] for x in rs], [x["closed_form"] for x in rs], color=PALETTE[1], linestyle="--",
                    linewidth=1.0, label="闭式 8n² + 4nd")
        caps.append(caption(r))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("序列长度 n")
    ax.set_ylabel("峰值分配字节数（不含输入）")
    d = prs[0]["probes"]["memory"]["d"]
    ax.set_title(f"注意力的峰值内存，d = {d}，单头，fp32", fontsize=11)
    ax.legend(fontsize=7.5, loc="upper left")
    fig.text(0.01, -0.02, "\n".join(caps), fontsize=7, ha="left", va="top")
    save_svg(fig, out_dir / name)


def render_gradient_decay(results: list[dict], out_dir: Path) -> None:
    r = primary(results)
    name = "gradient-decay.svg"
    if r is None:
        return placeholder_svg(out_dir, name, "梯度随距离的衰减")
    gr = r["probes"]["gradients"]
    fig, ax = new_figure(6.8, 4.6)
    for i, row in enumerate(gr["rows"]):
        norms = row["per_seed"][0]["norms"]
        ks = list(range(len(norms)))
        pts = [(k, v) for k, v in zip(ks, norms) if v > 0]
        ls = "-" if i < len(PALETTE) else "--"
        ax.plot([k for k, _ in pts], [v for _, v in pts], color=PALETTE[i % len(PALETTE)], linestyle=ls,
                linewidth=1.3, label=f"{row['label']}：{fmt_slope(row['slope'], 3)} /步")
    ax.set_yscale("log")
    ax.set_xlabel("距离 k（位置 T − k）")
    ax.set_ylabel("‖∂L/∂x_{T−k}‖")
    ax.set_title(f"梯度随距离的衰减（T = {gr['T']}，d = {gr['d']}，float64），图例为拟合斜率（数量级/步）",
                 fontsize=10)
    ax.legend(fontsize=7, loc="lower left", ncol=2)
    fig.text(0.01, -0.02, caption(r) + f"；拟合区间 k = {gr['k_fit'][0]}–{gr['k_fit'][1]}",
             fontsize=7, ha="left", va="top")
    save_svg(fig, out_dir / name)



RENDERERS = [render_flops_vs_n, render_walltime_vs_n, render_path_length, render_memory_vs_n,
             render_gradient_decay]
