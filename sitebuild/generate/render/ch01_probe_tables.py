"""Tables from the complexity probes (``results/<device-tag>.json``) → ``docs/generated/*.md``."""

from __future__ import annotations

from pathlib import Path

from snippets.probes.facts import TABLE1
from snippets.probes.results import KIND

from sitebuild.generate.render._probes import (LAYERS, ORDER, fmt_bytes, fmt_int, fmt_slope, fmt_time,
                                           primary, probe_results, short)
from sitebuild.generate.render._style import NO_RESULTS, device_label, md_caption, source_line, write_text


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
        return write_text(out_dir, name, NO_RESULTS)
    r = prs[0]
    fl = r["probes"]["flops"]
    cpu = [x for x in prs if x["provenance"]["device"]["type"] == "cpu"]
    gpu = [x for x in prs if x["provenance"]["device"]["type"] == "cuda"]
    rad, k = fl["radius"], fl["kernel"]
    paths_of = {"attention": ["attention"], "rnn": ["rnn"], "lstm": ["lstm"],
                "conv": [f"conv k={k}", f"dilated conv k={k}"], "restricted": [f"restricted r={rad}"]}
    rows = []
    for kind in (x for x in ORDER if x != "sdpa"):
        fact = LAYERS[kind]
        label = f"{fact.zh} · {fact.table1}".replace("核宽 k", f"k = {k}").replace("窗口 2w+1", f"半径 w = {rad}")
        seq = kind if kind != "attention_core" else None
        rows.append((label, *TABLE1[fact.table1], kind, seq, paths_of.get(kind, []), kind))
    head = ["层类型", "论文：每层复杂度", "测得：前向 FLOPs（计数器 = 闭式）", "论文：顺序操作",
            "测得：关键路径（make_fx 节点数）", "论文：最大路径长度", "测得：最小深度 N"]
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
        flops_cell = f"{LAYERS[fk].text[0]} {'✓' if eq else '✗'}"
        seq_cell = _seq_cell(r, sk) if sk else ""
        path_cell = "；".join(f"{pc.replace('dilated conv', '空洞').replace('conv', '普通')}: {_path_cell(r, pc)}"
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
        "最小深度 N 是使 ∂y_n/∂x₁ ≠ 0 的最小层数（RNN/LSTM 为单元应用次数）。"
        "时间指数是前向墙钟时间中位数的 log-log 拟合斜率，括号内为逐轮拟合的最小–最大值；"
        "论文的表 1 只算混合项（自注意力的 n²·d），而整层还有 8nd² 的投影，所以整层的 d 指数接近 2。"
        + ("「—」表示拟合不出：参与拟合的点不到两个，其余都是开销主导（中位时间不到同层尺寸为 1 时的 3 倍）。" if gpu else ""),
    ]
    if not gpu:
        notes.append("")
        notes.append("**GPU: pending** —— 还没有真实 GPU 上的测量结果（`results/cuda-*.json`）。本站不编造 GPU 数字。")
    notes.append("")
    for x, _ in groups:
        notes.append(md_caption(x))
    write_text(out_dir, name, "\n".join(lines) + "\n" + "\n".join(notes) + "\n")


def render_flops_table(results: list[dict], out_dir: Path) -> None:
    r = primary(results)
    name = "flops-table.md"
    if r is None:
        return write_text(out_dir, name, NO_RESULTS)
    fl = r["probes"]["flops"]
    lines = ["| 层 | 闭式（前向） | 闭式（前向 + 反向） | 网格 | 计数点数 | 全部相等 | 示例：计数（前向，n = {n}，d = {d}） |"
             .format(n=fl["n_fixed"], d=fl["d_fixed"]), "|---|---|---|---|---|---|---|"]
    for kind in (k for k in ORDER if k in fl["closed_forms"]):
        rows = [x for x in fl["rows"] if x["layer"] == kind]
        ns = sorted({x["n"] for x in rows})
        ds = sorted({x["d"] for x in rows})
        ex = next((x for x in rows if x["n"] == fl["n_fixed"] and x["d"] == fl["d_fixed"] and x["mode"] == "fwd"), None)
        cf = fl["closed_forms"][kind]
        lines.append(f"| {LAYERS[kind].zh} | {cf['fwd']} | {cf['fwd+bwd']} | n ∈ {{{', '.join(map(str, ns))}}}，"
                     f"d ∈ {{{', '.join(map(str, ds))}}} | {len(rows)} | {'✓' if all(x['equal'] for x in rows) else '✗'} | "
                     f"{fmt_int(ex['counted']) if ex else '—'} |")
    lines += ["", f"batch 1、无偏置；受限注意力半径 w = {fl['radius']}（窗口 {fl['window']}），卷积 k = {fl['kernel']}。"
              "前向 + 反向时输入与全部权重都要梯度；循环层的初始状态 h₀ = 0 不要梯度，所以少一项。", ""]
    lines += ["**交叉点**（二分法，在计数器的计数上求最小的 n 使左边的 FLOPs ≥ 右边）：", "",
              "| 比较 | d | 测得 n* | 理论 | 一致 | n* 处的计数（左 / 右） |", "|---|---|---|---|---|---|"]
    for x in fl["crossovers"]:
        a, b = short(x["a"]), short(x["b"])
        counts = (f"{fmt_int(x['count_a_at_n_star'])} / {fmt_int(x['count_b_at_n_star'])}"
                  if x.get("n_star") else "—")
        lines.append(f"| {a} vs {b} | {x['d']} | {x['n_star']} | {x['theory_text']} | {'✓' if x['agrees'] else '✗'} | {counts} |")
    lines += ["", "n* = 1 表示 n = 1 时注意力就不更便宜：整层自注意力从不比 Elman RNN 省 FLOPs。", ""]
    bs = fl.get("counter_blind_spots")
    if bs:
        lines += [f"**计数器的盲区**（n = {bs['n']}，d = {bs['d']}，信息性，不作断言）：", "",
                  "| 被计数的调用 | 计数器给出的 FLOPs |", "|---|---|"]
        for k2, v in bs["counts"].items():
            lines.append(f"| `{k2}` | {fmt_int(v)} |")
        cf = bs["closed_forms"]
        lines += ["", f"对照闭式：RNN 4nd² = {fmt_int(cf['rnn'])}，LSTM 16nd² = {fmt_int(cf['lstm'])}，"
                  f"投影 8nd² = {fmt_int(cf['projections'])}，整层注意力 = {fmt_int(cf['attention'])}。", ""]
    lines.append(md_caption(r))
    write_text(out_dir, name, "\n".join(lines) + "\n")


def render_memory_table(results: list[dict], out_dir: Path) -> None:
    prs = probe_results(results)
    name = "memory-table.md"
    if not prs:
        return write_text(out_dir, name, NO_RESULTS)
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
            cells = [str(n), fmt_bytes(nv.get("peak_bytes")), fmt_bytes(nv.get("closed_form")),
                     "✓" if nv.get("equal") else ("—" if not nv else "✗"), fmt_bytes(get.get("sdpa", {}).get("peak_bytes"))]
            if has_online:
                cells.append(fmt_bytes(get.get("online", {}).get("peak_bytes")))
            cells.append(fmt_bytes(n * n * 4))
            lines.append("| " + " | ".join(cells) + " |")
        dev = "CPU" if r["provenance"]["device"]["type"] == "cpu" else "GPU"
        parts.append(f"**{dev}**（d = {mem['d']}，单头，fp32，峰值不含输入 q、k、v）：\n\n" + "\n".join(lines) + "\n\n"
                     + (f"在线 softmax 的块大小 {mem['block']}。" if has_online else f"{mem['online_softmax_attention']}。")
                     + f"方法：{mem['method']}。\n\n" + md_caption(r))
    c14 = prs[0]["probes"]["memory"]["c14"]
    parts.append(
        "**一个注意力矩阵的大小 n²·b**（纯算术，测试用 `tensor.nbytes` 复核）：n = 512、fp32 时 "
        f"{fmt_int(c14['n512_fp32'])} B（1 MiB）；n = 131072（128K）时 fp32 {c14['n131072_fp32_GiB']:g} GiB、"
        f"bf16 {c14['n131072_bf16_GiB']:g} GiB（每个头、每层各一个）。\n")
    write_text(out_dir, name, "\n".join(parts))


def render_gradient_table(results: list[dict], out_dir: Path) -> None:
    r = primary(results)
    name = "gradient-table.md"
    if r is None:
        return write_text(out_dir, name, NO_RESULTS)
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
        lines.append(f"| {row['label']} | {fmt_slope(row['slope'], digits)} | {th} | {rng} | "
                     f"{fmt_slope(row['residual_rms'], 3)} | {note} |")
    lines += ["", f"T = {gr['T']}，d = {gr['d']}，float64，L = u·h_T（u 为随机单位向量），"
              f"拟合区间 k = {gr['k_fit'][0]}–{gr['k_fit'][1]}，种子 {gr['seeds']}。", "", md_caption(r)]
    write_text(out_dir, name, "\n".join(lines) + "\n")


def render_walltime_slopes(results: list[dict], out_dir: Path) -> None:
    prs = probe_results(results)
    name = "walltime-slopes.md"
    if not prs:
        return write_text(out_dir, name, NO_RESULTS)
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
                    f"| {short(s['layer'])} | {s['sweep']} | {'前向' if s['mode'] == 'fwd' else '前向+反向'} | "
                    f"{s['batch']} | {fixed} | {min(s['sizes'])}–{max(s['sizes'])} | {fmt_slope(s['fit']['slope'])} | "
                    f"{fmt_slope(s['flop_slope'])} | {s['paper_exponent']} | {fmt_slope(res)}{extra} | {rng} | "
                    f"{', '.join(od) if od else '—'}{'；出错：' + ', '.join(err) if err else ''} |")
            dev = device_label(r)
            la = r["provenance"].get("load_average") or {}
            parts.append(
                f"**{dev} · {dt}**（{wt['timer']}；每点 {wt['plan']['repeats']} 轮交错测量的中位数）\n\n" + "\n".join(lines)
                + "\n\n开销主导：中位时间 < "
                f"{wt['plan']['overhead_factor']:g} × 同层在尺寸 1 时的时间；这些点不参与拟合。残差是 ln 残差的 2-范数，"
                f"超过 {wt['plan']['residual_threshold']} 的序列会重测一次。"
                + (f"运行时系统负载（1/5/15 分钟）：开始 {la.get('before')}，结束 {la.get('after')}——这是一台共享机器，"
                   "数字带噪声。" if la else "")
                + "\n\n" + md_caption(r))
    write_text(out_dir, name, "\n\n".join(parts) + "\n")


def _unavailable(error: str) -> str:
    """A short reason for a backend that did not run; the results file keeps the whole message."""
    if error.startswith("OutOfMemoryError"):
        return "显存不足"
    if "No available kernel" in error:
        return "无此内核"
    return f"不可用：{error.split(':')[0]}"


SHORT_DTYPE = {"bfloat16": "bf16", "float32": "fp32"}


def render_sdpa_backends(results: list[dict], out_dir: Path) -> None:
    """GPU 结果才有：稠密矩阵乘法上限，与 SDPA 各后端的吞吐（一行一个后端与数据类型，一列一个 n）。"""
    name = "sdpa-backends.md"
    gpus = [r for r in probe_results(results) if r["provenance"]["device"]["type"] == "cuda"]
    if not gpus:
        return write_text(out_dir, name, "**GPU: pending** —— 还没有真实 GPU 上的测量结果（`results/cuda-*.json`）。"
                                         "本站不编造 GPU 数字。\n")
    parts = []
    for r in gpus:
        wt = r["probes"]["walltime"]
        ceil = "；".join(f"{c['dtype']} {c['tflops']:.0f} TFLOP/s（{c['m']}×{c['m']} 方阵，{fmt_time(c['median_s'])}）"
                        for c in wt["matmul_ceiling"])
        rows = wt["sdpa_backends"]
        ns = sorted({x["n"] for x in rows})
        lines = ["| 后端 · 类型 | " + " | ".join(f"{n}" for n in ns) + " |", "|---|" + "---:|" * len(ns)]
        for key in dict.fromkeys((x["backend"], x["dtype"]) for x in rows):
            by_n = {x["n"]: x for x in rows if (x["backend"], x["dtype"]) == key}
            cells = [_unavailable(x["error"]) if x.get("error") else
                     f"{x['tflops']:.0f}（{x['fraction_of_bf16_matmul']:.0%}）" for x in (by_n[n] for n in ns)]
            lines.append(f"| {key[0]} · {SHORT_DTYPE.get(key[1], key[1])} | " + " | ".join(cells) + " |")
        x = rows[0]
        parts.append(f"**SDPA 各后端的前向吞吐** · {device_label(r)}：TFLOP/s（按 4·B·h·n²·d 计），括号里是占 bfloat16 "
                     f"稠密矩阵乘法上限的比例；列是序列长度 n；batch {x['batch']} × {x['heads']} 头 × 头维 {x['head_dim']}，"
                     f"`torch.nn.attention.sdpa_kernel` 指定后端，每点 {max(len(y.get('samples_s') or []) for y in rows)} 轮的中位数。"
                     f"矩阵乘法上限：{ceil}。\n\n" + "\n".join(lines) + "\n\n" + md_caption(r))
    write_text(out_dir, name, "\n\n".join(parts) + "\n")


def render_sequential_dependency(results: list[dict], out_dir: Path) -> None:
    prs = probe_results(results)
    name = "sequential-dependency.md"
    if not prs:
        return write_text(out_dir, name, NO_RESULTS)
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
        lbl = short(kind)
        if kind in ("rnn", "lstm", "gru"):
            lbl += "（手写单元）"
        vals = {x["n"]: x["critical_path"] for x in rows if x["layer"] == kind}
        s = sq["summary"][kind]
        lines.append(f"| {lbl} | " + " | ".join(str(vals.get(n, "—")) for n in ns) + f" | {_rule(s['all'])} | "
                     f"{_rule(s['compute'])} |")
    lines += ["", "融合的 `nn.LSTM` 把整个时间循环藏在一个节点里，所以关键路径看起来是常数——这是算子粒度造成的假象。", ""]
    for rr in prs:
        for dt, rows in rr["probes"]["walltime"]["sequential_dependency"].items():
            lines += [f"**n 次相互依赖的 (B×d)@(d×d) 与一次 (nB×d)@(d×d)**（FLOPs 相同）· {device_label(rr)} · {dt}：", "",
                      "| B | d | 步数 n | 依赖的 n 步 | 一次矩阵乘 | 慢多少倍 | 依赖步 GFLOP/s | 一次矩阵乘 GFLOP/s |",
                      "|---|---|---|---|---|---|---|---|"]
            for x in rows:
                lines.append(f"| {x['batch']} | {x['d']} | {x['steps']} | {fmt_time(x['dependent']['median_s'])} | "
                             f"{fmt_time(x['one_matmul']['median_s'])} | {x['ratio']:.1f}× | "
                             f"{x['dependent']['gflops']:.1f} | {x['one_matmul']['gflops']:.1f} |")
            lines += ["", md_caption(rr)]
    write_text(out_dir, name, "\n".join(lines) + "\n")


def render_provenance(results: list[dict], out_dir: Path) -> None:
    name = "provenance.md"
    rows = [r for r in results if r.get("kind") == KIND]
    if not rows:
        return write_text(out_dir, name, NO_RESULTS)
    chosen = {id(x) for x in probe_results(results)}
    # 一行一个结果文件（不是多列的表）：设备 · torch · 日期 · commit · 预设 · 文件，再加命令与耗时
    lines = []
    for r in rows:
        p = r["provenance"]
        dirty = p["git"].get("dirty_paths") or []
        changed = (f"（有未提交改动：{'、'.join(f'`{x}`' for x in dirty[:5])}{' 等' if len(dirty) > 5 else ''}）"
                   if dirty else "")
        unused = "" if id(r) in chosen else "（未用于图表）"
        lines.append(f"{source_line(r)}{changed} · 命令 `{p['command']}` · 耗时 {p['runtime_s']:.0f} s{unused}")
    if not any(r["provenance"]["device"]["type"] == "cuda" for r in rows):
        lines.append("GPU: pending —— 尚无真实 GPU 的结果文件。")
    write_text(out_dir, name, '<p class="provenance" markdown data-search-exclude>' + "<br>\n".join(lines) + "</p>\n")


RENDERERS = [render_table1, render_flops_table, render_memory_table, render_gradient_table,
             render_walltime_slopes, render_sdpa_backends, render_sequential_dependency, render_provenance]
