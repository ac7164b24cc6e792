"""每层浮点运算次数（FLOPs per layer），用 ``FlopCounterMode`` 数出来，和闭式对照。

约定：batch 1，无偏置，一次乘加 = 2 FLOP；``fwd`` 是前向，``fwd+bwd`` 是前向加反向
（输入和所有权重都要梯度；初始状态 h_0 = 0 不要梯度，所以循环层少一步对 h_0 的梯度）。

闭式与层的名字都在 :mod:`snippets.probes.facts`（唯一的登记处）；这里只数、只比。

计数器的盲区（torch 2.13）：``aten.mv`` 记 0；CPU 的 4-D SDPA 记 0；oneDNN 的 ``nn.LSTM``
记 0；``nn.MultiheadAttention(need_weights=False)`` 只记投影。:func:`counter_blind_spots`
把这些现象本身也测出来（信息性，不作断言）。

交叉点（crossover）用二分法在**计数**上求：对固定的 d，找最小的 n 使
``count(attention, n) ≥ count(other, n)``。
"""

from __future__ import annotations

import bisect
import warnings

import torch
from torch.utils.flop_counter import FlopCounterMode

from .facts import FLOP_KINDS, LAYERS, MODES, closed_form
from .layers import make_layer


def count_flops(
    kind: str,
    n: int,
    d: int,
    mode: str = "fwd",
    *,
    heads: int = 1,
    radius: int = 4,
    kernel: int = 3,
    seed: int = 0,
    device: str = "cpu",
    dtype: torch.dtype = torch.float32,
) -> int:
    """用 ``FlopCounterMode`` 数一层（batch 1）的 FLOPs。"""
    if mode not in MODES:
        raise ValueError(f"mode={mode!r} 必须是 {MODES} 之一")
    bwd = mode == "fwd+bwd"
    layer = make_layer(
        kind, d, heads=heads, radius=radius, kernel=kernel, seed=seed,
        dtype=dtype, device=device, requires_grad=bwd,
    )
    g = torch.Generator().manual_seed(seed + 1)
    inputs = layer.make_inputs(1, n, requires_grad=bwd, generator=g)
    with FlopCounterMode(display=False) as counter:
        y = layer(*inputs)  # (1, n, d)
        if bwd:
            y.sum().backward()  # sum 的反向是 expand，不含 FLOP
    return int(counter.get_total_flops())


def counter_blind_spots(n: int = 128, d: int = 64, device: str = "cpu") -> dict:
    """信息性：计数器对常用模块数出多少（torch 2.13 的 CPU 上很多是 0）。不作断言。"""
    torch.manual_seed(0)
    out: dict[str, int] = {}

    def count(fn) -> int:
        with FlopCounterMode(display=False) as c:
            fn()
        return int(c.get_total_flops())

    h = torch.randn(d, device=device)
    W = torch.randn(d, d, device=device)
    out["mv (W @ h, 1-D h)"] = count(lambda: W @ h)
    out["mm (h[None] @ W)"] = count(lambda: h[None] @ W)
    q = torch.randn(1, 1, n, d, device=device)
    out["F.scaled_dot_product_attention 4-D"] = count(
        lambda: torch.nn.functional.scaled_dot_product_attention(q, q, q)
    )
    q3 = torch.randn(1, n, d, device=device)
    out["F.scaled_dot_product_attention 3-D"] = count(
        lambda: torch.nn.functional.scaled_dot_product_attention(q3, q3, q3)
    )
    mha = torch.nn.MultiheadAttention(d, 1, bias=False, batch_first=True).to(device)
    x = torch.randn(1, n, d, device=device)
    out["nn.MultiheadAttention need_weights=False"] = count(lambda: mha(x, x, x, need_weights=False))
    out["nn.MultiheadAttention need_weights=True"] = count(lambda: mha(x, x, x, need_weights=True))
    rnn = torch.nn.RNN(d, d, bias=False, batch_first=True).to(device)
    out["nn.RNN"] = count(lambda: rnn(x))
    lstm = torch.nn.LSTM(d, d, bias=False, batch_first=True).to(device)
    out["nn.LSTM"] = count(lambda: lstm(x))
    if device == "cpu":
        with warnings.catch_warnings():  # oneDNN 的 TF32 提示与此无关
            warnings.simplefilter("ignore", UserWarning)
            with torch.backends.mkldnn.flags(enabled=False):
                out["nn.LSTM (oneDNN disabled)"] = count(lambda: lstm(x))
    return {"n": n, "d": d, "counts": out,
            "closed_forms": {"rnn": 4 * n * d * d, "lstm": 16 * n * d * d,
                             "projections": 8 * n * d * d,
                             "attention": 8 * n * d * d + 4 * n * n * d}}


def bisect_crossover(f, lo: int, hi: int) -> int | None:
    """最小的整数 n ∈ [lo, hi] 使 ``f(n) ≥ 0``（f 的符号在区间内至多从负变正一次）；``f(hi) < 0`` 时 None。"""
    if f(hi) < 0:
        return None
    return lo + bisect.bisect_left(range(lo, hi + 1), True, key=lambda n: f(n) >= 0)


# 交叉点：(名字, 注意力一侧, 另一侧, 理论答案（d 的函数；None 表示注意力从不更便宜）)
CROSSOVERS = (
    ("attention vs rnn", "attention", "rnn", None),
    ("attention vs gru", "attention", "gru", lambda d: d),
    ("attention vs lstm", "attention", "lstm", lambda d: 2 * d),
    ("attention_core vs rnn", "attention_core", "rnn", lambda d: d),
)


def crossover(a: str, b: str, d: int, *, mode: str = "fwd", hi: int | None = None, device: str = "cpu") -> dict:
    """二分法：最小的 n 使 ``count(a) ≥ count(b)``（计数由计数器测得，不用闭式）。

    ``n_star == 1`` 表示在 n = 1 时 a 就已经不便宜，即 a 从不比 b 便宜。
    """
    hi = hi or 4 * d
    cache: dict[tuple[str, int], int] = {}

    def c(kind: str, n: int) -> int:
        if (kind, n) not in cache:
            cache[(kind, n)] = count_flops(kind, n, d, mode, device=device)
        return cache[(kind, n)]

    n_star = bisect_crossover(lambda n: c(a, n) - c(b, n), 1, hi)
    res = {"a": a, "b": b, "d": d, "mode": mode, "search": [1, hi], "n_star": n_star,
           "evaluations": sorted(n for (_, n) in cache)}
    if n_star is not None:
        res["count_a_at_n_star"] = c(a, n_star)
        res["count_b_at_n_star"] = c(b, n_star)
        if n_star > 1:
            res["count_a_below"] = c(a, n_star - 1)
            res["count_b_below"] = c(b, n_star - 1)
    res["evaluations"] = sorted(set(res["evaluations"]))
    return res


def run(ns, ds, *, d_fixed: int, n_fixed: int, crossover_ds, radius: int = 4, kernel: int = 3,
        device: str = "cpu", progress=None) -> dict:
    """FLOPs 探针：n 网格（d = d_fixed）与 d 网格（n = n_fixed），前向和前向+反向，外加交叉点。"""
    rows = []
    grid = [(n, d_fixed) for n in ns] + [(n_fixed, d) for d in ds if d != d_fixed or n_fixed not in ns]
    for kind in FLOP_KINDS:
        for n, d in grid:
            for mode in MODES:
                counted = count_flops(kind, n, d, mode, radius=radius, kernel=kernel, device=device)
                expect = closed_form(kind, n, d, mode, radius=radius, kernel=kernel)
                rows.append({"layer": kind, "n": n, "d": d, "mode": mode,
                             "counted": counted, "closed_form": expect, "equal": counted == expect})
        if progress:
            progress(1)
    xs = []
    for d in crossover_ds:
        for name, a, b, theory in CROSSOVERS:
            r = crossover(a, b, d, device=device)
            r["name"] = name
            r["theory"] = None if theory is None else theory(d)
            r["theory_text"] = {"attention vs rnn": "never (n* = 1)", "attention vs gru": "n = d",
                                "attention vs lstm": "n = 2d", "attention_core vs rnn": "n = d"}[name]
            r["agrees"] = (r["n_star"] == 1) if theory is None else (r["n_star"] == theory(d))
            xs.append(r)
        if progress:
            progress(1)
    return {
        "batch": 1, "radius": radius, "window": 2 * radius + 1, "kernel": kernel,
        "d_fixed": d_fixed, "n_fixed": n_fixed,
        "closed_forms": {k: {"fwd": LAYERS[k].text[0], "fwd+bwd": LAYERS[k].text[1]} for k in FLOP_KINDS},
        "rows": rows,
        "all_equal": all(r["equal"] for r in rows),
        "crossovers": xs,
        "counter_blind_spots": counter_blind_spots(device=device),
    }


def progress_units(ns, ds, crossover_ds) -> int:
    return len(FLOP_KINDS) + len(crossover_ds)
