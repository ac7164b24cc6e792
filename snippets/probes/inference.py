"""第 12 章的探针：推理效率的测量，写 ``results/inference-<device-tag>.json``。

    python -m snippets.probes.inference --device cpu|cuda --preset tiny|quick|full [--out PATH]

测什么（每一项都调用页面上的代码）：

- ``attention``：同一组 q、k、v（batch·heads = 1，d = 64，float32）上四种注意力的峰值额外内存与时间，随 n 变化：
  公式 (1) 的朴素实现（``snippets.attention.scaled_dot_product_attention``）、第 01 章的在线 softmax
  （``online_softmax_attention``，block 64）、本章的 ``flash_attention``（block 64×64）、
  ``F.scaled_dot_product_attention``。内存用 :mod:`snippets.probes.memory` 的方法（CPU：重放分配事件；
  CUDA：``max_memory_allocated``）；时间是 ``repeats`` 次调用的中位数（CPU 单线程；CUDA 用 cuda.Event）。
- ``flash_blocks``：两个 n 上，flash_attention 的峰值额外内存（减去输出 out 与 lse 本身）随块大小变化。
- ``decode``：读者的 Transformer 贪心解码 m 个词，带 KV 缓存（``greedy_decode``）与每步整段重算的时间比。
- ``kv_quant``：读者的 MultiHeadAttention 上，K、V 按词元 int8 量化（与 fp8 e4m3 按词元缩放）后注意力输出的误差。
- ``serving``：模拟请求序列上的显存浪费（连续预留 vs 分页）与吞吐、延迟（静态 vs 连续批处理）；与设备无关。
  ``rows`` 是到达最密的一条（mean_gap = 8：两种调度都过载，队列随请求数增长）；``loads`` 是负载扫描
  （``serving_load_rows``，预设里的 ``loads``）：确定性的模拟，与设备、机器负载都无关，页面读哪种负载两种调度都撑得住。

预设：``quick`` 在 2 核 CPU 上 < 60 s，``full`` < 5 min，``tiny`` 只给冒烟测试。CUDA 的结果只能来自真实
GPU：没有 GPU 时 ``--device cuda`` 直接报错退出，不写任何文件。
"""

from __future__ import annotations

import sys
import time

import torch
import torch.nn.functional as F

from snippets import results as R
from snippets.attention import MultiHeadAttention, online_softmax_attention, scaled_dot_product_attention
from snippets.decoding import greedy_decode
from snippets.flash import flash_attention
from snippets.probes._cli import probe_main, start
from snippets.probes.memory import peak_allocated_bytes
from snippets.probes.timer import Timer, median_time
from snippets.serving import dequantize_int8, kv_waste, make_trace, quantize_int8, simulate_batching
from snippets.transformer import Transformer

KIND = "inference-probes"
SCHEMA_VERSION = 1
METHODS = ("naive", "online", "flash", "sdpa")

PRESETS = {
    "tiny": {"ns": [64, 128], "d": 16, "block": 32, "repeats": 2, "flash_ns": [64, 128], "flash_blocks": [16, 32],
             "decode": {"d_model": 32, "heads": 2, "layers": 1, "d_ff": 64, "src_len": 8, "ms": [8, 16],
                        "repeats": 1},
             "quant": {"d_model": 32, "heads": 2, "n": 32, "seeds": [0]},
             "serving": {"requests": 40, "seeds": [0], "max_batch": 8, "block_size": 16, "mean_gap": 8.0,
                         "loads": {"mean_gaps": [8.0, 32.0], "requests": [20, 40]}}},
    "quick": {"ns": [256, 512, 1024, 2048], "d": 64, "block": 64, "repeats": 3, "flash_ns": [512, 1024],
              "flash_blocks": [32, 64, 128, 256],
              "decode": {"d_model": 128, "heads": 4, "layers": 2, "d_ff": 512, "src_len": 32, "ms": [32, 64, 128],
                         "repeats": 3},
              "quant": {"d_model": 256, "heads": 8, "n": 256, "seeds": [0, 1, 2]},
              "serving": {"requests": 300, "seeds": [0, 1, 2], "max_batch": 16, "block_size": 16, "mean_gap": 8.0,
                          "loads": {"mean_gaps": [8.0, 16.0, 32.0], "requests": [150, 300]}}},
    "full": {"ns": [256, 512, 1024, 2048, 4096], "d": 64, "block": 64, "repeats": 5, "flash_ns": [1024, 2048],
             "flash_blocks": [32, 64, 128, 256, 512],
             "decode": {"d_model": 256, "heads": 8, "layers": 3, "d_ff": 1024, "src_len": 64,
                        "ms": [32, 64, 128, 256], "repeats": 3},
             "quant": {"d_model": 512, "heads": 8, "n": 1024, "seeds": [0, 1, 2, 3, 4]},
             "serving": {"requests": 1000, "seeds": [0, 1, 2, 3, 4], "max_batch": 16, "block_size": 16,
                         "mean_gap": 8.0, "loads": {"mean_gaps": [8.0, 16.0, 24.0, 32.0, 48.0, 64.0],
                                                    "requests": [500, 1000]}}},
}


def attention_rows(ns, d, block, repeats, device, timer, progress=None) -> list[dict]:
    rows = []
    g = torch.Generator().manual_seed(0)
    for n in ns:
        q, k, v = (torch.randn(1, 1, n, d, generator=g).to(device) for _ in range(3))  # (1, 1, n, d)
        fns = {"naive": lambda: scaled_dot_product_attention(q, k, v, check_inputs=False)[0],
               "online": lambda: online_softmax_attention(q, k, v, block=block),
               "flash": lambda: flash_attention(q, k, v, block_q=block, block_k=block)[0],
               "sdpa": lambda: F.scaled_dot_product_attention(q, k, v)}
        with torch.no_grad():
            ref = fns["naive"]()
            for method in METHODS:
                err = (fns[method]() - ref).abs().max().item()
                peak = peak_allocated_bytes(fns[method], device)["peak_bytes"]
                median, samples = median_time(timer, fns[method], repeats)
                rows.append({"method": method, "n": n, "d": d, "peak_bytes": int(peak), "time_s": median,
                             "samples_s": samples, "max_abs_diff_vs_naive": err,
                             "one_nxn_bytes": n * n * q.element_size()})
        if progress:
            progress(1)
    return rows


def flash_block_rows(ns, d, blocks, device) -> list[dict]:
    rows = []
    for n in ns:
        g = torch.Generator().manual_seed(1)
        q, k, v = (torch.randn(1, 1, n, d, generator=g).to(device) for _ in range(3))
        for b in blocks:
            with torch.no_grad():
                peak = peak_allocated_bytes(lambda: flash_attention(q, k, v, block_q=b, block_k=b),
                                            device)["peak_bytes"]
            out_bytes = n * d * q.element_size() + n * q.element_size()  # out 与 lse 本身
            rows.append({"n": n, "d": d, "block": b, "peak_bytes": int(peak), "extra_bytes": int(peak - out_bytes),
                         "tile_bytes": b * b * q.element_size()})
    return rows


def decode_rows(cfg, device, timer) -> list[dict]:
    torch.manual_seed(0)
    model = Transformer(vocab_size=64, d_model=cfg["d_model"], num_heads=cfg["heads"], num_layers=cfg["layers"],
                        d_ff=cfg["d_ff"], dropout=0.0, max_len=max(cfg["ms"]) + 1).to(device).eval()
    src = torch.randint(4, 64, (1, cfg["src_len"]), generator=torch.Generator().manual_seed(0)).to(device)

    @torch.no_grad()
    def recompute(m):  # 不用缓存：每一步把整段前缀重新送进解码器，只取最后一个位置
        memory = model.encode(src)
        tgt = torch.full((1, 1), 1, dtype=torch.long, device=device)
        for _ in range(m):
            logits = model.output_projection(model.decode(tgt, memory))[:, -1]
            tgt = torch.cat([tgt, logits.argmax(-1, keepdim=True)], dim=1)
        return tgt[:, 1:]

    rows = []
    for m in cfg["ms"]:
        same = torch.equal(recompute(m), greedy_decode(model, src, m, bos_id=1))
        t_cache, _ = median_time(timer, lambda: greedy_decode(model, src, m, bos_id=1), cfg["repeats"])
        t_full, _ = median_time(timer, lambda: recompute(m), cfg["repeats"])
        rows.append({"m": m, "time_cache_s": t_cache, "time_recompute_s": t_full, "speedup": t_full / t_cache,
                     "same_tokens": same})
    return rows


def quant_rows(cfg, device) -> list[dict]:
    rows = []
    for seed in cfg["seeds"]:
        torch.manual_seed(seed)
        mha = MultiHeadAttention(cfg["d_model"], cfg["heads"]).to(device)
        x = torch.randn(1, cfg["n"], cfg["d_model"], device=device)
        with torch.no_grad():
            q, k, v = (mha._split_heads(w(x)) for w in (mha.w_q, mha.w_k, mha.w_v))  # (1, h, n, d_head)
            causal = torch.ones(cfg["n"], cfg["n"], dtype=torch.bool, device=device).tril()
            ref = scaled_dot_product_attention(q, k, v, causal)[0]
            out = {}
            for fmt in ("int8", "fp8_e4m3"):
                if fmt == "int8":
                    kq, vq = (dequantize_int8(*quantize_int8(t)) for t in (k, v))
                else:  # fp8：按词元缩放到 e4m3 的最大值 448 附近，再转回来
                    def fp8(t):
                        s = t.abs().amax(-1, keepdim=True) / 448.0
                        return (t / s).to(torch.float8_e4m3fn).to(t.dtype) * s
                    kq, vq = fp8(k), fp8(v)
                o = scaled_dot_product_attention(q, kq, vq, causal)[0]
                bound_ok = bool(((k - kq).abs() <= quantize_int8(k)[1] / 2 + 1e-7).all()) if fmt == "int8" else None
                out[fmt] = {"rel_error": ((o - ref).norm() / ref.norm()).item(),
                            "max_abs_error": (o - ref).abs().max().item(),
                            "kv_rel_error": ((kq - k).norm() / k.norm()).item(), "elementwise_bound_holds": bound_ok}
        rows.append({"seed": seed, **out})
    return rows


def serving_rows(cfg) -> list[dict]:
    rows = []
    max_len = 512 + 512  # 提示与输出的上限：连续预留按它给每个请求留位置
    for seed in cfg["seeds"]:
        trace = make_trace(cfg["requests"], seed, mean_gap=cfg["mean_gap"])
        row = {"seed": seed}
        for policy in ("static", "continuous"):
            r = simulate_batching(trace, policy, cfg["max_batch"], record_lengths=True)
            lengths = r.pop("lengths")
            waste = [kv_waste(ls, max_len, cfg["block_size"]) for ls in lengths]
            used = sum(w["used"] for w in waste)
            r["contiguous_waste"] = 1 - used / sum(w["contiguous"] for w in waste)
            r["paged_waste"] = 1 - used / sum(w["paged"] for w in waste)
            row[policy] = r
        rows.append(row)
    return rows


def serving_load_rows(cfg) -> list[dict]:
    """负载扫描：每个平均到达间隔、每个种子、每个请求数（同一条序列的前 N 个），两种调度的吞吐与延迟。
    平均延迟不随请求数增长（队列不越排越长）的间隔，才是这种调度撑得住的负载。确定性，与设备无关。

    offered_tokens_per_step = 要生成的词数 / 最后一个请求到达的步：到达带来的负载；
    drain_ratio = 跑完的步数 / 最后一个请求到达的步：接近 1 说明请求一停，队列很快就空了。"""
    rows = []
    for gap in cfg["loads"]["mean_gaps"]:
        for seed in cfg["seeds"]:
            trace = make_trace(max(cfg["loads"]["requests"]), seed, mean_gap=gap)
            for n_req in cfg["loads"]["requests"]:
                part = trace[:n_req]
                last = max(a for a, _, _ in part)
                row = {"mean_gap": gap, "seed": seed, "requests": n_req, "last_arrival": last,
                       "offered_tokens_per_step": sum(o for *_, o in part) / last}
                for policy in ("static", "continuous"):
                    r = simulate_batching(part, policy, cfg["max_batch"])
                    row[policy] = {k: r[k] for k in ("steps", "tokens_per_step", "mean_latency", "p90_latency")}
                    row[policy]["drain_ratio"] = r["steps"] / last
                rows.append(row)
    return rows


def run(preset: str, device: str, command: str, *, progress_bar: bool = True) -> dict:
    from tqdm import tqdm

    prov = start(device, command)
    plan = PRESETS[preset]
    timer = Timer(device)
    t0 = time.perf_counter()
    bar = tqdm(total=len(plan["ns"]) + 4, desc="inference probes", file=sys.stderr, disable=not progress_bar)
    out = {"attention": {"block": plan["block"], "d": plan["d"], "repeats": plan["repeats"], "timer": timer.name,
                         "rows": attention_rows(plan["ns"], plan["d"], plan["block"], plan["repeats"], device, timer,
                                                bar.update)}}
    out["flash_blocks"] = flash_block_rows(plan["flash_ns"], plan["d"], plan["flash_blocks"], device)
    bar.update(1)
    out["decode"] = {"config": plan["decode"], "rows": decode_rows(plan["decode"], device, timer)}
    bar.update(1)
    out["kv_quant"] = {"config": plan["quant"], "rows": quant_rows(plan["quant"], device)}
    bar.update(1)
    out["serving"] = {"config": {**plan["serving"], "max_len": 1024, "prompt": [16, 512], "output": [16, 512]},
                      "rows": serving_rows(plan["serving"]), "loads": serving_load_rows(plan["serving"])}
    bar.update(1)
    bar.close()
    prov["runtime_s"] = round(time.perf_counter() - t0, 2)
    prov["load_average"]["after"] = R.loadavg()
    return {"kind": KIND, "schema_version": SCHEMA_VERSION, "preset": preset, "provenance": prov, "probes": out}


def main(argv=None) -> int:
    return probe_main("snippets.probes.inference", "inference", PRESETS, run, argv, __doc__.splitlines()[0])


if __name__ == "__main__":
    raise SystemExit(main())
