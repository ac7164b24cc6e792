"""第 13 章练习的答案（见 answers_ch01.py 的说明）。"""

import torch
import torch.nn.functional as F


def _check_chunk(chunk):
    if not isinstance(chunk, int) or chunk < 1:
        raise ValueError(f"chunk must be >= 1, got chunk={chunk}")


def _chunked(q, k, v, chunk, causal=True, update_first=False, check=True):
    if check:
        _check_chunk(chunk)
    s = torch.zeros(q.shape[:-2] + (v.shape[-1], q.shape[-1]), dtype=q.dtype)
    out = []
    for i in range(0, q.shape[-2], chunk):
        qc, kc, vc = q[..., i:i + chunk, :], k[..., i:i + chunk, :], v[..., i:i + chunk, :]
        c = qc.shape[-2]
        scores = qc @ kc.transpose(-2, -1)
        if causal:
            scores = scores.masked_fill(~torch.ones(c, c, dtype=torch.bool).tril(), 0.0)
        if update_first:
            s = s + vc.transpose(-2, -1) @ kc
        inter = qc @ s.transpose(-2, -1)
        out.append(inter + scores @ vc)
        if not update_first:
            s = s + vc.transpose(-2, -1) @ kc
    return torch.cat(out, dim=-2)


def chunked_block_not_causal(q, k, v, chunk):
    return _chunked(q, k, v, chunk, causal=False)


def chunked_update_before_read(q, k, v, chunk):
    return _chunked(q, k, v, chunk, update_first=True)  # 块内的贡献被算了两次


def chunked_drops_tail(q, k, v, chunk):
    _check_chunk(chunk)
    n = (q.shape[-2] // chunk) * chunk
    out = _chunked(q[..., :n, :], k[..., :n, :], v[..., :n, :], chunk) if n else q.new_zeros(q.shape[:-1] + v.shape[-1:])
    return torch.cat([out, q.new_zeros(q.shape[:-2] + (q.shape[-2] - n, v.shape[-1]))], -2) if n else out


def chunked_no_check(q, k, v, chunk):
    return _chunked(q, k, v, max(chunk, 1), check=False)


def chunked_recurrent(q, k, v, chunk):
    """写法不同：不分块，直接用递推（chunk 只检查、不用：结果与分块相同）。"""
    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk <= 0:
        raise ValueError(f"chunk must be a positive int, got chunk={chunk!r}")
    s = torch.zeros(q.shape[:-2] + (v.shape[-1], q.shape[-1]), dtype=q.dtype)
    outs = []
    for t in range(q.shape[-2]):
        s = s + torch.einsum("...v,...k->...vk", v[..., t, :], k[..., t, :])
        outs.append(torch.einsum("...vk,...k->...v", s, q[..., t, :]))
    return torch.stack(outs, -2)


def _check_step(k_t, beta_t):
    if (k_t.norm(dim=-1) - 1).abs().max() > 1e-6:
        raise ValueError(f"k_t must have unit norm, got norms {k_t.norm(dim=-1)}")
    if (beta_t < 0).any() or (beta_t > 2).any():
        raise ValueError(f"beta_t must lie in [0, 2], got {beta_t}")


def step_linear_attention(s, k_t, v_t, beta_t):
    _check_step(k_t, beta_t)
    return s + beta_t[..., None, None] * v_t[..., :, None] * k_t[..., None, :]  # 没有擦除项


def step_wrong_sign(s, k_t, v_t, beta_t):
    _check_step(k_t, beta_t)
    err = (s @ k_t[..., :, None]).squeeze(-1) - v_t
    return s + beta_t[..., None, None] * err[..., :, None] * k_t[..., None, :]


def step_outer_transposed(s, k_t, v_t, beta_t):
    _check_step(k_t, beta_t)
    err = (s @ k_t[..., :, None]).squeeze(-1) - v_t
    upd = err[..., :, None] * k_t[..., None, :]
    if upd.shape[-1] == upd.shape[-2]:
        upd = upd.transpose(-2, -1)  # 方阵时写成了 k (Sk − v)ᵀ
    return s - beta_t[..., None, None] * upd


def step_checks_only_beta(s, k_t, v_t, beta_t):
    if (beta_t < 0).any() or (beta_t > 2).any():
        raise ValueError(f"beta_t must lie in [0, 2], got {beta_t}")
    err = (s @ k_t[..., :, None]).squeeze(-1) - v_t
    return s - beta_t[..., None, None] * err[..., :, None] * k_t[..., None, :]


def step_checks_only_k(s, k_t, v_t, beta_t):
    if (k_t.norm(dim=-1) - 1).abs().max() > 1e-6:
        raise ValueError("k_t must have unit norm")
    err = (s @ k_t[..., :, None]).squeeze(-1) - v_t
    return s - beta_t[..., None, None] * err[..., :, None] * k_t[..., None, :]


def step_householder(s, k_t, v_t, beta_t):
    """写法不同：真的构造 I − β k kᵀ 再右乘。"""
    if ((k_t.norm(dim=-1) - 1).abs() > 1e-6).any():
        raise ValueError("k_t: every key must have norm 1")
    if ((beta_t < 0) | (beta_t > 2)).any():
        raise ValueError("beta_t must be in [0, 2]")
    eye = torch.eye(k_t.shape[-1], dtype=s.dtype)
    b = beta_t[..., None, None]
    return s @ (eye - b * k_t[..., :, None] * k_t[..., None, :]) + b * v_t[..., :, None] * k_t[..., None, :]


def _check_beta(beta):
    if (beta < 0).any() or (beta > 2).any():
        raise ValueError(f"beta must lie in [0, 2], got {beta}")


def _rec(q, k, v, beta, read_before=False, erase=True, check=True):
    if check:
        _check_beta(beta)
    s = torch.zeros(q.shape[:-2] + (v.shape[-1], q.shape[-1]), dtype=q.dtype)
    outs = []
    for t in range(q.shape[-2]):
        if read_before:
            outs.append((s @ q[..., t, :, None]).squeeze(-1))
        kt, vt, bt = k[..., t, :], v[..., t, :], beta[..., t, None, None]
        pred = (s @ kt[..., :, None]).squeeze(-1) if erase else torch.zeros_like(vt)
        s = s - bt * (pred - vt)[..., :, None] * kt[..., None, :]
        if not read_before:
            outs.append((s @ q[..., t, :, None]).squeeze(-1))
    return torch.stack(outs, -2)


def rec_read_before_write(q, k, v, beta):
    return _rec(q, k, v, beta, read_before=True)


def rec_no_erase(q, k, v, beta):
    return _rec(q, k, v, beta, erase=False)


def rec_beta_outside(q, k, v, beta):
    _check_beta(beta)
    s = torch.zeros(q.shape[:-2] + (v.shape[-1], q.shape[-1]), dtype=q.dtype)
    outs = []
    for t in range(q.shape[-2]):
        kt, vt, bt = k[..., t, :], v[..., t, :], beta[..., t, None, None]
        pred = (s @ kt[..., :, None]).squeeze(-1)
        s = s - (pred[..., :, None] * kt[..., None, :]) + bt * vt[..., :, None] * kt[..., None, :]  # 擦除没乘 β
        outs.append((s @ q[..., t, :, None]).squeeze(-1))
    return torch.stack(outs, -2)


def rec_no_check(q, k, v, beta):
    return _rec(q, k, v, beta, check=False)


def rec_chunked(q, k, v, beta):
    """写法不同：用分块的 UT 变换形式，一块就是整条序列。"""
    if ((beta < 0) | (beta > 2)).any():
        raise ValueError(f"beta must be in [0, 2], got beta {tuple(beta.shape)}")
    n = q.shape[-2]
    strict = torch.ones(n, n, dtype=torch.bool).tril(-1)
    a = (k @ k.transpose(-2, -1)).masked_fill(~strict, 0.0)
    lhs = torch.eye(n, dtype=q.dtype) + beta[..., :, None] * a
    u = torch.linalg.solve_triangular(lhs, beta[..., :, None] * v, upper=False, unitriangular=True)
    scores = (q @ k.transpose(-2, -1)).masked_fill(~torch.ones(n, n, dtype=torch.bool).tril(), 0.0)
    return scores @ u


WRONG = {
    "ch13.linear_attention_chunked": [("matches", chunked_block_not_causal), ("matches", chunked_update_before_read),
                                      ("matches", chunked_drops_tail), ("bad-chunk", chunked_no_check)],
    "ch13.delta_rule_step": [("matches", step_linear_attention), ("empty-state", step_wrong_sign),
                             ("empty-state", step_outer_transposed), ("bad-k_t", step_checks_only_beta),
                             ("bad-beta_t", step_checks_only_k)],
    "ch13.delta_rule_recurrent": [("matches", rec_read_before_write), ("matches", rec_no_erase),
                                  ("matches", rec_beta_outside), ("bad-beta", rec_no_check)],
}
RIGHT = {"ch13.linear_attention_chunked": [chunked_recurrent], "ch13.delta_rule_step": [step_householder],
         "ch13.delta_rule_recurrent": [rec_chunked]}


def _check_a(q, a):
    if a.shape != q.shape[:-1]:
        raise ValueError(f"a {tuple(a.shape)} must be {tuple(q.shape[:-1])}")


def _decay(q, k, v, a, decay_after=False, shift=0, check=True):
    if check:
        _check_a(q, a)
    s = torch.zeros(q.shape[:-2] + (v.shape[-1], q.shape[-1]), dtype=q.dtype)
    outs = []
    for t in range(q.shape[-2]):
        at = a[..., max(t - shift, 0), None, None] if not (shift and t == 0) else torch.ones_like(a[..., 0, None, None])
        outer = v[..., t, :, None] * k[..., t, None, :]
        s = at * (s + outer) if decay_after else at * s + outer
        outs.append((s @ q[..., t, :, None]).squeeze(-1))
    return torch.stack(outs, -2)


def decay_applied_after_write(q, k, v, a):
    return _decay(q, k, v, a, decay_after=True)


def decay_index_off_by_one(q, k, v, a):
    return _decay(q, k, v, a, shift=1)


def decay_log_cumsum(q, k, v, a):
    _check_a(q, a)
    c = torch.cumsum(torch.log(a), dim=-1)  # a = 0 时 log = −∞
    diff = c[..., :, None] - c[..., None, :]
    n = q.shape[-2]
    L = torch.exp(diff).masked_fill(~torch.ones(n, n, dtype=torch.bool).tril(), 0.0)
    return (L * (q @ k.transpose(-2, -1))) @ v


def decay_no_check(q, k, v, a):
    return _decay(q, k, v, a[..., : q.shape[-2]] if a.shape[-1] >= q.shape[-2] else a, check=False)


def decay_matrix_form(q, k, v, a):
    """写法不同：逐项连乘造出 L，再 O = (L ⊙ QKᵀ) V。"""
    if a.shape != q.shape[:-1]:
        raise ValueError(f"a must have shape {tuple(q.shape[:-1])}, got a {tuple(a.shape)}")
    n = q.shape[-2]
    L = torch.zeros(a.shape[:-1] + (n, n), dtype=q.dtype)
    for i in range(n):
        prod = torch.ones(a.shape[:-1], dtype=q.dtype)
        for j in range(i, -1, -1):
            L[..., i, j] = prod
            prod = prod * a[..., j]
    return (L * (q @ k.transpose(-2, -1))) @ v


WRONG["ch13.decay_linear_attention"] = [("matches", decay_applied_after_write), ("matches", decay_index_off_by_one),
                                        ("reset", decay_log_cumsum), ("bad-a", decay_no_check)]
RIGHT["ch13.decay_linear_attention"] = [decay_matrix_form]
