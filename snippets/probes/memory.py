"""精确的分配字节数（bytes allocated）：页面上的公式 (1)（朴素注意力）、4-D SDPA、页面上的在线 softmax 注意力。

方法（CPU）：用 ``torch.profiler`` 的 ``profile_memory=True`` 记录 PyTorch CPU 分配器的每一次
分配与释放（kineto 的 ``[memory]`` 事件，带正负字节数），按时间顺序重放、累加，取最大值。
基线是调用前（输入 q、k、v 已经分配，不计入）；所以"峰值"是函数**额外**占用的最大字节数。
这是分配器层面的精确计数，和 glibc 的实际驻留内存（RSS）不同；测内存时**不要**固定 glibc
分配器参数（那只用于计时）。

方法（CUDA）：``torch.cuda.reset_peak_memory_stats()`` 后调用，``max_memory_allocated()``
减去调用前的 ``memory_allocated()``。CUDA 缓存分配器把每次分配向上取整到 512 字节，
所以和闭式可能差几百字节。

朴素注意力峰值的闭式（b = 每元素字节数，batch·heads = 1）::

    scores0 = q @ kᵀ            # n²·b          （存活：n²）
    scores  = scores0 / √d      # n²·b，外加一个标量张量   （瞬时：2n²·b + 12 B）
    del scores0                 #               （存活：n²）
    weights = softmax(scores)   # n²·b          （存活：2n²）
    out     = weights @ v       # n·d·b         （存活：2n² + nd） ← 峰值

    peak = (2n² + nd)·b    （fp32：8n² + 4nd 字节；n = 8192、d = 64 时 539 MB）

SDPA（CPU flash 内核）和在线 softmax（分块，FlashAttention 式）都不会写出 n×n 矩阵，
峰值随 n 线性增长。CPU 的 SDPA 内核另给每个线程一块与 n 无关的工作区（torch 2.11 与 2.13 上约 0.6 MB），
16 个线程时 n = 1024 的峰值就超过一个 n×n 矩阵：所以 CPU 上一律用单线程测，结果与机器的核数无关。
"""

from __future__ import annotations

import contextlib

import torch

from snippets.attention import online_softmax_attention, scaled_dot_product_attention


def naive_peak_closed_form(n: int, d: int, itemsize: int = 4, batch_heads: int = 1) -> int:
    """朴素注意力峰值（字节）：``(2n² + nd)·b``，b = itemsize。"""
    return batch_heads * (2 * n * n + n * d) * itemsize


def attention_matrix_bytes(n: int, itemsize: int) -> int:
    """一个 n×n 注意力矩阵的字节数 ``n²·b``（C14：n = 512、fp32 时 1,048,576 B）。"""
    return n * n * itemsize


def _kineto_memory_events(prof) -> list[tuple[int, int]]:
    """(时间 ns, 字节增量) 的列表，只取 CPU 分配器的事件。"""
    out = []
    for e in prof.profiler.kineto_results.events():
        if e.name() == "[memory]" and e.device_type() == torch.autograd.DeviceType.CPU:
            out.append((int(e.start_ns()), int(e.nbytes())))
    return out


def peak_allocated_bytes_cpu(fn) -> dict:
    """在 profiler 下运行 ``fn()``，重放分配事件，返回峰值与事件数。输出在返回前释放。"""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=False) as prof:
        out = fn()
        del out
    events = _kineto_memory_events(prof)
    events.sort(key=lambda t: t[0])  # 按时间稳定排序
    running = peak = 0
    for _, nbytes in events:
        running += nbytes
        peak = max(peak, running)
    return {"peak_bytes": peak, "net_bytes": running, "events": len(events)}


def peak_allocated_bytes_cuda(fn, device="cuda") -> dict:
    torch.cuda.synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    base = torch.cuda.memory_allocated(device)
    out = fn()
    torch.cuda.synchronize(device)
    peak = torch.cuda.max_memory_allocated(device) - base
    del out
    torch.cuda.synchronize(device)
    return {"peak_bytes": int(peak), "net_bytes": int(torch.cuda.memory_allocated(device) - base),
            "events": None}


@contextlib.contextmanager
def one_thread():
    """单线程运行（CPU SDPA 的工作区按线程数分配），之后恢复原来的线程数。"""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def peak_allocated_bytes(fn, device: str = "cpu") -> dict:
    if str(device).startswith("cuda"):
        return peak_allocated_bytes_cuda(fn, device)
    with one_thread():
        return peak_allocated_bytes_cpu(fn)


def measure(n: int, d: int = 64, *, dtype=torch.float32, device: str = "cpu", block: int = 128,
            seed: int = 0) -> list[dict]:
    """一个 n 下三种注意力的峰值字节数。"""
    g = torch.Generator().manual_seed(seed)
    itemsize = torch.empty((), dtype=dtype).element_size()
    q, k, v = (torch.randn(1, n, d, generator=g, dtype=dtype).to(device) for _ in range(3))  # (1, n, d)
    rows = []

    def row(method, stats, **extra):
        r = {"method": method, "n": n, "d": d, "dtype": str(dtype).replace("torch.", ""),
             "itemsize": itemsize, "peak_bytes": stats["peak_bytes"], "net_bytes": stats["net_bytes"],
             "events": stats["events"], "one_nxn_bytes": attention_matrix_bytes(n, itemsize)}
        r.update(extra)
        rows.append(r)

    closed = naive_peak_closed_form(n, d, itemsize)
    with torch.no_grad():
        st = peak_allocated_bytes(lambda: scaled_dot_product_attention(q, k, v, check_inputs=False)[0], device)
        row("naive", st, closed_form=closed, closed_form_text="(2n²+nd)·b",
            equal=st["peak_bytes"] == closed)
        q4, k4, v4 = (t.unsqueeze(1) for t in (q, k, v))  # (1, 1, n, d)
        st = peak_allocated_bytes(lambda: torch.nn.functional.scaled_dot_product_attention(q4, k4, v4), device)
        row("sdpa", st)
        st = peak_allocated_bytes(lambda: online_softmax_attention(q, k, v, block=block), device)
        row("online", st, block=block)
    return rows


def run(ns, *, d: int = 64, device: str = "cpu", block: int = 128, progress=None) -> dict:
    rows = []
    for n in ns:
        rows.extend(measure(n, d, device=device, block=block))
        if progress:
            progress(1)
    return {
        "method": ("cpu: replay of torch.profiler (profile_memory=True) kineto allocation events, running sum, "
                   "peak above the pre-call baseline (inputs excluded)" if device == "cpu" else
                   "cuda: torch.cuda.max_memory_allocated() - memory_allocated() before the call "
                   "(caching allocator rounds to 512 B)"),
        "d": d, "dtype": "float32", "batch": 1, "heads": 1, "block": block,
        "functions": {"naive": "snippets.attention.scaled_dot_product_attention",
                      "online": "snippets.attention.online_softmax_attention",
                      "sdpa": "torch.nn.functional.scaled_dot_product_attention (4-D)"},
        "closed_form": {"naive": "(2n^2 + n d) * itemsize  (fp32: 8n^2 + 4nd bytes)"},
        "rows": rows,
        "naive_equals_closed_form": all(r["equal"] for r in rows if r["method"] == "naive"),
        "c14": {
            "n512_fp32": attention_matrix_bytes(512, 4),
            "n512_fp16": attention_matrix_bytes(512, 2),
            "n1024_fp32": attention_matrix_bytes(1024, 4),
            "n1024_fp16": attention_matrix_bytes(1024, 2),
            "n131072_fp32_GiB": attention_matrix_bytes(131072, 4) / 2**30,
            "n131072_bf16_GiB": attention_matrix_bytes(131072, 2) / 2**30,
            "n128000_fp32_GiB": round(attention_matrix_bytes(128000, 4) / 2**30, 4),
            "n128000_bf16_GiB": round(attention_matrix_bytes(128000, 2) / 2**30, 4),
        },
    }

