"""第 12 章的练习：在线 softmax 的一步、分块的注意力、带 KV 缓存的一步解码。参考答案：snippets/attention.py。"""

from __future__ import annotations

import torch

from snippets import attention
from snippets.exercises.core import Case, Exercise, Failure, Property, compare, matches_reference, raises, randn, register

DERIV = "12-inference-efficiency/derivation.md"
CACHE = "12-inference-efficiency/derivation-cache.md"
CODE = ("12-inference-efficiency/code.md", "code")
DTYPES = [torch.float64, torch.float32]


# --------------------------------------------------------------------------- online_softmax_update
def _make_update(rng, rows, bk, d_v, blocks_before, offset, masked_first, dtype):
    """先用参考把 blocks_before 块并进去，得到一个真实的中间状态 (m, l, acc)，再给一块新分数。"""
    m = torch.full((rows, 1), float("-inf"), dtype=dtype)
    l, acc = torch.zeros(rows, 1, dtype=dtype), torch.zeros(rows, d_v, dtype=dtype)
    for b in range(blocks_before):
        s_old = randn(rng, rows, bk, dtype=dtype, scale=2.0)
        if masked_first and b == 0:
            s_old[0] = float("-inf")  # 第一行的第一块整块被遮住
        m, l, acc = attention.online_softmax_update(m, l, acc, s_old, randn(rng, bk, d_v, dtype=dtype))
    s = randn(rng, rows, bk, dtype=dtype, scale=2.0) + offset  # offset 大：新块的最大值超过旧的
    if masked_first and blocks_before == 0:
        s[0] = float("-inf")
    note = (f"新块的分数整体平移了 {offset:+g}" if offset else "") + ("；第一行的第一块整块被遮住" if masked_first else "")
    return Case((m, l, acc, s, randn(rng, bk, d_v, dtype=dtype)), note=note.lstrip("；"))


UPDATE_DIMS = {"rows": [1, 2, 3], "bk": [1, 2, 4], "d_v": [1, 2, 3], "blocks_before": [1, 2, 3], "offset": [0.0, 5.0, -5.0],
               "dtype": DTYPES}


def _ref_update_checked(m, l, acc, s, v_blk):
    if s.shape[-1] != v_blk.shape[-2]:
        raise ValueError(f"v_blk must have s.shape[-1] = {s.shape[-1]} rows, got v_blk {tuple(v_blk.shape)}")
    return attention.online_softmax_update(m, l, acc, s, v_blk)


def _first_block(rng, rows, bk, d_v, masked_first, dtype):
    m = torch.full((rows, 1), float("-inf"), dtype=dtype)
    s = randn(rng, rows, bk, dtype=dtype, scale=2.0)
    if masked_first:
        s[0] = float("-inf")
    return Case((m, torch.zeros(rows, 1, dtype=dtype), torch.zeros(rows, d_v, dtype=dtype), s,
                 randn(rng, bk, d_v, dtype=dtype)),
                note="初始状态 m = −∞" + ("；第一行整块被遮住" if masked_first else ""))


register(Exercise(
    id="ch12.online_softmax_update", name="online_softmax_update", questions=("12.4",), title="在线 softmax 的一步",
    signature="online_softmax_update(m, l, acc, s, v_blk)",
    statement="FlashAttention 的递推：到目前为止每行的最大值 m、指数和 l、未归一化的输出 acc；来了一块分数 s 和它对应的 v_blk。"
              "新最大值 m' = max(m, max_j s_j)，l' = exp(m−m')·l + Σ_j exp(s_j−m')，acc' = exp(m−m')·acc + exp(s−m') @ v_blk。"
              "初始状态是 m = −∞、l = 0、acc = 0；被遮住的分数是 −∞。一行到目前全被遮住时（m' = −∞）不能出现 NaN：l、acc 保持 0。",
    shapes="m、l (..., bq, 1)，acc (..., bq, d_v)，s (..., bq, bk)，v_blk (..., bk, d_v) → (m', l', acc')，形状不变。",
    bad_input="s 的列数与 v_blk 的行数不同：ValueError，报错信息写出 v_blk。",
    reference=_ref_update_checked, solution=CODE,
    stub='''def online_softmax_update(m, l, acc, s, v_blk):
    """m' = max(m, rowmax s)，l' = exp(m−m')·l + Σ exp(s−m')，acc' = exp(m−m')·acc + exp(s−m') @ v_blk。
    m、l (..., bq, 1)，acc (..., bq, d_v)，s (..., bq, bk)，v_blk (..., bk, d_v) → (m', l', acc')。
    整行 −∞ 时不出现 NaN。s 与 v_blk 对不上：ValueError（写出 v_blk）。"""
    raise NotImplementedError("在这里写你的实现")
''',
    properties=[
        Property("first-block", "第一块（m = −∞、l = 0、acc = 0）：l' = Σ exp(s−m')，acc' = exp(s−m') @ v",
                 "初始 m = −∞ 时 exp(m−m') = 0：旧的 l、acc 不参与；这一块的权重是 exp(s−m')，m' 是新的行最大值（不是旧的 m，也不是 0）。", DERIV, "flash",
                 lambda rng, **d: _first_block(rng, masked_first=False, **d), matches_reference(),
                 dims={"rows": [1, 2, 3], "bk": [1, 2, 4], "d_v": [1, 2], "dtype": DTYPES}, tries=8),
        Property("rescale", "之后的块：旧的 l、acc 乘 exp(m−m') 校正（新块的最大值更大或更小时都对）",
                 "最大值从 m 变成 m' 后，旧的 l 与 acc 是按 m 算的：都要乘 exp(m−m')；新块的权重用 exp(s−m')，不是 exp(s−m)。",
                 DERIV, "flash", lambda rng, **d: _make_update(rng, masked_first=False, **d), matches_reference(),
                 dims=UPDATE_DIMS),
        Property("masked", "一行到目前全被遮住（m' = −∞）：不出现 NaN，l、acc 保持 0",
                 "(−∞) − (−∞) = NaN：m' = −∞ 时拿 0 当参考点（exp(−∞−0) = 0）。", DERIV, "flash",
                 lambda rng, blocks_before, **d: (_first_block(rng, masked_first=True, **{k: v for k, v in d.items()
                                                                                            if k != "offset"})
                                                  if blocks_before == 1 else
                                                  _make_update(rng, blocks_before=blocks_before - 1, masked_first=True, **d)),
                 matches_reference(), dims={**UPDATE_DIMS, "blocks_before": [1, 2, 3]}, tries=8),
        Property("bad-v_blk", "v_blk 的行数与 s 的列数不同：ValueError，并写出参数名 v_blk",
                 "比较 s.shape[-1] 与 v_blk.shape[-2]。", DERIV, "flash",
                 lambda rng: Case((torch.zeros(2, 1, dtype=torch.float64), torch.ones(2, 1, dtype=torch.float64),
                                   randn(rng, 2, 3), randn(rng, 2, 4), randn(rng, 5, 3)), note="s 有 4 列，v_blk 有 5 行"),
                 raises("v_blk")),
    ],
))


# --------------------------------------------------------------------------- blockwise_attention
def _ref_blockwise(q, k, v, block):
    return attention.online_softmax_attention(q, k, v, block)


def _make_blockwise(rng, batch, n_q, n_k, d, block, scale, dtype):
    lead = (batch,) if batch else ()
    return Case((randn(rng, *lead, n_q, d, dtype=dtype, scale=scale), randn(rng, *lead, n_k, d, dtype=dtype),
                 randn(rng, *lead, n_k, d + 1, dtype=dtype), block))


register(Exercise(
    id="ch12.blockwise_attention", name="blockwise_attention", questions=("12.3", "12.4"), title="分块的注意力（不存 n×n 矩阵）",
    signature="blockwise_attention(q, k, v, block)",
    statement="用在线 softmax 算 softmax(QKᵀ/√d_k)V，不生成 n_q × n_k 的分数矩阵：查询按 block 分块，每个查询块逐块扫过 K、V，"
              "维护 (m, l, acc)，最后 out = acc / l。block 可以不整除 n_q、n_k。结果与一次算完的公式 (1) 相同（只差舍入）。",
    shapes="q (..., n_q, d_k)，k (..., n_k, d_k)，v (..., n_k, d_v)，block 正整数 → out (..., n_q, d_v)。",
    bad_input="block 不是正整数：ValueError（block = 0）或 TypeError（block 不是 int），报错信息写出 block。",
    reference=_ref_blockwise, solution=CODE,
    stub='''def blockwise_attention(q, k, v, block):
    """逐块的在线 softmax：对每个查询块逐块扫过 K、V，维护 (m, l, acc)，out = acc / l。
    q (..., n_q, d_k)，k (..., n_k, d_k)，v (..., n_k, d_v) → (..., n_q, d_v)。
    block 不是正整数：ValueError/TypeError（写出 block）。"""
    raise NotImplementedError("在这里写你的实现")
''',
    properties=[
        Property("matches", "与 softmax(QKᵀ/√d_k)V 相同：block 整除与不整除 n、分数很大时都对",
                 "每个查询块都要从 m = −∞、l = 0、acc = 0 重新开始；最后一块可能不满 block 个；分数要除以 √d_k；"
                 "换块时旧的 l、acc 要乘 exp(m−m')。", DERIV, "flash", _make_blockwise, matches_reference(),
                 dims={"batch": [0, 2], "n_q": [1, 3, 5, 8], "n_k": [1, 2, 5, 9], "d": [1, 2, 4], "block": [1, 2, 3, 4, 16],
                       "scale": [1.0, 20.0], "dtype": DTYPES}, tries=16),
        Property("bad-block", "block = 0：ValueError，并写出参数名 block",
                 "range(0, n, 0) 会抛出 ValueError，但报错信息不提 block：自己先检查。", DERIV, "flash",
                 lambda rng: Case((randn(rng, 2, 2), randn(rng, 3, 2), randn(rng, 3, 2), 0), note="block = 0"),
                 raises("block")),
    ],
))


# --------------------------------------------------------------------------- decode_step_with_cache
def _ref_decode(q_t, k_t, v_t, k_cache=None, v_cache=None):
    for name, t in (("k_t", k_t), ("v_t", v_t)):
        if t.shape[:-2] != q_t.shape[:-2] or t.shape[-2] != 1:
            raise ValueError(f"{name} must have shape (..., 1, d) like q_t {tuple(q_t.shape)}, got {name} {tuple(t.shape)}")
    if k_t.shape[-1] != q_t.shape[-1]:
        raise ValueError(f"k_t has d_k={k_t.shape[-1]} but q_t has d_k={q_t.shape[-1]}: k_t {tuple(k_t.shape)}")
    cache = attention.KVCache()
    if k_cache is not None:
        cache.update(k_cache, v_cache)
    k, v = cache.update(k_t, v_t)
    out, _ = attention.scaled_dot_product_attention(q_t, k, v)
    return out, k, v


def _check_sequence(fn, case, reference):
    """逐个位置调用 fn，缓存接力；每一步的输出都要等于带因果掩码的整段注意力的那一行。"""
    q, k, v = case.args
    n = q.shape[-2]
    full, _ = attention.scaled_dot_product_attention(q, k, v, attention.causal_mask(n))
    k_cache = v_cache = None
    for t in range(n):
        got = fn(q[..., t:t + 1, :], k[..., t:t + 1, :], v[..., t:t + 1, :], k_cache, v_cache)
        if not isinstance(got, tuple) or len(got) != 3:
            raise Failure(f"应该返回 (out, k_cache, v_cache) 三个值，得到 {type(got).__name__}")
        out, k_cache, v_cache = got
        compare(k_cache, k[..., :t + 1, :], what=f"第 {t} 步之后的 k_cache")
        compare(v_cache, v[..., :t + 1, :], what=f"第 {t} 步之后的 v_cache")
        loose = q.dtype == torch.float32
        compare(out, full[..., t:t + 1, :], atol=1e-4 if loose else 1e-6, rtol=1e-3 if loose else 1e-5,
                what=f"第 {t} 步的输出（与整段带因果掩码的注意力的第 {t} 行比较）")


def _make_seq(rng, batch, heads, n, d, dtype):
    shape = (batch, heads, n, d)
    q, k, v = (randn(rng, *shape, dtype=dtype) for _ in range(3))
    return Case((q, k, v), show={"q（整段）": q, "k（整段）": k, "v（整段）": v},
                note=f"一条 {n} 个位置的序列，从空缓存开始逐步解码")


register(Exercise(
    id="ch12.decode_step_with_cache", name="decode_step_with_cache", questions=("12.1", "12.2"), title="带 KV 缓存的一步解码",
    signature="decode_step_with_cache(q_t, k_t, v_t, k_cache=None, v_cache=None)",
    statement="增量解码的一步：把这一步的 k_t、v_t 接在缓存后面（沿位置那一维），再让这一步的查询 q_t 对全部缓存做缩放点积注意力。"
              "不需要因果掩码：缓存里只有过去和现在。k_cache、v_cache 为 None 时缓存为空。返回 (out, k_cache', v_cache')。"
              "从空缓存开始逐个位置调用，输出必须与对整段序列做带因果掩码的注意力逐行相同。",
    shapes="q_t、k_t (..., 1, d_k)，v_t (..., 1, d_v)，k_cache (..., t, d_k)，v_cache (..., t, d_v) 或 None"
           " → out (..., 1, d_v)，k_cache' (..., t+1, d_k)，v_cache' (..., t+1, d_v)。",
    bad_input="k_t 的宽度与 q_t 不同：ValueError，报错信息写出 k_t。",
    reference=_ref_decode, solution=("02-architecture/code.md", "code"),
    stub='''def decode_step_with_cache(q_t, k_t, v_t, k_cache=None, v_cache=None):
    """把 k_t、v_t 接到缓存后面（位置那一维），q_t 对全部缓存做缩放点积注意力；None = 空缓存。
    q_t、k_t (..., 1, d_k)，v_t (..., 1, d_v) → (out (..., 1, d_v), k_cache', v_cache')。
    k_t 宽度与 q_t 不同：ValueError（写出 k_t）。"""
    raise NotImplementedError("在这里写你的实现")
''',
    properties=[
        Property("sequence", "从空缓存逐步解码：缓存逐步变长，每一步的输出等于整段带因果掩码的注意力的那一行",
                 "先把 k_t、v_t 接进缓存，再做注意力：这一步的查询要看得见自己；沿倒数第二维（位置）拼接；"
                 "一步只有一个查询，不要再加因果掩码。", CACHE, "kv-cache", _make_seq, _check_sequence,
                 dims={"batch": [1, 2], "heads": [1, 2], "n": [1, 2, 3, 5], "d": [1, 2, 4], "dtype": DTYPES}, tries=10),
        Property("bad-k_t", "k_t 的宽度与 q_t 不同：ValueError，并写出参数名 k_t",
                 "比较 k_t.shape[-1] 与 q_t.shape[-1]。", CACHE, "kv-cache",
                 lambda rng: Case((randn(rng, 1, 1, 1, 4), randn(rng, 1, 1, 1, 3), randn(rng, 1, 1, 1, 4)),
                                  note="q_t 宽 4，k_t 宽 3"), raises("k_t")),
    ],
))
