"""results/*.json → docs/generated/ 里的 SVG 图和 Markdown 表格。

运行::

    python -m snippets.figures [--results results] [--out docs/generated]

读 ``results/`` 下**每一个** ``*.json``（按文件名排序），交给 :data:`RENDERERS` 里的每个渲染函数。
渲染函数的签名都是 ``(results: list[dict], out_dir: Path) -> None``；每个 dict 是一个结果文件的
内容，外加键 ``_file``（相对仓库根的路径）。别的结果（例如 ``results/copy-task.json`` 的注意力
热图）只要把自己的渲染函数追加到 ``RENDERERS`` 即可；本模块的渲染函数只看
``kind == "complexity-probes"`` 的文件，其它文件原样忽略。

同一设备（``provenance.tag``）有多个探针文件时，取 ``full`` 预设优先、日期最新的一个。
没有任何探针结果时，仍然写出所有文件（内容说明"尚无测量结果"），这样页面的 include 不会断。

确定性：同样的输入得到逐字节相同的 SVG（见 :mod:`snippets.plotstyle`）。
每张图的说明文字写明设备、torch 版本、日期和结果文件。
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from snippets import plotstyle
from snippets.plotstyle import PALETTE, new_figure, save_svg

ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = ROOT / "results"
OUT_DIR = ROOT / "docs" / "generated"
PROBE_KIND = "complexity-probes"
_PRESET_RANK = {"full": 2, "quick": 1, "tiny": 0}

LAYER_ZH = {
    "attention": "自注意力（含 Q/K/V/O 投影）",
    "attention_core": "注意力核心（QKᵀ 与 AV）",
    "sdpa": "SDPA（F.scaled_dot_product_attention）",
    "restricted": "受限自注意力（窗口 2r+1）",
    "rnn": "Elman RNN",
    "lstm": "LSTM",
    "gru": "GRU",
    "conv": "因果卷积（k = 3）",
}
LAYER_SHORT = {"attention": "attention", "attention_core": "attention core", "sdpa": "SDPA",
               "restricted": "restricted", "rnn": "RNN", "lstm": "LSTM", "gru": "GRU", "conv": "conv"}
LAYER_ORDER = ("attention", "attention_core", "sdpa", "restricted", "rnn", "lstm", "gru", "conv")
NO_RESULTS = "> 尚无测量结果：`results/` 中没有探针结果文件。运行 `python -m snippets.probes` 后再运行 `python -m snippets.figures`。\n"


# ----------------------------------------------------------------------------- 读取与挑选
def load_results(results_dir: Path = RESULTS_DIR) -> list[dict]:
    """读 ``results_dir/*.json``（按文件名排序），每个加上 ``_file``。读不了的文件跳过。"""
    out = []
    for path in sorted(Path(results_dir).glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict):
            try:
                rel = path.resolve().relative_to(ROOT).as_posix()
            except ValueError:
                rel = f"results/{path.name}"
            data["_file"] = rel
            out.append(data)
    return out


def probe_results(results: list[dict]) -> list[dict]:
    """每个设备一个探针结果（full 优先，其次日期最新）；CPU 在前，CUDA 在后。"""
    from snippets.probes.results import validate

    best: dict[str, dict] = {}
    for r in results:
        if r.get("kind") != PROBE_KIND or "provenance" not in r:
            continue
        errs = validate({k: v for k, v in r.items() if k != "_file"})
        if errs:  # 不合格（例如缺出处）的文件不进图表
            print(f"figures: skipping {r['_file']}: {errs[0]}", file=sys.stderr)
            continue
        tag = r["provenance"].get("tag", r["_file"])
        key = (_PRESET_RANK.get(r.get("preset"), -1), r["provenance"].get("date_utc", ""))
        if tag not in best or key > best[tag][0]:
            best[tag] = (key, r)
    chosen = [v[1] for v in best.values()]
    return sorted(chosen, key=lambda r: (r["provenance"]["device"]["type"] != "cpu", r["provenance"]["tag"]))


def _primary(results: list[dict]) -> dict | None:
    pr = probe_results(results)
    return pr[0] if pr else None


def _device_label(r: dict) -> str:
    dev = r["provenance"]["device"]
    if dev["type"] == "cpu":
        return f"CPU {dev['name']}（计时 {r['probes']['walltime'].get('threads', dev.get('threads'))} 线程）"
    return f"GPU {dev['name']}" + (f"（驱动 {dev['driver']}）" if dev.get("driver") else "")


def _date(r: dict) -> str:
    return r["provenance"]["date_utc"][:10]


def caption(r: dict) -> str:
    p = r["provenance"]
    return (f"设备：{_device_label(r)} · torch {p['torch_version']} · {_date(r)} · "
            f"预设 {r.get('preset')} · 数据：{r['_file']}")


def _md_caption(r: dict) -> str:
    p = r["provenance"]
    return (f"*设备：{_device_label(r)}；torch {p['torch_version']}；日期 {p['date_utc']}；"
            f"commit `{p['git']['commit'][:10]}`{'（工作区有改动）' if p['git']['dirty'] else ''}；"
            f"预设 `{r.get('preset')}`；数据文件 `{r['_file']}`。*\n")


def _write(out_dir: Path, name: str, text: str) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / name).write_text(text, encoding="utf-8")


def _placeholder_svg(out_dir: Path, name: str, title: str) -> None:
    fig, ax = new_figure(6.4, 2.0)
    ax.axis("off")
    ax.text(0.5, 0.5, f"{title}\n尚无测量结果（results/ 中没有探针结果文件）", ha="center", va="center")
    save_svg(fig, out_dir / name)


def _fmt_int(x) -> str:
    return f"{int(x):,}"


def _fmt_bytes(b) -> str:
    if b is None:
        return "—"
    b = int(b)
    if b >= 2**30:
        return f"{b:,} B（{b / 2**30:.2f} GiB）"
    if b >= 2**20:
        return f"{b:,} B（{b / 2**20:.2f} MiB）"
    if b >= 2**10:
        return f"{b:,} B（{b / 2**10:.1f} KiB）"
    return f"{b:,} B"


def _fmt_slope(x, digits=2) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


def _fmt_time(s) -> str:
    if s is None:
        return "—"
    if s < 1e-3:
        return f"{s * 1e6:.1f} µs"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s"


# ----------------------------------------------------------------------------- 图
def render_flops_vs_n(results: list[dict], out_dir: Path) -> None:
    r = _primary(results)
    name = "flops-vs-n.svg"
    if r is None:
        return _placeholder_svg(out_dir, name, "每层 FLOPs 随 n 的变化")
    fl = r["probes"]["flops"]
    d = fl["d_fixed"]
    fig, ax = new_figure(6.8, 4.4)
    for i, kind in enumerate(k for k in LAYER_ORDER if any(row["layer"] == k for row in fl["rows"])):
        rows = sorted((row for row in fl["rows"] if row["layer"] == kind and row["d"] == d and row["mode"] == "fwd"),
                      key=lambda row: row["n"])
        if not rows:
            continue
        ns = [row["n"] for row in rows]
        c = PALETTE[i % len(PALETTE)]
        ax.plot(ns, [row["closed_form"] for row in rows], color=c, linestyle="--", linewidth=1.0)
        ax.plot(ns, [row["counted"] for row in rows], color=c, marker="o", linestyle="none",
                label=f"{LAYER_SHORT[kind]}：{fl['closed_forms'][kind]['fwd']}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("序列长度 n")
    ax.set_ylabel("前向 FLOPs（batch 1）")
    ax.set_title(f"每层 FLOPs：计数器（点）与闭式（虚线），d = {d}", fontsize=11)
    ax.legend(fontsize=7.5, loc="upper left")
    fig.text(0.01, -0.02, caption(r) + f"；受限注意力 r = {fl['radius']}，卷积 k = {fl['kernel']}",
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
        return _placeholder_svg(out_dir, name, "墙钟时间随 n 的变化")
    fig, axes = new_figure(11.0, 6.2 * len(panels), nrows=len(panels), ncols=2, squeeze=False)
    for row, (r, dt) in enumerate(panels):
        series = [s for s in r["probes"]["walltime"]["series"] if s["sweep"] == "n" and s["dtype"] == dt]
        for col, mode in enumerate(("fwd", "fwd+bwd")):
            ax = axes[row][col]
            for i, kind in enumerate(LAYER_ORDER):
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
                lbl = (f"{LAYER_SHORT[kind]}（B = {s['batch']}）：斜率 {_fmt_slope(s['fit']['slope'])}，"
                       f"FLOPs {_fmt_slope(s['flop_slope'])}")
                ax.plot([p["size"] for p in full], [p["median_s"] for p in full], "o", color=c, label=lbl)
                if hollow:
                    ax.plot([p["size"] for p in hollow], [p["median_s"] for p in hollow], "o", color=c,
                            markerfacecolor="none")
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xlabel("序列长度 n")
            ax.set_ylabel("每次调用的时间（秒）")
            ax.set_title(f"{'前向' if mode == 'fwd' else '前向 + 反向'} · {_device_short(r)} · {dt}", fontsize=10)
            ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2, frameon=False)
    nrow = len(panels)
    fig.subplots_adjust(hspace=0.75, wspace=0.25, bottom=0.27 / nrow, top=1 - 0.08 / nrow)
    caps = "\n".join(caption(r) for r in probe_results(results))
    fig.text(0.06, 0.01 / nrow, caps + "\n点 = 各轮中位数，竖线 = 各轮最小–最大，空心点 = 开销主导（不参与拟合）；"
             "图例：log-log 拟合斜率，以及同一组尺寸上闭式 FLOPs 的斜率",
             fontsize=7, ha="left", va="top")
    fig.suptitle("墙钟时间随序列长度 n 的变化", fontsize=11)
    save_svg(fig, out_dir / name)


def _device_short(r: dict) -> str:
    return "CPU" if r["provenance"]["device"]["type"] == "cpu" else "GPU"


def render_path_length(results: list[dict], out_dir: Path) -> None:
    r = _primary(results)
    name = "path-length.svg"
    if r is None:
        return _placeholder_svg(out_dir, name, "最大路径长度")
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
        return _placeholder_svg(out_dir, name, "注意力的峰值内存")
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
            ax.plot([x["n"] for x in rs], [x["one_nxn_bytes"] for x in rs], color=plotstyle.TEXT_COLOR,
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
    r = _primary(results)
    name = "gradient-decay.svg"
    if r is None:
        return _placeholder_svg(out_dir, name, "梯度随距离的衰减")
    gr = r["probes"]["gradients"]
    fig, ax = new_figure(6.8, 4.6)
    for i, row in enumerate(gr["rows"]):
        norms = row["per_seed"][0]["norms"]
        ks = list(range(len(norms)))
        pts = [(k, v) for k, v in zip(ks, norms) if v > 0]
        ls = "-" if i < len(PALETTE) else "--"
        ax.plot([k for k, _ in pts], [v for _, v in pts], color=PALETTE[i % len(PALETTE)], linestyle=ls,
                linewidth=1.3, label=f"{row['label']}：{_fmt_slope(row['slope'], 3)} /步")
    ax.set_yscale("log")
    ax.set_xlabel("距离 k（位置 T − k）")
    ax.set_ylabel("‖∂L/∂x_{T−k}‖")
    ax.set_title(f"梯度随距离的衰减（T = {gr['T']}，d = {gr['d']}，float64），图例为拟合斜率（数量级/步）",
                 fontsize=10)
    ax.legend(fontsize=7, loc="lower left", ncol=2)
    fig.text(0.01, -0.02, caption(r) + f"；拟合区间 k = {gr['k_fit'][0]}–{gr['k_fit'][1]}",
             fontsize=7, ha="left", va="top")
    save_svg(fig, out_dir / name)


# ----------------------------------------------------------------------------- 表
def _series(r, sweep, layer, mode="fwd", dtype=None):
    wt = r["probes"]["walltime"]
    dtype = dtype or wt.get("dtypes", ["float32"])[0]
    return next((s for s in wt["series"] if s["sweep"] == sweep and s["layer"] == layer and s["mode"] == mode
                 and s["dtype"] == dtype), None)


def _slope_cell(r, sweep, layer, dtype=None) -> str:
    s = _series(r, sweep, layer, dtype=dtype)
    if s is None or s["fit"]["slope"] is None:
        return "—"
    sp = s["spread"]
    rng = f"（{sp['min']:.2f}–{sp['max']:.2f}）" if sp.get("min") is not None else ""
    return f"{s['fit']['slope']:.2f}{rng}"


def _path_cell(r, config) -> str:
    rows = [x for x in r["probes"]["paths"]["rows"] if x["config"] == config]
    if not rows:
        return "—"
    x = max(rows, key=lambda x: x["n"])
    ok = "✓" if x["agrees"] else "✗"
    return f"{x['depth']}（n = {x['n']}）{ok}"


def _seq_cell(r, kind) -> str:
    s = r["probes"]["sequential"]["summary"].get(kind)
    if not s:
        return "—"
    a = s["all"]
    if not a["linear"]:
        return "非线性"
    if a["per_step"] == 0:
        return f"{a['intercept']}（常数）"
    return f"{a['per_step']}n + {a['intercept']}"


def _rule(a: dict) -> str:
    if not a["linear"]:
        return "非线性"
    if a["per_step"] == 0:
        return f"{a['intercept']}（常数）"
    return f"{a['per_step']}n + {a['intercept']}（每步 +{a['per_step']}）"


def render_table1(results: list[dict], out_dir: Path) -> None:
    prs = probe_results(results)
    name = "table1-measured.md"
    if not prs:
        return _write(out_dir, name, NO_RESULTS)
    r = prs[0]
    fl = r["probes"]["flops"]
    cpu = [x for x in prs if x["provenance"]["device"]["type"] == "cpu"]
    gpu = [x for x in prs if x["provenance"]["device"]["type"] == "cuda"]
    rad, k = fl["radius"], fl["kernel"]
    # (显示名, 论文复杂度, 论文顺序操作, 论文路径, flops kind, seq kind, path config(s), walltime layer)
    rows = [
        ("自注意力（Self-Attention）", "O(n²·d)", "O(1)", "O(1)", "attention", "attention", ["attention"], "attention"),
        ("　其中注意力核心 QKᵀ、AV", "O(n²·d)", "", "", "attention_core", None, [], "attention_core"),
        ("循环（Recurrent，Elman RNN）", "O(n·d²)", "O(n)", "O(n)", "rnn", "rnn", ["rnn"], "rnn"),
        ("　LSTM", "O(n·d²)", "O(n)", "O(n)", "lstm", "lstm", ["lstm"], "lstm"),
        ("　GRU", "O(n·d²)", "O(n)", "O(n)", "gru", "gru", [], "gru"),
        (f"卷积（Convolutional，k = {k}）", "O(k·n·d²)", "O(1)", "O(log_k(n))", "conv", "conv",
         [f"conv k={k}", f"dilated conv k={k}"], "conv"),
        (f"受限自注意力（restricted，半径 r = {rad}）", "O(r·n·d)", "O(1)", "O(n/r)", "restricted",
         "restricted", [f"restricted r={rad}"], "restricted"),
    ]
    head = ["层类型", "论文：每层复杂度", "测得：前向 FLOPs（计数器 = 闭式）", "论文：顺序操作",
            "测得：关键路径（make_fx 节点数）", "论文：最大路径长度", "测得：最小深度 L"]
    groups = []
    for x in cpu:
        groups.append((x, "CPU"))
    for x in gpu:
        groups.append((x, "GPU"))
    for x, label in groups:
        dt = x["probes"]["walltime"].get("dtypes", ["float32"])
        for t in dt:
            head += [f"{label} {t}：时间的 n 指数", f"{label} {t}：时间的 d 指数"]
    if not gpu:
        head.append("GPU")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for disp, p_cx, p_seq, p_path, fk, sk, pcs, wl in rows:
        eq = all(x["equal"] for x in fl["rows"] if x["layer"] == fk)
        flops_cell = f"{fl['closed_forms'][fk]['fwd']} {'✓' if eq else '✗'}" if fk in fl["closed_forms"] else "—"
        seq_cell = _seq_cell(r, sk) if sk else ""
        path_cell = "；".join(f"{pc.replace('dilated conv', '膨胀').replace('conv', '普通')}: {_path_cell(r, pc)}"
                             if pc.startswith(("conv", "dilated")) else _path_cell(r, pc) for pc in pcs) if pcs else ("—" if sk else "")
        cells = [disp, p_cx, flops_cell, p_seq, seq_cell, p_path, path_cell]
        for x, _ in groups:
            for t in x["probes"]["walltime"].get("dtypes", ["float32"]):
                cells += [_slope_cell(x, "n", wl, t), _slope_cell(x, "d", wl, t)]
        if not gpu:
            cells.append("pending")
        lines.append("| " + " | ".join(cells) + " |")
    notes = [
        "",
        "说明：FLOPs 一列的 ✓ 表示在全部网格上（n、d、前向与前向+反向）计数器的整数结果与闭式完全相等；"
        "关键路径是 `make_fx` 追踪出的前向图中最长的 aten 节点链，常数表示与 n 无关；"
        "最小深度 L 是使 ∂y_n/∂x₁ ≠ 0 的最小层数（RNN/LSTM 为单元应用次数）。"
        "时间指数是前向墙钟时间中位数的 log-log 拟合斜率，括号内为逐轮拟合的最小–最大值；"
        "论文的 Table 1 只算混合项（自注意力的 n²·d），而整层还有 8nd² 的投影，所以整层的 d 指数接近 2。",
    ]
    if not gpu:
        notes.append("")
        notes.append("**GPU: pending** —— 还没有真实 GPU 上的测量结果（`results/cuda-*.json`）。本站不编造 GPU 数字。")
    notes.append("")
    for x, _ in groups:
        notes.append(_md_caption(x))
    _write(out_dir, name, "\n".join(lines) + "\n" + "\n".join(notes) + "\n")


def render_flops_table(results: list[dict], out_dir: Path) -> None:
    r = _primary(results)
    name = "flops-table.md"
    if r is None:
        return _write(out_dir, name, NO_RESULTS)
    fl = r["probes"]["flops"]
    lines = ["| 层 | 闭式（前向） | 闭式（前向 + 反向） | 网格 | 计数点数 | 全部相等 | 示例：计数（前向，n = {n}，d = {d}） |"
             .format(n=fl["n_fixed"], d=fl["d_fixed"]), "|---|---|---|---|---|---|---|"]
    for kind in (k for k in LAYER_ORDER if k in fl["closed_forms"]):
        rows = [x for x in fl["rows"] if x["layer"] == kind]
        ns = sorted({x["n"] for x in rows})
        ds = sorted({x["d"] for x in rows})
        ex = next((x for x in rows if x["n"] == fl["n_fixed"] and x["d"] == fl["d_fixed"] and x["mode"] == "fwd"), None)
        cf = fl["closed_forms"][kind]
        lines.append(f"| {LAYER_ZH[kind]} | {cf['fwd']} | {cf['fwd+bwd']} | n ∈ {{{', '.join(map(str, ns))}}}，"
                     f"d ∈ {{{', '.join(map(str, ds))}}} | {len(rows)} | {'✓' if all(x['equal'] for x in rows) else '✗'} | "
                     f"{_fmt_int(ex['counted']) if ex else '—'} |")
    lines += ["", f"batch 1、无偏置；受限注意力 r = {fl['radius']}（窗口 {fl['window']}），卷积 k = {fl['kernel']}。"
              "前向 + 反向时输入与全部权重都要梯度；循环层的初始状态 h₀ = 0 不要梯度，所以少一项。", ""]
    lines += ["**交叉点**（二分法，在计数器的计数上求最小的 n 使左边的 FLOPs ≥ 右边）：", "",
              "| 比较 | d | 测得 n* | 理论 | 一致 | n* 处的计数（左 / 右） |", "|---|---|---|---|---|---|"]
    for x in fl["crossovers"]:
        a, b = LAYER_SHORT[x["a"]], LAYER_SHORT[x["b"]]
        counts = (f"{_fmt_int(x['count_a_at_n_star'])} / {_fmt_int(x['count_b_at_n_star'])}"
                  if x.get("n_star") else "—")
        lines.append(f"| {a} vs {b} | {x['d']} | {x['n_star']} | {x['theory_text']} | {'✓' if x['agrees'] else '✗'} | {counts} |")
    lines += ["", "n* = 1 表示 n = 1 时注意力就不更便宜：整层自注意力从不比 Elman RNN 省 FLOPs。", ""]
    bs = fl.get("counter_blind_spots")
    if bs:
        lines += [f"**计数器的盲区**（n = {bs['n']}，d = {bs['d']}，信息性，不作断言）：", "",
                  "| 被计数的调用 | 计数器给出的 FLOPs |", "|---|---|"]
        for k2, v in bs["counts"].items():
            lines.append(f"| `{k2}` | {_fmt_int(v)} |")
        cf = bs["closed_forms"]
        lines += ["", f"对照闭式：RNN 4nd² = {_fmt_int(cf['rnn'])}，LSTM 16nd² = {_fmt_int(cf['lstm'])}，"
                  f"投影 8nd² = {_fmt_int(cf['projections'])}，整层注意力 = {_fmt_int(cf['attention'])}。", ""]
    lines.append(_md_caption(r))
    _write(out_dir, name, "\n".join(lines) + "\n")


def render_memory_table(results: list[dict], out_dir: Path) -> None:
    prs = probe_results(results)
    name = "memory-table.md"
    if not prs:
        return _write(out_dir, name, NO_RESULTS)
    parts = []
    for r in prs:
        mem = r["probes"]["memory"]
        ns = sorted({x["n"] for x in mem["rows"]})
        has_online = any(x["method"] == "online" for x in mem["rows"])
        head = "| n | 朴素注意力（实测） | 闭式 (2n² + nd)·4 | 相等 | SDPA（实测） |" + (" 在线 softmax（实测） |" if has_online else "") + " 一个 n×n fp32 矩阵 |"
        lines = [head, "|" + "---|" * (head.count("|") - 1)]
        for n in ns:
            get = {x["method"]: x for x in mem["rows"] if x["n"] == n}
            nv = get.get("naive", {})
            cells = [str(n), _fmt_bytes(nv.get("peak_bytes")), _fmt_bytes(nv.get("closed_form")),
                     "✓" if nv.get("equal") else ("—" if not nv else "✗"), _fmt_bytes(get.get("sdpa", {}).get("peak_bytes"))]
            if has_online:
                cells.append(_fmt_bytes(get.get("online", {}).get("peak_bytes")))
            cells.append(_fmt_bytes(n * n * 4))
            lines.append("| " + " | ".join(cells) + " |")
        dev = "CPU" if r["provenance"]["device"]["type"] == "cpu" else "GPU"
        parts.append(f"**{dev}**（d = {mem['d']}，单头，fp32，峰值不含输入 q、k、v）：\n\n" + "\n".join(lines) + "\n\n"
                     + (f"在线 softmax 的块大小 {mem['block']}。" if has_online else f"{mem['online_softmax_attention']}。")
                     + f"方法：{mem['method']}。\n\n" + _md_caption(r))
    c14 = prs[0]["probes"]["memory"]["c14"]
    parts.append(
        "**一个注意力矩阵的大小 n²·b**（纯算术，测试用 `tensor.nbytes` 复核）：n = 512、fp32 时 "
        f"{_fmt_int(c14['n512_fp32'])} B（1 MiB）；n = 131072（128K）时 fp32 {c14['n131072_fp32_GiB']:g} GiB、"
        f"bf16 {c14['n131072_bf16_GiB']:g} GiB（每个头、每层各一个）。\n")
    _write(out_dir, name, "\n".join(parts))


def render_gradient_table(results: list[dict], out_dir: Path) -> None:
    r = _primary(results)
    name = "gradient-table.md"
    if r is None:
        return _write(out_dir, name, NO_RESULTS)
    gr = r["probes"]["gradients"]
    lines = ["| 模型 | 拟合斜率（数量级/步） | 理论 | 种子间范围 | 拟合残差（RMS，数量级） | 备注 |", "|---|---|---|---|---|---|"]
    for row in gr["rows"]:
        th = "—" if row["theory_slope"] is None else f"log₁₀ρ = {row['theory_slope']:.6f}"
        rng = (f"{row['slope_min']:.3f} – {row['slope_max']:.3f}" if len(gr["seeds"]) > 1 and row["slope_min"] is not None
               else "—")
        note = ""
        if row.get("ratio_first_to_last") is not None:
            note = f"‖∂L/∂x₁‖ / ‖∂L/∂x_T‖ = {row['ratio_first_to_last']:.3f}"
        digits = 6 if row["model"] == "linear_rnn" else 3
        lines.append(f"| {row['label']} | {_fmt_slope(row['slope'], digits)} | {th} | {rng} | "
                     f"{_fmt_slope(row['residual_rms'], 3)} | {note} |")
    lines += ["", f"T = {gr['T']}，d = {gr['d']}，float64，L = u·h_T（u 为随机单位向量），"
              f"拟合区间 k = {gr['k_fit'][0]}–{gr['k_fit'][1]}，种子 {gr['seeds']}。", "", _md_caption(r)]
    _write(out_dir, name, "\n".join(lines) + "\n")


def render_walltime_slopes(results: list[dict], out_dir: Path) -> None:
    prs = probe_results(results)
    name = "walltime-slopes.md"
    if not prs:
        return _write(out_dir, name, NO_RESULTS)
    parts = []
    for r in prs:
        wt = r["probes"]["walltime"]
        for dt in wt.get("dtypes", ["float32"]):
            lines = ["| 层 | 扫描 | 模式 | batch | 固定参数 | 尺寸 | 测得斜率 | 闭式 FLOPs 的斜率 | 论文指数 | 残差 | 逐轮斜率（最小–最大） | 开销主导的点 |",
                     "|---|---|---|---|---|---|---|---|---|---|---|---|"]
            for s in wt["series"]:
                if s["dtype"] != dt:
                    continue
                fixed = ", ".join(f"{k} = {v}" for k, v in s["fixed"].items() if k != "batch")
                od = [str(p["size"]) for p in s["points"] if p.get("overhead_dominated")]
                err = [str(p["size"]) for p in s["points"] if p.get("error")]
                sp = s["spread"]
                rng = f"{sp['min']:.2f}–{sp['max']:.2f}" if sp.get("min") is not None else "—"
                res = s["fit"]["residual"]
                extra = "（重测过）" if s.get("remeasured_because") else ""
                lines.append(
                    f"| {LAYER_SHORT[s['layer']]} | {s['sweep']} | {'前向' if s['mode'] == 'fwd' else '前向+反向'} | "
                    f"{s['batch']} | {fixed} | {min(s['sizes'])}–{max(s['sizes'])} | {_fmt_slope(s['fit']['slope'])} | "
                    f"{_fmt_slope(s['flop_slope'])} | {s['paper_exponent']} | {_fmt_slope(res)}{extra} | {rng} | "
                    f"{', '.join(od) if od else '—'}{'；出错：' + ', '.join(err) if err else ''} |")
            dev = _device_label(r)
            la = r["provenance"].get("load_average") or {}
            parts.append(
                f"**{dev} · {dt}**（{wt['timer']}；每点 {wt['plan']['repeats']} 轮交错测量的中位数）\n\n" + "\n".join(lines)
                + "\n\n开销主导：中位时间 < "
                f"{wt['plan']['overhead_factor']:g} × 同层在尺寸 1 时的时间；这些点不参与拟合。残差是 ln 残差的 2-范数，"
                f"超过 {wt['plan']['residual_threshold']} 的序列会重测一次。"
                + (f"运行时系统负载（1/5/15 分钟）：开始 {la.get('before')}，结束 {la.get('after')}——这是一台共享机器，"
                   "数字带噪声。" if la else "")
                + "\n\n" + _md_caption(r))
        parts.extend(_cuda_extras_md(r))
    _write(out_dir, name, "\n\n".join(parts) + "\n")


def _cuda_extras_md(r: dict) -> list[str]:
    """GPU 结果才有：稠密矩阵乘法上限与 SDPA 各后端（注意力吞吐占 bf16 上限的比例）。"""
    wt = r["probes"]["walltime"]
    out = []
    if wt.get("matmul_ceiling"):
        lines = ["| 数据类型 | 矩阵 | 中位时间 | TFLOP/s |", "|---|---|---|---|"]
        for c in wt["matmul_ceiling"]:
            lines.append(f"| {c['dtype']} | {c['m']}×{c['m']} @ {c['m']}×{c['m']} | {_fmt_time(c['median_s'])} | "
                         f"{c['tflops']:.1f} |")
        out.append(f"**稠密矩阵乘法上限** · {_device_label(r)}\n\n" + "\n".join(lines))
    if wt.get("sdpa_backends"):
        lines = ["| 后端 | 数据类型 | batch × 头数 × 头维 | n | 中位时间 | TFLOP/s（4·B·h·n²·d） | 占 bf16 矩阵乘上限 |",
                 "|---|---|---|---|---|---|---|"]
        for x in wt["sdpa_backends"]:
            shape = f"{x['batch']} × {x['heads']} × {x['head_dim']}"
            if x.get("error"):
                lines.append(f"| {x['backend']} | {x['dtype']} | {shape} | {x['n']} | 不可用：{x['error'][:80]} | — | — |")
            else:
                lines.append(f"| {x['backend']} | {x['dtype']} | {shape} | {x['n']} | {_fmt_time(x['median_s'])} | "
                             f"{x['tflops']:.1f} | {x['fraction_of_bf16_matmul']:.0%} |")
        out.append(f"**SDPA 各后端（前向）** · {_device_label(r)}（`torch.nn.attention.sdpa_kernel` 指定后端）\n\n"
                   + "\n".join(lines) + "\n\n" + _md_caption(r))
    return out


def render_sequential_dependency(results: list[dict], out_dir: Path) -> None:
    prs = probe_results(results)
    name = "sequential-dependency.md"
    if not prs:
        return _write(out_dir, name, NO_RESULTS)
    r = prs[0]
    sq = r["probes"]["sequential"]
    ns = sorted({x["n"] for x in sq["rows"]})
    lines = ["**关键路径**（`make_fx` 追踪的前向图里最长的 aten 节点链；batch 1，d = "
             f"{sq['d']}）：", "",
             "| 层 | " + " | ".join(f"n = {n}" for n in ns) + " | 随 n 的规律 | 只数计算节点 |",
             "|---|" + "---|" * (len(ns) + 2)]
    kinds = list(sq["summary"].keys())
    for kind in kinds:
        rows = sq["rows"] if kind != "nn.LSTM (fused)" else sq["fused_lstm"]
        lbl = LAYER_SHORT.get(kind, kind)
        if kind in ("rnn", "lstm", "gru"):
            lbl += "（手写单元）"
        vals = {x["n"]: x["critical_path"] for x in rows if x["layer"] == kind}
        s = sq["summary"][kind]
        lines.append(f"| {lbl} | " + " | ".join(str(vals.get(n, "—")) for n in ns) + f" | {_rule(s['all'])} | "
                     f"{_rule(s['compute'])} |")
    lines += ["", "融合的 `nn.LSTM` 把整个时间循环藏在一个节点里，所以关键路径看起来是常数——这是算子粒度造成的假象。", ""]
    for rr in prs:
        for dt, rows in rr["probes"]["walltime"]["sequential_dependency"].items():
            lines += [f"**n 次相互依赖的 (B×d)@(d×d) 与一次 (nB×d)@(d×d)**（FLOPs 相同）· {_device_label(rr)} · {dt}：", "",
                      "| B | d | 步数 n | 依赖的 n 步 | 一次矩阵乘 | 慢多少倍 | 依赖步 GFLOP/s | 一次矩阵乘 GFLOP/s |",
                      "|---|---|---|---|---|---|---|---|"]
            for x in rows:
                lines.append(f"| {x['batch']} | {x['d']} | {x['steps']} | {_fmt_time(x['dependent']['median_s'])} | "
                             f"{_fmt_time(x['one_matmul']['median_s'])} | {x['ratio']:.1f}× | "
                             f"{x['dependent']['gflops']:.1f} | {x['one_matmul']['gflops']:.1f} |")
            lines += ["", _md_caption(rr)]
    _write(out_dir, name, "\n".join(lines) + "\n")


def render_provenance(results: list[dict], out_dir: Path) -> None:
    name = "provenance.md"
    rows = [r for r in results if r.get("kind") == PROBE_KIND and "provenance" in r]
    if not rows:
        return _write(out_dir, name, NO_RESULTS)
    chosen = {id(x) for x in probe_results(results)}
    lines = ["| 文件 | 设备 | torch | 日期（UTC） | git commit | 预设 | 命令 | 耗时 | 用于图表 |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        p = r["provenance"]
        dirty = p["git"].get("dirty_paths") or []
        commit = f"`{p['git']['commit'][:12]}`" + (
            f"（有未提交改动：{'、'.join(f'`{x}`' for x in dirty[:5])}{' 等' if len(dirty) > 5 else ''}）" if dirty
            else ("（有未提交改动）" if p["git"]["dirty"] else ""))
        lines.append(f"| `{r['_file']}` | {_device_label(r)} | {p['torch_version']} | {p['date_utc']} | {commit} | "
                     f"{r.get('preset')} | `{p['command']}` | {p['runtime_s']:.0f} s | {'是' if id(r) in chosen else '否'} |")
    if not any(r["provenance"]["device"]["type"] == "cuda" for r in rows):
        lines += ["", "GPU: pending —— 尚无真实 GPU 的结果文件。"]
    _write(out_dir, name, "\n".join(lines) + "\n")


RENDERERS = [
    render_flops_vs_n,
    render_walltime_vs_n,
    render_path_length,
    render_memory_vs_n,
    render_gradient_decay,
    render_table1,
    render_flops_table,
    render_memory_table,
    render_gradient_table,
    render_walltime_slopes,
    render_sequential_dependency,
    render_provenance,
]

# 其它实验的渲染函数追加在这里（同样的签名 ``(results, out_dir) -> None``）。
from snippets.attention_figures import render_attention_heatmaps  # noqa: E402  复制任务的注意力热图

RENDERERS.append(render_attention_heatmaps)


def render_all(results_dir: Path = RESULTS_DIR, out_dir: Path = OUT_DIR, renderers=None) -> list[Path]:
    results = load_results(results_dir)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    before = set(out_dir.iterdir())
    for fn in renderers or RENDERERS:
        fn(results, out_dir)
    return sorted(set(out_dir.iterdir()) | before)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m snippets.figures", description="results/*.json → docs/generated/")
    ap.add_argument("--results", default=str(RESULTS_DIR))
    ap.add_argument("--out", default=str(OUT_DIR))
    args = ap.parse_args(argv)
    render_all(Path(args.results), Path(args.out))
    print(f"wrote figures and tables into {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
