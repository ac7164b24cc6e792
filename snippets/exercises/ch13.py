"""第 13 章的练习：分块的线性注意力、增量规则的一步、增量规则的递推。参考答案：snippets/linear_attention.py。"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from snippets import linear_attention as la
from snippets.exercises.core import Case, Exercise, Property, matches_reference, raises, randn, register

LINEAR = "13-long-context/derivation-linear.md"
CODE = ("13-long-context/code.md", "code")
DTYPES = [torch.float64, torch.float32]


# --------------------------------------------------------------------------- linear_attention_chunked
def _ref_chunked(q, k, v, chunk):
    return la.linear_attention_chunked(q, k, v, chunk)


def _make_chunked(rng, batch, n, d_k, d_v, chunk, dtype):
    lead = (batch,) if batch else ()
    return Case((randn(rng, *lead, n, d_k, dtype=dtype), randn(rng, *lead, n, d_k, dtype=dtype),
                 randn(rng, *lead, n, d_v, dtype=dtype), chunk))


register(Exercise(
    id="ch13.linear_attention_chunked", name="linear_attention_chunked", questions=("13.3",), title="分块的线性注意力",
    signature="linear_attention_chunked(q, k, v, chunk)",
    statement="因果线性注意力（没有 softmax）o_t = Σ（s≤t） (q_t·k_s) v_s 的分块形式：状态 S = Σ v_s k_sᵀ 是 d_v × d_k 的矩阵。"
              "对每一块 [i, i + C)：先算之前各块的贡献 Q_blk Sᵀ，再加块内的因果部分 (M ⊙ Q_blk K_blkᵀ) V_blk（M 下三角含对角线），"
              "然后才用这一块更新 S ← S + V_blkᵀ K_blk。chunk 可以不整除 n。结果与递推形式、并行形式都相同。",
    shapes="q、k (..., n, d_k)，v (..., n, d_v)，chunk 正整数 → (..., n, d_v)。",
    bad_input="chunk 不是正整数：ValueError，报错信息写出 chunk。",
    reference=_ref_chunked, solution=CODE,
    stub='''def linear_attention_chunked(q, k, v, chunk):
    """块间：Q_blk Sᵀ；块内：(M ⊙ Q_blk K_blkᵀ) V_blk（M 下三角含对角线）；然后 S ← S + V_blkᵀ K_blk。
    q、k (..., n, d_k)，v (..., n, d_v) → (..., n, d_v)。chunk 不是正整数：ValueError（写出 chunk）。"""
    raise NotImplementedError("在这里写你的实现")
''',
    properties=[
        Property("matches", "与因果的 Σ（s≤t） (q_t·k_s) v_s 相同：chunk 整除与不整除 n、d_k ≠ d_v",
                 "块内也要因果（下三角含对角线）；先用旧的 S 算块间贡献，再把这一块加进 S；S 是 Σ v kᵀ（d_v × d_k），"
                 "块间贡献是 Q Sᵀ；最后一块可能不满 chunk 个。", LINEAR, "linear-attention", _make_chunked,
                 matches_reference(),
                 dims={"batch": [0, 2], "n": [1, 2, 4, 7], "d_k": [1, 2, 3], "d_v": [1, 2, 4], "chunk": [1, 2, 3, 8],
                       "dtype": DTYPES}, tries=16),
        Property("bad-chunk", "chunk = 0：ValueError，并写出参数名 chunk",
                 "先检查 chunk 是 ≥ 1 的整数。", LINEAR, "linear-attention",
                 lambda rng: Case((randn(rng, 3, 2), randn(rng, 3, 2), randn(rng, 3, 2), 0), note="chunk = 0"),
                 raises("chunk")),
    ],
))


# --------------------------------------------------------------------------- delta_rule_step
def _ref_step(s, k_t, v_t, beta_t):
    return la.delta_rule_step(s, k_t, v_t, beta_t)


def _make_step(rng, batch, d_k, d_v, beta, state_scale, dtype):
    lead = (batch,) if batch else ()
    k = F.normalize(randn(rng, *lead, d_k, dtype=dtype), dim=-1)
    return Case((randn(rng, *lead, d_v, d_k, dtype=dtype, scale=state_scale), k, randn(rng, *lead, d_v, dtype=dtype),
                 torch.full(lead, beta, dtype=dtype)), note="‖k_t‖ = 1")


def _make_bad_step(rng, which):
    s, v, beta = randn(rng, 2, 3), randn(rng, 2), torch.tensor(0.5, dtype=torch.float64)
    if which == 0:
        return Case((s, randn(rng, 3) * 3 + 1, v, beta), note="‖k_t‖ ≠ 1")
    return Case((s, F.normalize(randn(rng, 3), dim=-1), v, torch.tensor(2.5, dtype=torch.float64)), note="beta_t = 2.5")


register(Exercise(
    id="ch13.delta_rule_step", name="delta_rule_step", questions=("13.6",), title="增量规则的一步",
    signature="delta_rule_step(s, k_t, v_t, beta_t)",
    statement="DeltaNet 的一步：S ← S(I − β k kᵀ) + β v kᵀ = S − β (S k − v) kᵀ，也就是对损失 ½‖S k − v‖² 走一步步长为 β 的梯度下降："
              "先读出 S k（状态对这个键的预测），按它与 v 的差改写。稳定条件：‖k_t‖ = 1，0 ≤ β_t ≤ 2。",
    shapes="s (..., d_v, d_k)，k_t (..., d_k)，v_t (..., d_v)，beta_t (...) → (..., d_v, d_k)。",
    bad_input="‖k_t‖ 不是 1：ValueError（写出 k_t）；beta_t 不在 [0, 2]：ValueError（写出 beta_t）。",
    reference=_ref_step, solution=CODE,
    stub='''def delta_rule_step(s, k_t, v_t, beta_t):
    """S ← S − β (S k − v) kᵀ。s (..., d_v, d_k)，k_t (..., d_k)，v_t (..., d_v)，beta_t (...) → (..., d_v, d_k)。
    ‖k_t‖ ≠ 1：ValueError（写出 k_t）；beta_t 不在 [0, 2]：ValueError（写出 beta_t）。"""
    raise NotImplementedError("在这里写你的实现")
''',
    properties=[
        Property("empty-state", "S = 0：一步之后 S = β v kᵀ",
                 "状态为 0 时预测 S k = 0，误差 S k − v 就是 −v；减去 β·误差·kᵀ 得 S ← β v kᵀ（外积，d_v × d_k，v 在左、k 在右）。", LINEAR, "delta-rule",
                 lambda rng, **d: (lambda c: Case((torch.zeros_like(c.args[0]),) + c.args[1:], note="S = 0"))(
                     _make_step(rng, **d)), matches_reference(),
                 dims={"batch": [0, 2], "d_k": [1, 2, 3], "d_v": [1, 2, 4], "beta": [1.0, 0.5, 2.0], "state_scale": [1.0],
                       "dtype": DTYPES}, tries=8),
        Property("matches", "一般的 S：S − β (S k − v) kᵀ（先擦掉 S 对 k 的旧预测，再写入 v）",
                 "增量规则与普通线性注意力的差别就在 −β (S k) kᵀ 这一项：先用 S k 读出旧值；符号是减去 β (S k − v) kᵀ。",
                 LINEAR, "delta-rule", _make_step, matches_reference(),
                 dims={"batch": [0, 2], "d_k": [1, 2, 3, 5], "d_v": [1, 2, 4], "beta": [1.0, 0.5, 0.1, 2.0],
                       "state_scale": [1.0, 3.0], "dtype": DTYPES}),
        Property("bad-k_t", "‖k_t‖ ≠ 1：ValueError，并写出参数名 k_t",
                 "I − β k kᵀ 的特征值是 1 与 1 − β‖k‖²：‖k‖ ≠ 1 时状态可能被逐步放大。检查 ‖k_t‖ 与 1 的差。", LINEAR, "delta-rule",
                 lambda rng: _make_bad_step(rng, 0), raises("k_t")),
        Property("bad-beta_t", "beta_t 不在 [0, 2]：ValueError，并写出参数名 beta_t",
                 "β > 2 时 |1 − β| > 1：检查 0 ≤ β_t ≤ 2。", LINEAR, "delta-rule",
                 lambda rng: _make_bad_step(rng, 1), raises("beta_t")),
    ],
))


# --------------------------------------------------------------------------- delta_rule_recurrent
def _ref_recurrent(q, k, v, beta):
    return la.delta_rule_recurrent(q, k, v, beta)


def _make_recurrent(rng, batch, n, d_k, d_v, dtype, repeat_key=False):
    lead = (batch,) if batch else ()
    k = F.normalize(randn(rng, *lead, n, d_k, dtype=dtype), dim=-1)
    if repeat_key and n > 1:
        k[..., -1, :] = k[..., 0, :]  # 最后一个键与第一个相同：旧值要被擦掉
    beta = torch.rand(*lead, n, generator=rng, dtype=torch.float64).to(dtype) * 0.9 + 0.1
    return Case((randn(rng, *lead, n, d_k, dtype=dtype), k, randn(rng, *lead, n, d_v, dtype=dtype), beta),
                note="‖k_t‖ = 1，β ∈ [0.1, 1]" + ("；最后一个键与第一个相同" if repeat_key and n > 1 else ""))


REC_DIMS = {"batch": [0, 2], "n": [1, 2, 3, 6], "d_k": [1, 2, 3], "d_v": [1, 2], "dtype": DTYPES}

register(Exercise(
    id="ch13.delta_rule_recurrent", name="delta_rule_recurrent", questions=("13.6",), title="增量规则的递推",
    signature="delta_rule_recurrent(q, k, v, beta)",
    statement="DeltaNet：S_0 = 0，逐个位置 S_t = S_(t−1)(I − β_t k_t k_tᵀ) + β_t v_t k_tᵀ，输出 o_t = S_t q_t"
              "（用更新之后的状态：位置 t 看得见自己写入的 v_t）。每个键 ‖k_t‖ = 1，0 ≤ β_t ≤ 2。",
    shapes="q、k (..., n, d_k)，v (..., n, d_v)，beta (..., n) → (..., n, d_v)。",
    bad_input="beta 有负数或大于 2 的值：ValueError，报错信息写出 beta。",
    reference=_ref_recurrent, solution=CODE,
    stub='''def delta_rule_recurrent(q, k, v, beta):
    """S_0 = 0，S_t = S_(t−1)(I − β_t k_t k_tᵀ) + β_t v_t k_tᵀ，o_t = S_t q_t（更新之后）。
    q、k (..., n, d_k)，v (..., n, d_v)，beta (..., n) → (..., n, d_v)。
    beta 不在 [0, 2]：ValueError（写出 beta）。"""
    raise NotImplementedError("在这里写你的实现")
''',
    properties=[
        Property("matches", "逐步的增量规则，输出用更新之后的状态 S_t",
                 "o_t = S_t q_t，S_t 已经写入了 (k_t, v_t)；每一步都要先擦掉 S_(t−1) 对 k_t 的旧预测（−β (S k) kᵀ）。",
                 LINEAR, "delta-rule", _make_recurrent, matches_reference(), dims=REC_DIMS),
        Property("overwrite", "同一个键写两次：第二次按误差改写，不是累加",
                 "普通线性注意力只会把 v kᵀ 加上去；增量规则先读出 S k，再按 v − S k 改写：同一个键第二次写入时旧值被替换。",
                 LINEAR, "delta-rule", lambda rng, **d: _make_recurrent(rng, repeat_key=True, **d), matches_reference(),
                 dims={**REC_DIMS, "n": [2, 3, 5]}, tries=8),
        Property("bad-beta", "beta 里有负数：ValueError，并写出参数名 beta",
                 "检查 0 ≤ beta ≤ 2（每个位置）。", LINEAR, "delta-rule",
                 lambda rng: (lambda c: Case(c.args[:3] + (c.args[3] - 2.0,), note="beta 都是负数"))(
                     _make_recurrent(rng, 0, 3, 2, 2, torch.float64)), raises("beta")),
    ],
))


# --------------------------------------------------------------------------- decay_linear_attention
def _ref_decay(q, k, v, a):
    return la.decay_linear_attention_recurrent(q, k, v, a)


def _make_decay(rng, batch, n, d_k, d_v, resets, dtype):
    lead = (batch,) if batch else ()
    a = torch.rand(*lead, n, generator=rng, dtype=torch.float64).to(dtype) * 0.6 + 0.4
    for t in range(resets):
        a[..., min(1 + 2 * t, n - 1)] = 0.0  # a_t = 0：硬重置
    return Case((randn(rng, *lead, n, d_k, dtype=dtype), randn(rng, *lead, n, d_k, dtype=dtype),
                 randn(rng, *lead, n, d_v, dtype=dtype), a), note=f"{resets} 处 a_t = 0（硬重置）" if resets else "")


register(Exercise(
    id="ch13.decay_linear_attention", name="decay_linear_attention", questions=("13.9",), title="带衰减的线性注意力",
    signature="decay_linear_attention(q, k, v, a)",
    statement="带标量衰减门的线性注意力（RetNet、Mamba-2 的 SSD）：S_0 = 0，S_t = a_t S_(t−1) + v_t k_tᵀ，o_t = S_t q_t。"
              "也可以写成矩阵形式 O = (L ⊙ QKᵀ)V，L_ij = a_(j+1)⋯a_i（i ≥ j）。a_t = 0 是一次硬重置：之前的一切都被忘掉，"
              "结果里不能出现 NaN（取 log 再做累积和的写法在这里会出错）。",
    shapes="q、k (..., n, d_k)，v (..., n, d_v)，a (..., n)，通常在 [0, 1] → (..., n, d_v)。",
    bad_input="a 的形状不是 (..., n)：ValueError，报错信息写出 a。",
    reference=_ref_decay, solution=CODE,
    stub='''def decay_linear_attention(q, k, v, a):
    """S_0 = 0，S_t = a_t S_(t−1) + v_t k_tᵀ，o_t = S_t q_t。a_t = 0 是硬重置，不能出现 NaN。
    q、k (..., n, d_k)，v (..., n, d_v)，a (..., n) → (..., n, d_v)。a 形状不对：ValueError（写出 a）。"""
    raise NotImplementedError("在这里写你的实现")
''',
    properties=[
        Property("matches", "衰减在 (0.4, 1) 之间：o_t = S_t q_t，S_t = a_t S_(t−1) + v_t k_tᵀ",
                 "先衰减旧状态、再加这一步的 v kᵀ（a_t 不乘这一步自己的写入）；输出用更新之后的 S_t；位置 t 的衰减是 a_t，不是 a_(t−1)。",
                 LINEAR, "decay", lambda rng, **d: _make_decay(rng, resets=0, **d), matches_reference(),
                 dims={"batch": [0, 2], "n": [1, 2, 4, 6], "d_k": [1, 2, 3], "d_v": [1, 2], "dtype": DTYPES}),
        Property("reset", "a_t = 0（硬重置）：之前的状态全部清零，不出现 NaN",
                 "log a_t = −∞：用 log 的累积和相减会得到 (−∞) − (−∞) = NaN。直接连乘（或逐步递推）。", LINEAR, "decay",
                 _make_decay, matches_reference(),
                 dims={"batch": [0, 2], "n": [2, 4, 6], "d_k": [1, 2], "d_v": [1, 2], "resets": [1, 2],
                       "dtype": DTYPES}, tries=8),
        Property("bad-a", "a 的形状不是 (..., n)：ValueError，并写出参数名 a",
                 "比较 a.shape 与 q.shape[:-1]。", LINEAR, "decay",
                 lambda rng: Case((randn(rng, 3, 2), randn(rng, 3, 2), randn(rng, 3, 2), torch.ones(4, dtype=torch.float64)),
                                  note="a 有 4 个，序列有 3 个位置"), raises("a")),
    ],
))
