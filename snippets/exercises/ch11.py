"""第 11 章的练习：深度注意力、块间阶段的在线 softmax 统计量、把块内部分和并进来。参考答案：snippets/residual_stream.py。"""

from __future__ import annotations

import torch

from snippets import residual_stream as rs
from snippets.exercises.core import Case, Exercise, Property, matches_reference, raises, randn, register

DERIV = "11-residual-stream/derivation-attnres.md"
CODE = ("11-residual-stream/code.md", "code")
DTYPES = [torch.float64, torch.float32]


# --------------------------------------------------------------------------- depth_attention
def _ref_depth(values, query, gain=None, eps=1e-6):
    return rs.depth_attention(values, query, gain, eps)


def _make_depth(rng, sources, tokens, d, scale, with_gain, dtype):
    lead = (tokens,) if tokens else ()
    values = randn(rng, sources, *lead, d, dtype=dtype) * torch.linspace(0.5, 4.0, sources, dtype=dtype).view(
        sources, *([1] * (len(lead) + 1)))  # 各来源的尺度不同：看得出值有没有被归一化
    query = randn(rng, d, dtype=dtype, scale=scale)
    kwargs = {"gain": randn(rng, d, dtype=dtype) + 1} if with_gain else {}
    return Case((values, query), kwargs)


DEPTH_DIMS = {"sources": [1, 2, 3, 5], "tokens": [0, 1, 3], "d": [1, 2, 4, 8], "scale": [1.0, 3.0],
              "with_gain": [False, True], "dtype": DTYPES}

register(Exercise(
    id="ch11.depth_attention", name="depth_attention", questions=("11.3",), title="深度注意力",
    signature="depth_attention(values, query, gain=None, eps=1e-6)",
    statement="Attention Residuals 的一个子层输入：对 S 个深度来源（嵌入、各子层的输出）做注意力。键是 RMSNorm 过的来源"
              " rmsnorm(values[s]) = values[s]/√(mean(values[s]²) + ε)（再乘 gain，如果给了），查询是一个参数向量 query，"
              "logit_s = key_s · query（没有 1/√d），α = softmax 沿深度（第 0 维），每个位置各算各的；"
              "输出 Σ_s α_s·values[s]：值就是来源本身，不归一化。query 为零时输出是各来源的平均。",
    shapes="values (S, ..., d)，query (d,)，gain (d,) 或 None → (..., d)。",
    bad_input="query 的形状不是 (d,)：ValueError，报错信息写出 query。",
    reference=_ref_depth, solution=CODE,
    stub='''def depth_attention(values, query, gain=None, eps=1e-6):
    """α = softmax_s(rmsnorm(values[s])·gain · query)（沿深度，第 0 维），输出 Σ_s α_s·values[s]。
    values (S, ..., d)，query (d,) → (..., d)。query 形状不是 (d,)：ValueError（写出 query）。"""
    raise NotImplementedError("在这里写你的实现")
''',
    properties=[
        Property("zero-query", "query 为零：输出是各来源的平均（值不归一化）",
                 "query = 0 时每个 logit 都是 0，沿深度（第 0 维）做 softmax 得 α = 1/S；输出用的是原来的 values，不是 RMSNorm 过的键。", DERIV, "full-attnres",
                 lambda rng, **d: (lambda c: Case((c.args[0], torch.zeros_like(c.args[1])), c.kwargs, note="query = 0"))(
                     _make_depth(rng, **d)), matches_reference(), dims=DEPTH_DIMS),
        Property("matches", "一般的 query：键做 RMSNorm（乘 gain），没有 1/√d，softmax 沿深度",
                 "softmax 沿第 0 维（来源），不是沿词元或特征；键要先除以自己的均方根；logit 不除以 √d。", DERIV, "full-attnres",
                 _make_depth, matches_reference(), dims=DEPTH_DIMS),
        Property("bad-query", "query 的形状不是 (d,)：ValueError，并写出参数名 query",
                 "比较 query.shape 与 (values.shape[-1],)。", DERIV, "full-attnres",
                 lambda rng: Case((randn(rng, 3, 2, 4), randn(rng, 5)), note="values 的 d = 4，query 长 5"), raises("query")),
    ],
))


# --------------------------------------------------------------------------- inter_block_phase
def _ref_phase(blocks, queries, gains=None, eps=1e-6):
    # 读者代码对宽度不对的 queries 报的是 query（它检查的是 queries[0]）：这里先按练习的约定检查一次
    if isinstance(queries, torch.Tensor) and isinstance(blocks, torch.Tensor) and (
            queries.dim() != 2 or queries.shape[-1] != blocks.shape[-1]):
        raise ValueError(f"queries must have shape (S, d) with d = blocks.shape[-1] = {blocks.shape[-1]}, "
                         f"got queries {tuple(queries.shape)}")
    return rs.inter_block_phase(blocks, queries, gains, eps)


def _make_phase(rng, n_blocks, sub, tokens, d, scale, dtype):
    lead = (tokens,) if tokens else ()
    blocks = randn(rng, n_blocks, *lead, d, dtype=dtype, scale=2.0)
    return Case((blocks, randn(rng, sub, d, dtype=dtype, scale=scale)))


PHASE_DIMS = {"n_blocks": [1, 2, 3, 5], "sub": [1, 2, 3], "tokens": [0, 2], "d": [1, 2, 4], "scale": [1.0, 30.0],
              "dtype": DTYPES}

register(Exercise(
    id="ch11.inter_block_phase", name="inter_block_phase", questions=("11.7", "11.9"), title="块间阶段：一次算完 S 个查询",
    signature="inter_block_phase(blocks, queries, gains=None, eps=1e-6)",
    statement="Block AttnRes 的第一阶段：一个块里 S 个子层的伪查询一次算完对 N 个已完成块摘要的注意力，但先不归一化。"
              "键是 RMSNorm 过的块摘要（乘 gains[i]，如果给了），logit[i, j] = key_j · queries[i]。返回在线 softmax 的三个统计量："
              "m[i] = max_j logit[i, j]，z[i] = Σ_j exp(logit[i, j] − m[i])，acc[i] = Σ_j exp(logit[i, j] − m[i])·blocks[j]。",
    shapes="blocks (N, ..., d)，queries (S, d)，gains (S, d) 或 None → m (S, ...)，z (S, ...)，acc (S, ..., d)。",
    bad_input="queries 的宽度不是 d：ValueError，报错信息写出 queries。",
    reference=_ref_phase, solution=CODE,
    stub='''def inter_block_phase(blocks, queries, gains=None, eps=1e-6):
    """logit[i, j] = rmsnorm(blocks[j])·gains[i] · queries[i]；返回 m = max_j logit，z = Σ_j exp(logit − m)，
    acc = Σ_j exp(logit − m)·blocks[j]。blocks (N, ..., d)，queries (S, d) → (S, ...), (S, ...), (S, ..., d)。
    queries 宽度不是 d：ValueError（写出 queries）。"""
    raise NotImplementedError("在这里写你的实现")
''',
    properties=[
        Property("matches", "三个统计量与定义一致；acc / z 就是对 N 个块的深度注意力",
                 "m 是每个查询（每个位置）自己的最大 logit；z、acc 都用 exp(logit − m)；acc 加权的是原来的块摘要，不是归一化过的键。",
                 DERIV, "two-phase", _make_phase, matches_reference(), dims=PHASE_DIMS),
        Property("bad-queries", "queries 的宽度不是 d：ValueError，并写出参数名 queries",
                 "比较 queries.shape[-1] 与 blocks.shape[-1]。", DERIV, "two-phase",
                 lambda rng: Case((randn(rng, 2, 4), randn(rng, 3, 5)), note="blocks 的 d = 4，queries 宽 5"),
                 raises("queries")),
    ],
))


# --------------------------------------------------------------------------- merge_partial
def _ref_merge(m, z, acc, partial, query, gain=None, eps=1e-6):
    if partial is not None and partial.shape != acc.shape:
        raise ValueError(f"partial must have the shape of acc {tuple(acc.shape)}, got partial {tuple(partial.shape)}")
    return rs.merge_partial(m, z, acc, partial, query, gain, eps)


def _make_merge(rng, n_blocks, tokens, d, scale, partial_scale, dtype, first=False):
    lead = (tokens,) if tokens else ()
    blocks = randn(rng, n_blocks, *lead, d, dtype=dtype, scale=2.0)
    query = randn(rng, d, dtype=dtype, scale=scale)
    m, z, acc = rs.inter_block_phase(blocks, query[None], None)
    partial = None if first else randn(rng, *lead, d, dtype=dtype, scale=partial_scale)
    return Case((m[0], z[0], acc[0], partial, query),
                show={"blocks（第一阶段的输入）": blocks, "m": m[0], "z": z[0], "acc": acc[0], "partial": partial,
                      "query": query}, note="partial = None" if first else "")


MERGE_DIMS = {"n_blocks": [1, 2, 4], "tokens": [0, 2], "d": [1, 2, 4], "scale": [1.0, 30.0], "partial_scale": [1.0, 5.0],
              "dtype": DTYPES}

register(Exercise(
    id="ch11.merge_partial", name="merge_partial", questions=("11.9",), title="把块内部分和并进在线 softmax",
    signature="merge_partial(m, z, acc, partial, query, gain=None, eps=1e-6)",
    statement="Block AttnRes 的第二阶段的一步：第一阶段给了这个子层对 N 个块摘要的 (m, z, acc)；块内到目前的部分和 partial"
              " 是第 N+1 个来源。它的 logit 是 rmsnorm(partial)·gain · query；用在线 softmax 并进来：新的最大值"
              " m' = max(m, logit)，z' = z·exp(m−m') + exp(logit−m')，acc' = acc·exp(m−m') + exp(logit−m')·partial，返回 acc'/z'。"
              "partial 为 None（块内第一层）时直接返回 acc/z。结果必须与对 N+1 个来源一次做深度注意力相同。",
    shapes="m、z (...)，acc (..., d)，partial (..., d) 或 None，query (d,) → (..., d)。",
    bad_input="partial 的形状与 acc 不同：ValueError，报错信息写出 partial。",
    reference=_ref_merge, solution=CODE,
    stub='''def merge_partial(m, z, acc, partial, query, gain=None, eps=1e-6):
    """把 partial 当作第 N+1 个来源并进 (m, z, acc)：m' = max(m, logit)，z' = z·exp(m−m') + exp(logit−m')，
    acc' = acc·exp(m−m') + exp(logit−m')·partial，返回 acc'/z'；partial 为 None 时返回 acc/z。→ (..., d)。
    partial 形状与 acc 不同：ValueError（写出 partial）。"""
    raise NotImplementedError("在这里写你的实现")
''',
    properties=[
        Property("first-layer", "partial = None（块内第一层）：返回 acc / z",
                 "块内第一层还没有部分和：第一阶段的结果归一化一下就是它的输入。", DERIV, "two-phase",
                 lambda rng, **d: _make_merge(rng, first=True, **d), matches_reference(), dims=MERGE_DIMS),
        Property("matches", "并进 partial 后，与对 N+1 个来源一次做深度注意力相同（logit 差得很远时也不溢出）",
                 "旧的 z、acc 都要乘 exp(m − m')（最大值变了，旧部分要重新缩放）；partial 的 logit 用 RMSNorm 过的 partial，"
                 "加进 acc 的却是原来的 partial。", DERIV, "two-phase", _make_merge, matches_reference(), dims=MERGE_DIMS),
        Property("bad-partial", "partial 的形状与 acc 不同：ValueError，并写出参数名 partial",
                 "比较 partial.shape 与 acc.shape。", DERIV, "two-phase",
                 lambda rng: Case((torch.zeros(2, dtype=torch.float64), torch.ones(2, dtype=torch.float64),
                                   randn(rng, 2, 4), randn(rng, 3, 4), randn(rng, 4)), note="acc (2, 4)，partial (3, 4)"),
                 raises("partial")),
    ],
))
