"""第 12 章练习的答案（见 answers_ch01.py 的说明）。"""

import math

import torch


def _check_v(s, v_blk):
    if s.shape[-1] != v_blk.shape[-2]:
        raise ValueError(f"v_blk {tuple(v_blk.shape)} does not match s {tuple(s.shape)}")


def update_no_rescale(m, l, acc, s, v_blk):
    _check_v(s, v_blk)
    m_new = torch.maximum(m, s.amax(-1, keepdim=True))
    ref = m_new.masked_fill(m_new == float("-inf"), 0.0)
    p = torch.exp(s - ref)
    return m_new, l + p.sum(-1, keepdim=True), acc + p @ v_blk  # 旧的 l、acc 没有乘 e^{m−m'}


def update_old_max(m, l, acc, s, v_blk):
    _check_v(s, v_blk)
    ref_old = m.masked_fill(m == float("-inf"), 0.0)
    m_new = torch.maximum(m, s.amax(-1, keepdim=True))
    ref = m_new.masked_fill(m_new == float("-inf"), 0.0)
    p = torch.exp(s - ref_old)  # 新块用了旧的最大值
    scale = torch.exp(m - ref)
    return m_new, scale * l + p.sum(-1, keepdim=True), scale * acc + p @ v_blk


def update_nan_when_masked(m, l, acc, s, v_blk):
    _check_v(s, v_blk)
    m_new = torch.maximum(m, s.amax(-1, keepdim=True))
    p = torch.exp(s - m_new)  # m_new = −∞ 时是 (−∞) − (−∞) = NaN
    scale = torch.exp(m - m_new)
    return m_new, scale * l + p.sum(-1, keepdim=True), scale * acc + p @ v_blk


def update_no_check(m, l, acc, s, v_blk):
    m_new = torch.maximum(m, s.amax(-1, keepdim=True))
    ref = m_new.masked_fill(m_new == float("-inf"), 0.0)
    p = torch.exp(s - ref)
    scale = torch.exp(m - ref)
    n = min(p.shape[-1], v_blk.shape[-2])
    return m_new, scale * l + p.sum(-1, keepdim=True), scale * acc + p[..., :n] @ v_blk[..., :n, :]


def update_logsumexp(m, l, acc, s, v_blk):
    """写法不同：把旧状态当成一个「虚拟的键」，新旧两部分各算一个以 m' 为参考的权重，nan_to_num 兜底。"""
    if v_blk.shape[-2] != s.shape[-1]:
        raise ValueError(f"v_blk has {v_blk.shape[-2]} rows but s has {s.shape[-1]} columns")
    m_new = torch.max(torch.cat([m, s], dim=-1), dim=-1, keepdim=True).values
    finite = torch.isfinite(m_new)
    safe = torch.where(finite, m_new, torch.zeros_like(m_new))
    w_old = torch.where(finite, torch.exp(m - safe), torch.zeros_like(m))
    w_new = torch.where(finite, torch.exp(s - safe), torch.zeros_like(s))
    return m_new, w_old * l + w_new.sum(-1, keepdim=True), w_old * acc + w_new @ v_blk


def _check_block(block):
    if not isinstance(block, int) or block < 1:
        raise ValueError(f"block must be a positive int, got block={block}")


def _blockwise(q, k, v, block, scale=True, reset=True, check=True):
    if check:
        _check_block(block)
    n_q, n_k = q.shape[-2], k.shape[-2]
    out = []
    m = l = acc = None
    for i in range(0, n_q, block):
        qb = q[..., i:i + block, :] / (math.sqrt(q.shape[-1]) if scale else 1.0)
        if reset or m is None or m.shape[-2] != qb.shape[-2]:
            m = torch.full(qb.shape[:-1] + (1,), float("-inf"), dtype=q.dtype)
            l = torch.zeros(qb.shape[:-1] + (1,), dtype=q.dtype)
            acc = torch.zeros(qb.shape[:-1] + v.shape[-1:], dtype=q.dtype)
        for j in range(0, n_k, block):
            s = qb @ k[..., j:j + block, :].transpose(-2, -1)
            m_new = torch.maximum(m, s.amax(-1, keepdim=True))
            p, c = torch.exp(s - m_new), torch.exp(m - m_new)
            l, acc, m = c * l + p.sum(-1, keepdim=True), c * acc + p @ v[..., j:j + block, :], m_new
        out.append(acc / l)
    return torch.cat(out, dim=-2)


def blockwise_no_scale(q, k, v, block):
    return _blockwise(q, k, v, block, scale=False)


def blockwise_state_carried_over(q, k, v, block):
    return _blockwise(q, k, v, block, reset=False)  # 下一个查询块沿用了上一块的 (m, l, acc)


def blockwise_drops_tail(q, k, v, block):
    _check_block(block)
    n_k = (k.shape[-2] // block) * block or k.shape[-2]  # 不整除时丢了最后一块键
    return _blockwise(q, k[..., :n_k, :], v[..., :n_k, :], block)


def blockwise_no_check(q, k, v, block):
    return _blockwise(q, k, v, max(block, 1), check=False)


def blockwise_lse(q, k, v, block):
    """写法不同：每个键块算出块内的 softmax 输出和它的 logsumexp，再按 logsumexp 加权合并。"""
    if isinstance(block, bool) or not isinstance(block, int) or block <= 0:
        raise ValueError(f"block must be >= 1, got block={block!r}")
    outs = []
    for i in range(0, q.shape[-2], block):
        qb = q[..., i:i + block, :] / math.sqrt(q.shape[-1])
        parts, lses = [], []
        for j in range(0, k.shape[-2], block):
            s = qb @ k[..., j:j + block, :].transpose(-2, -1)
            lses.append(torch.logsumexp(s, -1, keepdim=True))
            parts.append(torch.softmax(s, -1) @ v[..., j:j + block, :])
        lse = torch.logsumexp(torch.cat(lses, -1), -1, keepdim=True)
        outs.append(sum(torch.exp(ls - lse) * p for ls, p in zip(lses, parts)))
    return torch.cat(outs, -2)


def _check_kt(q_t, k_t):
    if k_t.shape[-1] != q_t.shape[-1]:
        raise ValueError(f"k_t {tuple(k_t.shape)} does not match q_t {tuple(q_t.shape)}")


def _decode(q_t, k_t, v_t, k_cache, v_cache, before=False, dim=-2, causal=False, check=True):
    if check:
        _check_kt(q_t, k_t)
    old_k = k_cache if k_cache is not None else k_t[..., :0, :]
    old_v = v_cache if v_cache is not None else v_t[..., :0, :]
    k_new, v_new = torch.cat([old_k, k_t], dim=dim), torch.cat([old_v, v_t], dim=dim)
    keys, vals = (old_k, old_v) if before and old_k.shape[-2] else (k_new, v_new)
    s = q_t @ keys.transpose(-2, -1) / math.sqrt(q_t.shape[-1])
    if causal:
        t = keys.shape[-2]
        s = s.masked_fill(~torch.ones(1, t, dtype=torch.bool).tril(), float("-inf"))  # 1 × t 的下三角：只看第 0 个
    return torch.softmax(s, -1) @ vals, k_new, v_new


def decode_attend_before_append(q_t, k_t, v_t, k_cache=None, v_cache=None):
    return _decode(q_t, k_t, v_t, k_cache, v_cache, before=True)


def decode_causal_mask(q_t, k_t, v_t, k_cache=None, v_cache=None):
    return _decode(q_t, k_t, v_t, k_cache, v_cache, causal=True)


def decode_wrong_cat_dim(q_t, k_t, v_t, k_cache=None, v_cache=None):
    _check_kt(q_t, k_t)
    if k_cache is None:
        return _decode(q_t, k_t, v_t, None, None)
    k_new = torch.cat([k_cache, k_t], dim=1)  # 接在了头那一维
    v_new = torch.cat([v_cache, v_t], dim=1)
    s = q_t @ k_new[:, : q_t.shape[1]].transpose(-2, -1) / math.sqrt(q_t.shape[-1])
    return torch.softmax(s, -1) @ v_new[:, : q_t.shape[1]], k_new, v_new


def decode_no_check(q_t, k_t, v_t, k_cache=None, v_cache=None):
    d = min(q_t.shape[-1], k_t.shape[-1])
    out, k_new, v_new = _decode(q_t[..., :d], k_t[..., :d], v_t, k_cache, v_cache, check=False)
    return out, k_new, v_new


def decode_with_sdpa(q_t, k_t, v_t, k_cache=None, v_cache=None):
    """写法不同：交给 torch.nn.functional.scaled_dot_product_attention。"""
    if k_t.shape[-1] != q_t.shape[-1]:
        raise ValueError(f"k_t must have d_k = {q_t.shape[-1]}, got k_t {tuple(k_t.shape)}")
    k = k_t if k_cache is None else torch.cat([k_cache, k_t], -2)
    v = v_t if v_cache is None else torch.cat([v_cache, v_t], -2)
    return torch.nn.functional.scaled_dot_product_attention(q_t, k, v), k, v


WRONG = {
    "ch12.online_softmax_update": [("rescale", update_no_rescale), ("first-block", update_old_max),
                                   ("masked", update_nan_when_masked), ("bad-v_blk", update_no_check)],
    "ch12.blockwise_attention": [("matches", blockwise_no_scale), ("matches", blockwise_state_carried_over),
                                 ("matches", blockwise_drops_tail), ("bad-block", blockwise_no_check)],
    "ch12.decode_step_with_cache": [("sequence", decode_attend_before_append), ("sequence", decode_causal_mask),
                                    ("sequence", decode_wrong_cat_dim), ("bad-k_t", decode_no_check)],
}
RIGHT = {"ch12.online_softmax_update": [update_logsumexp], "ch12.blockwise_attention": [blockwise_lse],
         "ch12.decode_step_with_cache": [decode_with_sdpa]}
