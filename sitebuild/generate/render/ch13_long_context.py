"""第 13 章的图表 → docs/generated/。

由 results/long-context-<device-tag>.json（snippets.probes.long_context）测得：
- ch13-scaling.svg / ch13-scaling.md   五种注意力的峰值额外内存与时间随 n（CPU 一节；有 CUDA 文件时每个再一节：
                                       与 CPU 峰值的字节差和时间，没有时一行「还没有」）
- ch13-decode-step.md                  读过 n 个词元后解码一个词元的峰值额外内存（有 CUDA 文件时加一行与 CPU 的差）
- ch13-recall.md                       不训练的联想回忆：各种记忆的回忆率随 N（各种子的均值与最小–最大，由
                                       snippets.stats.summarize 算出；有 CUDA 文件时在两份文件共有的列上加一行比较）

由代码算出（不是测量）：
- ch13-costs.md                        全注意力、滑动窗口、线性注意力的 FLOPs 与解码状态（闭式）

没有结果文件时写占位图和一行说明。同样的输入得到逐字节相同的文件。
"""

from __future__ import annotations

from pathlib import Path

from sitebuild.generate.render._style import (FIG_WIDTH, NO_RESULTS, legend_below, md_caption, md_table,
                                              mean_range, new_figure, of_kind, pick, placeholder_svg, save_svg,
                                              series_style, write_text)
from snippets.probes.long_context import attention_flops, decode_state_elems

KIND = "long-context-probes"
LABELS = {"full": "因果全注意力", "window": "滑动窗口", "linear_recurrent": "线性（递推）",
          "linear_chunked": "线性（分块）", "delta_chunked": "增量规则（分块）"}
RECALL = {"softmax": "softmax 注意力", "linear": "线性状态 Σvkᵀ", "delta": "增量规则 β=1",
          "best_linear": "最小二乘状态（均方误差最小）", "codebook_linear": "按码本设计的状态 C⁺K",
          "fitted_linear": "拟合回忆率的状态"}
GPU_PENDING = ("GPU 的结果文件还没有：它在 CUDA 运行器上运行 `python -m snippets.probes.long_context --device cuda "
               "--preset full` 后生成（`results/long-context-cuda-<设备>.json`），本页随之多出一节。这里不放任何估计的 GPU 数字。\n")


def _cpu(results: list[dict]) -> dict | None:
    """The CPU file: the tables' captions describe a single-threaded CPU run (a GPU file needs its own section)."""
    return pick([r for r in results if r["provenance"]["device"]["type"] == "cpu"], KIND)


def _gpus(results: list[dict]) -> list[dict]:
    """The CUDA files (full or quick preset, full first): each gets its own GPU section beside the CPU tables."""
    mine = [r for r in of_kind(results, KIND) if r["provenance"]["device"]["type"] == "cuda"
            and r["preset"] in ("full", "quick")]
    return sorted(mine, key=lambda r: (r["preset"] != "full", r["_file"]))


def _gpu_name(g: dict) -> str:
    return g["provenance"]["device"]["name"]  # the driver and torch version are in the provenance line


def _bytes_diff(delta: int) -> str:
    return "0" if delta == 0 else f"{delta:+,}"


def _size(nbytes: float) -> str:
    for unit, scale in (("GiB", 2 ** 30), ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.3g} {unit}"
    return f"{int(nbytes)} B"


def render_costs(results: list[dict], out_dir: Path) -> None:
    d, w = 128, 4096
    head = ["n", "全注意力", "窗口 w=4096", "线性"]
    rows = []
    for n in (4096, 32768, 131072, 1048576):
        rows.append([f"{n:,}"] + [f"{attention_flops(n, d, m, w) / 1e12:.3g}" for m in ("full", "window", "linear")])
    text = (f"每层每头一次前向的 TFLOP（d = {d}，一次乘加记 2 次，不计因果省下的一半），由 `attention_flops` 算出。\n\n")
    rows2 = [[f"{n:,}"] + [_size(4 * decode_state_elems(n, d, m, w)) for m in ("full", "window", "linear")]
             for n in (4096, 131072, 1048576)]
    text2 = "\n解码时每层每头要存的缓存或状态（fp32），由 `decode_state_elems` 算出：\n\n"
    write_text(out_dir, "ch13-costs.md", text + md_table(head, rows) + text2 + md_table(head, rows2))


def _scaling_grid(r: dict) -> tuple[list[int], dict]:
    s = r["probes"]["scaling"]
    return sorted({x["n"] for x in s["rows"]}), {(x["method"], x["n"]): x for x in s["rows"]}


def _times(r: dict) -> list[list]:
    ns, by = _scaling_grid(r)
    return [[LABELS[m]] + [f"{1e3 * by[(m, n)]['time_s']:.3g}" for n in ns] for m in LABELS]


def _gpu_scaling_block(g: dict, cpu: dict | None) -> str:
    """One CUDA file: its peaks as a byte difference from the CPU file's (the same code and inputs), and its times."""
    s = g["probes"]["scaling"]
    ns, by = _scaling_grid(g)
    head = ["方法"] + [f"n={n}" for n in ns]
    text = (f"**GPU。** {_gpu_name(g)} 上，同一个探针、同样的输入：d = {s['d']}，float32，batch·heads = 1，"
            f"窗口 w = {s['window']}，分块 C = {s['chunk']}；预设 {g['preset']}。")
    if cpu is not None and _scaling_grid(cpu)[0] == ns:
        _, cby = _scaling_grid(cpu)
        diff = [[LABELS[m]] + [_bytes_diff(by[(m, n)]["peak_bytes"] - cby[(m, n)]["peak_bytes"]) for n in ns]
                for m in LABELS]
        text += "峰值额外内存减去上面 CPU 的峰值（字节；0 是逐字节相同）：\n\n" + md_table(head, diff)
        sources = (g, cpu)
    else:
        mem = [[LABELS[m]] + [_size(by[(m, n)]["peak_bytes"]) for n in ns] for m in LABELS]
        text += "峰值额外内存（含输出）：\n\n" + md_table(head, mem)
        sources = (g,)
    text += (f"\n时间（毫秒，{s['repeats']} 次的中位数，`{s['timer']}` 计时）：\n\n" + md_table(head, _times(g))
             + "\n" + md_caption(*sources))
    return text


def render_scaling(results: list[dict], out_dir: Path) -> None:
    r = _cpu(results)
    gpus = _gpus(results)
    parts = []
    if r is None:
        parts.append(NO_RESULTS)
    else:
        s = r["probes"]["scaling"]
        ns, by = _scaling_grid(r)
        head = ["方法"] + [f"n={n}" for n in ns]
        mem = [[LABELS[m]] + [_size(by[(m, n)]["peak_bytes"]) for n in ns] for m in LABELS]
        parts.append(f"**CPU。** d = {s['d']}，float32，batch·heads = 1，窗口 w = {s['window']}，分块 C = {s['chunk']}；"
                     f"预设 {r['preset']}。峰值额外内存（含输出）：\n\n" + md_table(head, mem)
                     + f"\n时间（毫秒，{s['repeats']} 次的中位数，单线程 CPU，与协调者共用 2 核，单次读数会抖动）：\n\n"
                     + md_table(head, _times(r)) + "\n" + md_caption(r))
    parts += [_gpu_scaling_block(g, r) for g in gpus]
    if not gpus:
        parts.append(GPU_PENDING)
    write_text(out_dir, "ch13-scaling.md", "\n".join(parts))


def render_scaling_figure(results: list[dict], out_dir: Path) -> None:
    r = _cpu(results)
    if r is None:
        placeholder_svg(out_dir, "ch13-scaling.svg", "五种注意力的峰值额外内存")
        return
    rows = r["probes"]["scaling"]["rows"]
    fig, ax = new_figure(FIG_WIDTH, 3.4)
    for i, m in enumerate(LABELS):
        pts = sorted((x["n"], x["peak_bytes"]) for x in rows if x["method"] == m)
        ax.plot([p[0] for p in pts], [p[1] / 2 ** 20 for p in pts], label=LABELS[m], **series_style(i))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("序列长度 n")
    ax.set_ylabel("峰值额外内存（MiB）")
    ax.set_title(f"d = {r['probes']['scaling']['d']}，float32（CPU）：全注意力 ∝ n²，其余 ∝ n")
    legend_below(ax, ncol=2)
    save_svg(fig, out_dir / "ch13-scaling.svg", sources=[r])


def render_decode_step(results: list[dict], out_dir: Path) -> None:
    r = _cpu(results)
    if r is None:
        write_text(out_dir, "ch13-decode-step.md", NO_RESULTS)
        return
    rows = r["probes"]["decode_step"]
    head = ["已读 n", "全注意力一步", "线性一步", "KV 缓存", "线性状态"]
    body = [[f"{x['n']:,}", _size(x["full_step_bytes"]), _size(x["linear_step_bytes"]), _size(x["kv_cache_bytes"]),
             _size(x["state_bytes"])] for x in rows]
    text = (f"d = {rows[0]['d']}，float32：解码一个词元时的峰值额外内存（缓存与状态在测量之外建好），"
            "以及要一直存着的缓存或状态本身。\n\n")
    gpu = "".join("\n" + _gpu_decode_line(g, r) for g in _gpus(results))
    write_text(out_dir, "ch13-decode-step.md", text + md_table(head, body) + gpu + "\n" + md_caption(r, *_gpus(results)))


DECODE_COLUMNS = {"linear_step_bytes": "线性一步", "full_step_bytes": "全注意力一步", "kv_cache_bytes": "KV 缓存",
                  "state_bytes": "线性状态"}


def _gpu_decode_line(g: dict, cpu: dict) -> str:
    """One sentence: each column of the CUDA file's decode rows against the CPU file's, in bytes."""
    gr, cr = g["probes"]["decode_step"], cpu["probes"]["decode_step"]
    if [x["n"] for x in gr] != [x["n"] for x in cr]:
        return f"**GPU。** {_gpu_name(g)} 的文件测的是另一组 n，这里不比较。\n"
    same, other = [], []
    for key, label in DECODE_COLUMNS.items():
        deltas = sorted({a[key] - b[key] for a, b in zip(gr, cr)})
        if deltas == [0]:
            same.append(label)
        elif len(deltas) == 1:
            other.append(f"{label}每行都多 {_bytes_diff(deltas[0])[1:]} B")
        else:
            other.append(f"{label}相差 {_bytes_diff(deltas[0])} 到 {_bytes_diff(deltas[-1])} B")
    text = f"**GPU。** {_gpu_name(g)} 上：" + "、".join(same) + "与上表逐字节相同"
    return text + ("；" + "；".join(other) if other else "") + "。\n"


def recall_columns(r: dict) -> list[str]:
    """这份文件测了的记忆（RECALL 的顺序）：较早的文件没有后加的两列。"""
    rows = r["probes"]["recall"]["rows"]
    return [m for m in RECALL if all(m in x for x in rows)]


def recall_means(r: dict) -> dict:
    """{N: {记忆: 各种子的平均回忆率}}。"""
    out: dict = {}
    for x in r["probes"]["recall"]["rows"]:
        out.setdefault(x["n_pairs"], []).append(x)
    return {n: {m: sum(x[m] for x in xs) / len(xs) for m in recall_columns(r)} for n, xs in sorted(out.items())}


def recall_rows(r: dict, columns: list[str] | None = None) -> list[list]:
    """表的每一行：N，每种记忆一格「各种子的均值（最小–最大）」。"""
    out: dict = {}
    for x in sorted(r["probes"]["recall"]["rows"], key=lambda x: x["seed"]):
        out.setdefault(x["n_pairs"], []).append(x)
    columns = columns or recall_columns(r)
    return [[n] + [mean_range([x[m] for x in xs], ".3f") for m in columns] for n, xs in sorted(out.items())]


def same_recall(a: dict, b: dict) -> list[str] | None:
    """两份文件在共有的列上逐项相同时返回这些列，否则 None。"""
    shared = [m for m in recall_columns(a) if m in recall_columns(b)]
    key = lambda r: [{k: x[k] for k in ("seed", "n_pairs", "d_k", *shared)} for x in r["probes"]["recall"]["rows"]]  # noqa: E731
    return shared if key(a) == key(b) else None


def render_recall(results: list[dict], out_dir: Path) -> None:
    r = _cpu(results)
    if r is None:
        write_text(out_dir, "ch13-recall.md", NO_RESULTS)
        return
    c = r["probes"]["recall"]["config"]
    head = ["N 对"] + [RECALL[m] for m in recall_columns(r)]
    body = recall_rows(r)
    text = (f"不训练：d_k = {c['d_k']} 维随机单位键，N 个随机单位值（64 维）；回忆率 = 输出与码本里最像的值是对的那个的比例，"
            f"每格是 {len(c['seeds'])} 个种子的均值，括号里是最小–最大。softmax 的查询乘锐度 {c['sharpness']:g}。")
    if "fitted_linear" in recall_columns(r):
        text += (f"C 是 N × 64 的码本，C⁺ 是它的伪逆；「拟合回忆率的状态」从 C⁺K 出发，用 Adam 在码本打分的交叉熵上走 "
                 f"{c['fit_steps']} 步。")
    text += "\n\n"
    gpu = ""
    for g in _gpus(results):
        shared = same_recall(g, r)
        if shared is not None and len(shared) == len(recall_columns(r)):
            gpu += f"\n**GPU。** {_gpu_name(g)} 上每个种子、每个 N 的回忆率都与上表逐项相同。\n"
        elif shared is not None:
            names = "、".join(RECALL[m] for m in shared)
            gpu += (f"\n**GPU。** {_gpu_name(g)} 的文件测了{names}这 {len(shared)} 列，每个种子、每个 N 都与上表逐项相同；"
                    "其余几列是后来加的，只在 CPU 上测了。\n")
        else:
            body_g = recall_rows(g)
            gpu += f"\n**GPU。** {_gpu_name(g)}：\n\n" + md_table(["N 对"] + [RECALL[m] for m in recall_columns(g)], body_g)
    write_text(out_dir, "ch13-recall.md", text + md_table(head, body) + gpu + "\n" + md_caption(r, *_gpus(results)))


RENDERERS = [render_costs, render_scaling, render_scaling_figure, render_decode_step, render_recall]
