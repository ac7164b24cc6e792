"""第 12 章的图表 → docs/generated/。

由代码算出（不是测量）：
- ch12-roofline.svg       三种加速器的屋顶线（厂商规格表的稠密 BF16 峰值与 HBM 带宽），标出解码、预填充的算术强度
- ch12-hbm.md             hbm_accesses：标准注意力与 FlashAttention 的 HBM 访问元素数随 n 变化
- ch12-kv-configs.md      真实配置在 4K、128K、1M 词元时的 KV 缓存大小

由 results/inference-<device-tag>.json（snippets.probes.inference）测得：
- ch12-attention-memory.svg / ch12-attention.md   四种注意力的峰值额外内存与时间随 n（每个设备的文件一节）
- ch12-flash-blocks.md    flash_attention 的额外内存随块大小（两个 n）
- ch12-decode.md          KV 缓存解码与整段重算的时间
- ch12-kv-quant.md        int8 / fp8 KV 缓存对注意力输出的误差
- ch12-serving.md         模拟请求序列：显存浪费、吞吐与延迟

没有结果文件时写占位图和一行说明。同样的输入得到逐字节相同的文件。
"""

from __future__ import annotations

from pathlib import Path

from sitebuild.generate.render._style import (FIG_WIDTH, NO_RESULTS, TEXT_COLOR, legend_below, md_caption, md_table,
                                              mean_range, new_figure, of_kind, placeholder_svg, save_svg, series_style,
                                              write_text)
from snippets.flash import (ACCELERATORS, decode_attention_intensity, flash_block_sizes, hbm_accesses,
                            linear_intensity, ridge_point)
from snippets.multihead import kv_cache_bytes, mla_cache_bytes

KIND = "inference-probes"
METHOD_LABELS = {"naive": "朴素（公式 1）", "online": "在线 softmax（第 01 章）", "flash": "flash_attention",
                 "sdpa": "F.sdpa"}
GPU_PENDING = ("GPU 的结果文件还没有：它在 CUDA 运行器上运行 `python -m snippets.probes.inference --device cuda "
               "--preset full` 后生成（`results/inference-cuda-<设备>.json`），本页随之多出一节。这里不放任何估计的 GPU 数字。")


def _files(results: list[dict], device_type: str) -> list[dict]:
    """kind 为 inference-probes、设备类型相同、预设为 full 或 quick 的文件，full 在前。"""
    mine = [r for r in of_kind(results, KIND) if r["provenance"]["device"]["type"] == device_type
            and r["preset"] in ("full", "quick")]
    return sorted(mine, key=lambda r: (r["preset"] != "full", r["_file"]))


def _cpu(results):
    files = _files(results, "cpu")
    return files[0] if files else None


def _size(nbytes: float, digits: int = 4) -> str:
    for unit, scale in (("GiB", 2 ** 30), ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if nbytes >= scale:
            v = nbytes / scale
            return f"{v:.{digits}g} {unit}"
    return f"{int(nbytes)} B"


# ----------------------------------------------------------------------------- 由代码算出
def render_roofline(results: list[dict], out_dir: Path) -> None:
    import numpy as np

    fig, ax = new_figure(FIG_WIDTH, 3.6)
    x = np.logspace(-0.5, 4, 200)
    for i, (name, a) in enumerate(ACCELERATORS.items()):
        peak, bw = a["bf16_dense_flops"], a["hbm_bytes_per_s"]
        y = np.minimum(peak, x * bw) / 1e12
        ax.plot(x, y, label=f"{name}（拐点 {ridge_point(peak, bw):.0f} FLOP/B）", **series_style(i), markevery=[])
    points = [("解码 b=1", linear_intensity(1, 8192, 8192)), ("解码注意力 MHA", decode_attention_intensity(64, 64)),
              ("解码注意力 GQA-8", decode_attention_intensity(64, 8)), ("解码 b=64", linear_intensity(64, 8192, 8192)),
              ("预填充 4096 词元", linear_intensity(4096, 8192, 8192))]
    h100 = ACCELERATORS["H100 SXM"]
    for j, (label, ai) in enumerate(points):
        y = min(h100["bf16_dense_flops"], ai * h100["hbm_bytes_per_s"]) / 1e12
        # TEXT_COLOR, not a fixed dark grey: dark_variant swaps it, so the points show on the dark page too
        ax.plot([ai], [y], marker="o", color=TEXT_COLOR, markersize=4, linestyle="none")
        ax.annotate(label, (ai, y), textcoords="offset points", xytext=(4, -12 if j % 2 else 4), fontsize=8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("算术强度（FLOP/B）")
    ax.set_ylabel("可达算力（TFLOP/s）")
    ax.set_title("屋顶线：min(峰值, 强度 × 带宽)\n稠密 BF16 张量核心峰值，HBM 带宽（厂商规格表）")
    legend_below(ax)
    save_svg(fig, out_dir / "ch12-roofline.svg")


def render_hbm(results: list[dict], out_dir: Path) -> None:
    head = ["n", "标准", "FA1 顺序", "倍数", "FA2 顺序", "倍数"]
    rows = []
    for n in (1024, 4096, 16384, 65536):
        std, fl, fl2 = (hbm_accesses(n, 64, 128 * 1024, m) for m in ("standard", "flash", "flash2"))
        rows.append([f"{n:,}", f"{std:,}", f"{fl:,}", f"{std / fl:.2f}", f"{fl2:,}", f"{std / fl2:.2f}"])
    text = ("`hbm_accesses` 按算法的循环数出的 HBM 读写元素数：d = 64，SRAM 128 KiB，fp16（M = 65,536 个元素）。"
            "FA1 顺序是论文的算法 1（外层 K、V，B_c = 256，B_r = 64）；FA2 顺序是 `flash_attention` 的顺序"
            "（外层 Q，B_r = 256，B_c = 64）。倍数 = 标准 / 该顺序。由代码算出，不是测量。\n\n")
    head_d = ["d", "SRAM", "M", "FA1 块 (B_r, B_c)", "标准 / FA1", "FA2 块 (B_r, B_c)", "标准 / FA2"]
    rows_d = []
    n = 4096
    for d in (64, 128):
        for kib in (128, 228):
            m = kib * 1024 // 2
            std, fl, fl2 = (hbm_accesses(n, d, kib * 1024, x) for x in ("standard", "flash", "flash2"))
            rows_d.append([d, f"{kib} KiB", f"{m:,}", str(flash_block_sizes(d, m)), f"{std / fl:.2f}",
                           str(flash_block_sizes(d, m, "flash2")), f"{std / fl2:.2f}"])
    text_d = "\n同样的计数，n = 4096，头宽 d 与 SRAM 大小变化（fp16）：\n\n"
    write_text(out_dir, "ch12-hbm.md", text + md_table(head, rows) + text_d + md_table(head_d, rows_d))


CONFIGS = [  # (名称, 层数, KV 头数或 None（MLA）, d_head, d_latent, d_rope)
    ("Llama-3.1-8B", 32, 8, 128, None, None),
    ("8B 若用 MHA", 32, 32, 128, None, None),
    ("8B 若用 MQA", 32, 1, 128, None, None),
    ("Llama-3.1-70B", 80, 8, 128, None, None),
    ("DeepSeek-V2", 60, None, None, 512, 64),
    ("V2 若用 MHA", 60, 128, 128, None, None),
]


def render_kv_configs(results: list[dict], out_dir: Path) -> None:
    head = ["配置", "每词元", "4K", "128K", "1M"]
    rows = []
    for name, layers, kv, d_head, d_c, d_r in CONFIGS:
        def size(t):
            return kv_cache_bytes(layers, t, kv, d_head) if kv else mla_cache_bytes(layers, t, d_c, d_r)
        rows.append([name, _size(size(1), 6)] + [_size(size(t), 6) for t in (4096, 131072, 1048576)])
    text = ("Llama-3.1 两个模型用 GQA-8（8 个 KV 头），DeepSeek-V2 用 MLA；「若用 MHA/MQA」是同样层数与头宽、KV 头数换成"
            "查询头数或 1 的假想配置。bf16（2 字节）、batch 1，所有层合计；4K = 4,096、128K = 131,072、1M = 1,048,576 个词元。"
            "由 `kv_cache_bytes` / `mla_cache_bytes` 算出。\n\n")
    write_text(out_dir, "ch12-kv-configs.md", text + md_table(head, rows))


# ----------------------------------------------------------------------------- 测量
def _attention_block(r: dict) -> str:
    a = r["probes"]["attention"]
    ns = sorted({row["n"] for row in a["rows"]})
    by = {(row["method"], row["n"]): row for row in a["rows"]}
    mem = [[f"{n:,}"] + [f"{by[(m, n)]['peak_bytes'] / 2 ** 20:.3g}" for m in METHOD_LABELS] for n in ns]
    tim = [[f"{n:,}"] + [f"{1000 * by[(m, n)]['time_s']:.2f}" for m in METHOD_LABELS] for n in ns]
    diff = max(row["max_abs_diff_vs_naive"] for row in a["rows"])
    short = ["n", "朴素", "在线", "flash", "sdpa"]
    return (f"q、k、v 各 (1, 1, n, {a['d']})，float32；在线 softmax 与 flash_attention 的块大小 {a['block']}；"
            f"时间是 {a['repeats']} 次调用的中位数（{a['timer']}）。四种实现的输出与朴素实现最多相差 {diff:.1e}。\n\n"
            "峰值额外内存（MiB，输入不计）：\n\n" + md_table(short, mem) + "\n时间（毫秒）：\n\n" + md_table(short, tim)
            + "\n" + md_caption(r))


def render_attention(results: list[dict], out_dir: Path) -> None:
    cpu = _cpu(results)
    gpus = _files(results, "cuda")
    parts = []
    if cpu is None:
        parts.append(NO_RESULTS)
    else:
        parts.append("**CPU。** " + _attention_block(cpu))
    for g in gpus:
        parts.append("**GPU。** " + _attention_block(g))
    if not gpus:
        parts.append(GPU_PENDING + "\n")
    write_text(out_dir, "ch12-attention.md", "\n".join(parts))


def render_attention_figure(results: list[dict], out_dir: Path) -> None:
    r = _cpu(results)
    if r is None:
        placeholder_svg(out_dir, "ch12-attention-memory.svg", "四种注意力的峰值额外内存")
        return
    rows = r["probes"]["attention"]["rows"]
    fig, ax = new_figure(FIG_WIDTH, 3.4)
    for i, m in enumerate(METHOD_LABELS):
        pts = sorted((row["n"], row["peak_bytes"]) for row in rows if row["method"] == m)
        ax.plot([p[0] for p in pts], [p[1] / 2 ** 20 for p in pts], label=METHOD_LABELS[m], **series_style(i))
    pts = sorted({(row["n"], row["one_nxn_bytes"]) for row in rows})
    ax.plot([p[0] for p in pts], [p[1] / 2 ** 20 for p in pts], color="#888888", linestyle=":",
            label="一个 n×n 矩阵")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("序列长度 n")
    ax.set_ylabel("峰值额外内存（MiB）")
    ax.set_title(f"d = {r['probes']['attention']['d']}，float32，batch·heads = 1（CPU）")
    legend_below(ax, ncol=2)
    save_svg(fig, out_dir / "ch12-attention-memory.svg", sources=[r])


def render_flash_blocks(results: list[dict], out_dir: Path) -> None:
    r = _cpu(results)
    if r is None:
        write_text(out_dir, "ch12-flash-blocks.md", NO_RESULTS)
        return
    rows = r["probes"]["flash_blocks"]
    ns = sorted({x["n"] for x in rows})
    blocks = sorted({x["block"] for x in rows})
    by = {(x["n"], x["block"]): x for x in rows}
    head = ["块"] + [f"n = {n:,}" for n in ns] + ["一块分数"]
    body = [[f"{b}×{b}"] + [_size(by[(n, b)]["extra_bytes"]) for n in ns] + [_size(by[(ns[0], b)]["tile_bytes"])]
            for b in blocks]
    text = (f"flash_attention 的峰值内存减去它的输出 out 与 lse（d = {rows[0]['d']}，float32）："
            "同一块大小下与 n 无关，随块大小按块面积增长。\n\n")
    write_text(out_dir, "ch12-flash-blocks.md", text + md_table(head, body) + "\n" + md_caption(r))


def render_decode(results: list[dict], out_dir: Path) -> None:
    r = _cpu(results)
    if r is None:
        write_text(out_dir, "ch12-decode.md", NO_RESULTS)
        return
    d = r["probes"]["decode"]
    c = d["config"]
    head = ["生成词数 m", "KV 缓存（秒）", "整段重算（秒）", "加速"]
    body = [[x["m"], f"{x['time_cache_s']:.3f}", f"{x['time_recompute_s']:.3f}", f"{x['speedup']:.2f}×"]
            for x in d["rows"]]
    same = all(x["same_tokens"] for x in d["rows"])
    text = (f"读者的 Transformer（d_model = {c['d_model']}，{c['heads']} 头，编码器、解码器各 {c['layers']} 层，"
            f"d_ff = {c['d_ff']}，随机初始化），源句 {c['src_len']} 个词，贪心解码 m 个词；{c['repeats']} 次的中位数，"
            f"单线程 CPU。两种做法生成的词{'逐个相同' if same else '不全相同'}。\n\n")
    write_text(out_dir, "ch12-decode.md", text + md_table(head, body) + "\n" + md_caption(r))


def render_kv_quant(results: list[dict], out_dir: Path) -> None:
    r = _cpu(results)
    if r is None:
        write_text(out_dir, "ch12-kv-quant.md", NO_RESULTS)
        return
    q = r["probes"]["kv_quant"]
    c = q["config"]
    head = ["种子", "int8 K/V 误差", "int8 输出误差", "fp8 输出误差"]
    body = [[x["seed"], f"{100 * x['int8']['kv_rel_error']:.2f}%", f"{100 * x['int8']['rel_error']:.2f}%",
             f"{100 * x['fp8_e4m3']['rel_error']:.2f}%"] for x in q["rows"]]
    text = (f"读者的 MultiHeadAttention（d_model = {c['d_model']}，{c['heads']} 头，随机初始化），随机输入 n = {c['n']}，"
            "因果自注意力；K、V 按词元、按头量化后反量化，其余照常。误差是相对 Frobenius 范数 ‖x̂ − x‖/‖x‖；"
            "fp8 是 e4m3，每个词元一个缩放。\n\n")
    write_text(out_dir, "ch12-kv-quant.md", text + md_table(head, body) + "\n" + md_caption(r))


def render_serving(results: list[dict], out_dir: Path) -> None:
    r = _cpu(results)
    if r is None:
        write_text(out_dir, "ch12-serving.md", NO_RESULTS)
        return
    s = r["probes"]["serving"]
    c = s["config"]
    head_a = ["种子", "词/步", "平均延迟", "p90 延迟"]
    head_b = ["种子", "连续预留浪费", "分页浪费"]
    body_a, body_b = [], []
    for x in s["rows"]:
        st, co = x["static"], x["continuous"]
        body_a.append([x["seed"], f"{st['tokens_per_step']:.2f} → {co['tokens_per_step']:.2f}",
                       f"{st['mean_latency']:.0f} → {co['mean_latency']:.0f}", f"{st['p90_latency']} → {co['p90_latency']}"])
        body_b.append([x["seed"], f"{100 * st['contiguous_waste']:.1f}% / {100 * co['contiguous_waste']:.1f}%",
                       f"{100 * st['paged_waste']:.1f}% / {100 * co['paged_waste']:.1f}%"])
    text = (f"{c['requests']} 个请求，提示与输出长度在 {c['prompt'][0]}–{c['prompt'][1]} 之间对数均匀，到达间隔平均 "
            f"{c['mean_gap']} 步（指数分布）；最多 {c['max_batch']} 个请求同时在批里，每步给每个请求生成一个词。"
            f"延迟以步计，从到达到最后一个词。连续预留给每个请求留 {c['max_len']} 个位置；分页的块是 {c['block_size']} 个词元。"
            "浪费 = 1 − 实际存的词元数 / 占用的位置数，对所有步求和后再除。\n\n")
    tables = ("吞吐与延迟，每格「静态 → 连续」：\n\n" + md_table(head_a, body_a)
              + "\n缓存位置的浪费，每格「静态 / 连续」两种调度下：\n\n" + md_table(head_b, body_b))
    write_text(out_dir, "ch12-serving.md", text + tables + "\n" + md_caption(r))


def render_serving_loads(results: list[dict], out_dir: Path) -> None:
    """负载扫描，读 CPU 结果文件的 probes.serving.loads（serving_load_rows 写的确定性模拟，不是测量）。"""
    r = _cpu(results)
    if r is None or "loads" not in r["probes"]["serving"]:
        write_text(out_dir, "ch12-serving-loads.md", NO_RESULTS)
        return
    s = r["probes"]["serving"]
    write_text(out_dir, "ch12-serving-loads.md", _serving_loads_table(s["loads"], s["config"]) + "\n" + md_caption(r))


def sustained(loads: list[dict], policy: str, gap: float, growth: float = 1.1) -> bool:
    """这种调度撑得住这个到达间隔：每个种子上，请求从较少加到全部，平均延迟的增长都不到 growth 倍
    （队列不随序列变长而越排越长）。"""
    small, large = min(x["requests"] for x in loads), max(x["requests"] for x in loads)
    by = {(x["seed"], x["requests"]): x[policy]["mean_latency"] for x in loads if x["mean_gap"] == gap}
    seeds = sorted({s for s, _ in by})
    return all(by[(s, large)] < growth * by[(s, small)] for s in seeds)


def _serving_loads_table(loads: list[dict], c: dict) -> str:
    small, large = min(x["requests"] for x in loads), max(x["requests"] for x in loads)
    head_a = ["平均到达间隔", "到达的负载（词/步）", "静态：延迟 ×", "连续：延迟 ×"]
    head_b = ["平均到达间隔", "静态：词/步", "连续：词/步", "静态：平均延迟", "连续：平均延迟"]
    body_a, body_b = [], []
    for gap in sorted({x["mean_gap"] for x in loads}):
        xs = [x for x in loads if x["mean_gap"] == gap]
        big = [x for x in sorted(xs, key=lambda x: x["seed"]) if x["requests"] == large]
        by = {(x["seed"], x["requests"]): x for x in xs}
        seeds = sorted({x["seed"] for x in xs})

        def growth(policy):
            g = [by[(s, large)][policy]["mean_latency"] / by[(s, small)][policy]["mean_latency"] for s in seeds]
            mark = "撑得住" if sustained(loads, policy, gap) else "过载"
            return f"{min(g):.2f}–{max(g):.2f}（{mark}）"

        values = lambda key, pol=None: [x[pol][key] if pol else x[key] for x in big]  # noqa: E731
        body_a.append([f"{gap:g}", mean_range(values("offered_tokens_per_step"), ".2f"), growth("static"),
                       growth("continuous")])
        body_b.append([f"{gap:g}"] + [mean_range(values(key, pol), fmt) for key, fmt in
                                      (("tokens_per_step", ".2f"), ("mean_latency", ".0f"))
                                      for pol in ("static", "continuous")])
    return (f"负载扫描（由 `serving_load_rows` 算出的确定性模拟，不是测量）：同样的请求分布，平均到达间隔从密到疏；每个间隔、每个种子各跑同一条序列的前 {small} 个与全部 {large} 个请求。"
            f"「延迟 ×」是 {large} 个请求的平均延迟除以前 {small} 个的（各种子的最小–最大）：队列越排越长时它约为 2，"
            f"撑得住时约为 1；所有种子上都小于 1.1 记作「撑得住」。到达的负载 = 要生成的词数 / 最后一个请求到达的步。\n\n"
            + md_table(head_a, body_a)
            + f"\n全部 {large} 个请求时的吞吐与平均延迟（以步计），{len(seeds_all(loads))} 个种子的均值（最小–最大）：\n\n"
            + md_table(head_b, body_b))


def seeds_all(loads: list[dict]) -> list:
    return sorted({x["seed"] for x in loads})


RENDERERS = [render_roofline, render_hbm, render_kv_configs, render_attention, render_attention_figure,
             render_flash_blocks, render_decode, render_kv_quant, render_serving, render_serving_loads]
