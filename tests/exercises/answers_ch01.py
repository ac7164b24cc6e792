"""第 01 章练习的答案：WRONG 是看似合理的错答（及它应当违反的性质），RIGHT 是写法与参考不同的正确答案。"""

import torch


def _check(x_t, h_prev, w_xh, w_hh):
    if x_t.shape[-1] != w_xh.shape[1]:
        raise ValueError(f"x_t {tuple(x_t.shape)} does not match w_xh {tuple(w_xh.shape)}")
    if tuple(h_prev.shape) != (x_t.shape[0], w_hh.shape[0]):
        raise ValueError(f"h_prev {tuple(h_prev.shape)} must be (batch, d_h)")


def step_no_tanh(x_t, h_prev, w_xh, w_hh, b):
    _check(x_t, h_prev, w_xh, w_hh)
    return h_prev @ w_hh.T + x_t @ w_xh.T + b


def step_w_hh_not_transposed(x_t, h_prev, w_xh, w_hh, b):
    _check(x_t, h_prev, w_xh, w_hh)
    return torch.tanh(h_prev @ w_hh + x_t @ w_xh.T + b)


def step_no_check(x_t, h_prev, w_xh, w_hh, b):
    return torch.tanh(h_prev @ w_hh.T + x_t @ w_xh.T + b)


def step_checks_only_x(x_t, h_prev, w_xh, w_hh, b):
    if x_t.shape[-1] != w_xh.shape[1]:
        raise ValueError(f"x_t {tuple(x_t.shape)} does not match w_xh {tuple(w_xh.shape)}")
    return torch.tanh(h_prev @ w_hh.T + x_t @ w_xh.T + b)


def step_einsum(x_t, h_prev, w_xh, w_hh, b):
    _check(x_t, h_prev, w_xh, w_hh)
    return torch.tanh(torch.einsum("bj,ij->bi", h_prev, w_hh) + torch.einsum("bj,ij->bi", x_t, w_xh) + b)


def _forward(x, w_xh, w_hh, b, h0, include_h0=False, use_h0=True):
    if x.shape[1] == 0:
        raise ValueError(f"x is empty: x {tuple(x.shape)}")
    h = x.new_zeros(x.shape[0], w_hh.shape[0]) if h0 is None or not use_h0 else h0
    hs = [h] if include_h0 else []
    for t in range(x.shape[1]):
        h = torch.tanh(h @ w_hh.T + x[:, t] @ w_xh.T + b)
        hs.append(h)
    return torch.stack(hs[: x.shape[1]], dim=1)


def forward_off_by_one(x, w_xh, w_hh, b, h0=None):
    return _forward(x, w_xh, w_hh, b, h0, include_h0=True)  # hs[:, t] 是 h_{t−1}


def forward_ignores_h0(x, w_xh, w_hh, b, h0=None):
    return _forward(x, w_xh, w_hh, b, h0, use_h0=False)


def forward_no_check(x, w_xh, w_hh, b, h0=None):
    h = x.new_zeros(x.shape[0], w_hh.shape[0]) if h0 is None else h0
    hs = []
    for t in range(x.shape[1]):
        h = torch.tanh(h @ w_hh.T + x[:, t] @ w_xh.T + b)
        hs.append(h)
    return torch.stack(hs, dim=1) if hs else x.new_zeros(x.shape[0], 0, w_hh.shape[0])


def forward_right(x, w_xh, w_hh, b, h0=None):
    if x.shape[1] == 0:
        raise ValueError(f"x must have at least one step: x {tuple(x.shape)}")
    pre_x = x @ w_xh.T + b  # 输入部分一次算完
    h = torch.zeros(x.shape[0], w_hh.shape[0], dtype=x.dtype) if h0 is None else h0
    out = torch.empty(x.shape[0], x.shape[1], w_hh.shape[0], dtype=x.dtype)
    for t in range(x.shape[1]):
        h = torch.tanh(pre_x[:, t] + h @ w_hh.T)
        out[:, t] = h
    return out


def _norms(hs, w_hh, max_k, norm="2", tanh_grad=True, shift=1, left=False):
    n = hs.shape[0]
    if not (isinstance(max_k, int) and 1 <= max_k <= n - 1):
        raise ValueError(f"max_k={max_k} must lie in [1, n - 1]")
    T = n - 1
    jac = torch.eye(hs.shape[1], dtype=hs.dtype)
    out = []
    for k in range(1, max_k + 1):
        h = hs[T - k + shift]
        factor = ((1 - h ** 2)[:, None] if tanh_grad else 1) * w_hh
        jac = factor @ jac if left else jac @ factor
        out.append(torch.linalg.matrix_norm(jac, ord=2 if norm == "2" else "fro"))
    return torch.stack(out)


def norms_frobenius(hs, w_hh, max_k):
    return _norms(hs, w_hh, max_k, norm="fro")


def norms_no_tanh_grad(hs, w_hh, max_k):
    return _norms(hs, w_hh, max_k, tanh_grad=False)


def norms_off_by_one(hs, w_hh, max_k):
    return _norms(hs, w_hh, max_k, shift=0)  # 用了 h_{T−k} 而不是 h_{T−k+1}


def norms_wrong_order(hs, w_hh, max_k):
    return _norms(hs, w_hh, max_k, left=True)


def norms_no_check(hs, w_hh, max_k):
    T = hs.shape[0] - 1
    jac = torch.eye(hs.shape[1], dtype=hs.dtype)
    out = []
    for k in range(1, max_k + 1):
        jac = jac @ ((1 - hs[T - k + 1] ** 2)[:, None] * w_hh)
        out.append(torch.linalg.matrix_norm(jac, ord=2))
    return torch.stack(out) if out else hs.new_zeros(0)


def norms_by_autograd(hs, w_hh, max_k):
    """写法不同：逐个因子建 diag 矩阵，谱范数用 SVD 的最大奇异值。"""
    n = hs.shape[0]
    if not isinstance(max_k, int) or not 1 <= max_k < n:
        raise ValueError(f"need 1 <= max_k <= n - 1, got max_k={max_k}")
    out, jac = [], torch.eye(hs.shape[1], dtype=hs.dtype)
    for k in range(1, max_k + 1):
        jac = jac @ torch.diag(1 - hs[n - k] ** 2) @ w_hh
        out.append(torch.linalg.svdvals(jac)[0])
    return torch.stack(out)


WRONG = {
    "ch01.rnn_step": [("matches", step_no_tanh), ("matches", step_w_hh_not_transposed), ("bad-x_t", step_no_check),
                      ("bad-h_prev", step_checks_only_x)],
    "ch01.rnn_forward": [("matches", forward_off_by_one), ("h0", forward_ignores_h0), ("bad-x", forward_no_check)],
    "ch01.gradient_norms": [("matches", norms_frobenius), ("matches", norms_no_tanh_grad), ("matches", norms_off_by_one),
                            ("matches", norms_wrong_order), ("bad-max_k", norms_no_check)],
}
RIGHT = {"ch01.rnn_step": [step_einsum], "ch01.rnn_forward": [forward_right], "ch01.gradient_norms": [norms_by_autograd]}


def _jac(hs, w_hh, k, t, start="eye", shift=0, left=False, check=True):
    if check and not (0 <= k <= t < hs.shape[0]):
        raise ValueError(f"need 0 <= k <= t < n, got k={k}, t={t}")
    jac = torch.eye(hs.shape[1], dtype=hs.dtype) if start == "eye" else w_hh.clone()
    for i in range(t, k, -1):
        factor = (1 - hs[i - shift] ** 2)[:, None] * w_hh
        jac = factor @ jac if left else jac @ factor
    return jac


def jac_starts_with_w(hs, w_hh, k, t):
    return _jac(hs, w_hh, k, t, start="w")


def jac_off_by_one(hs, w_hh, k, t):
    return _jac(hs, w_hh, k, t, shift=1)  # 用了 h_{i−1}


def jac_wrong_order(hs, w_hh, k, t):
    return _jac(hs, w_hh, k, t, left=True)


def jac_no_check(hs, w_hh, k, t):
    return _jac(hs, w_hh, k, t, check=False)


def jac_reduce(hs, w_hh, k, t):
    """写法不同：先列出全部因子，再用 torch.linalg.multi_dot 一次乘完。"""
    if not (isinstance(k, int) and isinstance(t, int) and 0 <= k <= t < hs.shape[0]):
        raise ValueError(f"k={k}, t={t} must satisfy 0 <= k <= t < n={hs.shape[0]}")
    factors = [torch.diag(1 - hs[i] ** 2) @ w_hh for i in range(t, k, -1)]
    if not factors:
        return torch.eye(hs.shape[1], dtype=hs.dtype)
    return factors[0] if len(factors) == 1 else torch.linalg.multi_dot(factors)


WRONG["ch01.bptt_jacobian"] = [("identity", jac_starts_with_w), ("matches", jac_off_by_one),
                               ("matches", jac_wrong_order), ("bad-k-t", jac_no_check)]
RIGHT["ch01.bptt_jacobian"] = [jac_reduce]
