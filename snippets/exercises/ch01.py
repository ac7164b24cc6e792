"""第 01 章的练习：RNN 的一步、沿时间展开、BPTT 的雅可比连乘与梯度范数。参考答案：snippets/rnn.py。"""

from __future__ import annotations

import torch

from snippets import rnn
from snippets.exercises.core import DEVICE, Case, Exercise, Property, matches_reference, raises, randn, register

PAGE = "01-why-attention/rnn.md"
GRAD = "瓶颈二长距离依赖的梯度衰减"
SOLUTION = ("01-why-attention/rnn.md", "瓶颈一顺序计算")
DTYPES = [torch.float64, torch.float32]


def _cell(w_xh, w_hh, b):
    """把读者给的权重装进读者代码的 RNNCell（参考答案只经过它算）。"""
    if not all(isinstance(t, torch.Tensor) for t in (w_xh, w_hh, b)):
        raise TypeError("w_xh, w_hh and b must be tensors")
    d_h, d_in = w_xh.shape
    cell = rnn.RNNCell(d_in, d_h).to(w_xh.dtype)
    if tuple(w_hh.shape) != (d_h, d_h) or tuple(b.shape) != (d_h,):
        raise ValueError(f"w_hh must be (d_h, d_h) and b (d_h,), got w_xh {tuple(w_xh.shape)}, "
                         f"w_hh {tuple(w_hh.shape)}, b {tuple(b.shape)}")
    with torch.no_grad():
        cell.w_xh.copy_(w_xh)
        cell.w_hh.copy_(w_hh)
        cell.b.copy_(b)
    return cell


def _ref_step(x_t, h_prev, w_xh, w_hh, b):
    with torch.no_grad():
        return _cell(w_xh, w_hh, b)(x_t, h_prev)


def _weights(rng, d_in, d_h, dtype):
    return (randn(rng, d_h, d_in, dtype=dtype, scale=0.5), randn(rng, d_h, d_h, dtype=dtype, scale=0.5),
            randn(rng, d_h, dtype=dtype, scale=0.5))


def _make_step(rng, batch, d_in, d_h, dtype):
    return Case((randn(rng, batch, d_in, dtype=dtype), randn(rng, batch, d_h, dtype=dtype) * 0.5)
                + _weights(rng, d_in, d_h, dtype))


def _make_bad_step(rng, which):
    w = _weights(rng, 3, 4, torch.float64)
    if which == "h_prev":
        return Case((randn(rng, 2, 3), randn(rng, 2, 5)) + w, note="h_prev 的宽度 5 ≠ d_h = 4")
    return Case((randn(rng, 2, 6), randn(rng, 2, 4)) + w, note="x_t 的宽度 6 ≠ d_in = 3")


STEP_DIMS = {"batch": [1, 2, 3], "d_in": [1, 2, 3, 5], "d_h": [1, 2, 3, 4, 6], "dtype": DTYPES}

register(Exercise(
    id="ch01.rnn_step", questions=("1.1",), name="rnn_step", title="RNN 的一步",
    signature="rnn_step(x_t, h_prev, w_xh, w_hh, b)",
    statement="实现 Elman RNN 的一步 h_t = tanh(W_hh h_(t−1) + W_xh x_t + b)。公式用列向量；"
              "张量里一行是一个样本，所以要写成 h_prev @ W_hhᵀ + x_t @ W_xhᵀ + b。",
    shapes="x_t (batch, d_in)，h_prev (batch, d_h)，w_xh (d_h, d_in)，w_hh (d_h, d_h)，b (d_h,) → h_t (batch, d_h)。",
    bad_input="x_t 的宽度不是 d_in、或 h_prev 的形状不是 (batch, d_h)：ValueError，报错信息写出出错的参数名和形状。",
    reference=_ref_step, solution=SOLUTION,
    stub='''def rnn_step(x_t, h_prev, w_xh, w_hh, b):
    """h_t = tanh(h_prev @ w_hhᵀ + x_t @ w_xhᵀ + b)。
    x_t (batch, d_in)，h_prev (batch, d_h)，w_xh (d_h, d_in)，w_hh (d_h, d_h)，b (d_h,) → (batch, d_h)。
    x_t 或 h_prev 形状不对：ValueError（报错信息写出参数名与形状）。"""
    raise NotImplementedError("在这里写你的实现")
''',
    properties=[
        Property("matches", "与 tanh(h_prev W_hhᵀ + x_t W_xhᵀ + b) 一致（随机形状、float32 与 float64）",
                 "W_hh 作用在列向量上：行向量写法要乘它的转置；tanh 与偏置 b 都不能少。", PAGE, "第一步单步雅可比矩阵",
                 _make_step, matches_reference(), dims=STEP_DIMS),
        Property("bad-x_t", "x_t 的宽度不是 d_in：ValueError，并写出参数名 x_t",
                 "比较 x_t.shape[-1] 与 w_xh.shape[1]。", PAGE, "模型与损失",
                 lambda rng: _make_bad_step(rng, "x_t"), raises("x_t")),
        Property("bad-h_prev", "h_prev 的形状不是 (batch, d_h)：ValueError，并写出参数名 h_prev",
                 "比较 h_prev.shape 与 (x_t.shape[0], w_hh.shape[0])。", PAGE, "模型与损失",
                 lambda rng: _make_bad_step(rng, "h_prev"), raises("h_prev")),
    ],
))


# --------------------------------------------------------------------------- rnn_forward
def _ref_forward(x, w_xh, w_hh, b, h0=None):
    d_h, d_in = w_xh.shape
    layer = rnn.RNNLayer(d_in, d_h).to(w_xh.dtype)
    with torch.no_grad():
        cell = _cell(w_xh, w_hh, b)
        layer.cell.load_state_dict(cell.state_dict())
        return layer(x, h0)


def _make_forward(rng, batch, n, d_in, d_h, dtype, with_h0=False):
    x = randn(rng, batch, n, d_in, dtype=dtype)
    w = _weights(rng, d_in, d_h, dtype)
    if with_h0:
        return Case((x,) + w, {"h0": randn(rng, batch, d_h, dtype=dtype)}, note="给了 h0")
    return Case((x,) + w)


def _make_bad_forward(rng):
    return Case((torch.zeros(2, 0, 3, dtype=torch.float64, device=DEVICE),) + _weights(rng, 3, 4, torch.float64),
                note="x 是空序列（n = 0）")


FWD_DIMS = {"batch": [1, 2], "n": [1, 2, 3, 5], "d_in": [1, 2, 3], "d_h": [1, 2, 4], "dtype": DTYPES}

register(Exercise(
    id="ch01.rnn_forward", name="rnn_forward", title="RNN 沿时间展开",
    signature="rnn_forward(x, w_xh, w_hh, b, h0=None)",
    statement="从 h0 出发（None 时为全 0），逐个时间步调用 RNN 的一步，返回全部隐藏状态：hs[:, t] 就是 h_t，t 从 0 起算"
              "（h0 本身不在 hs 里）。只能一步一步算：h_t 要用到 h_(t−1)。",
    shapes="x (batch, n, d_in)，w_xh (d_h, d_in)，w_hh (d_h, d_h)，b (d_h,)，h0 (batch, d_h) 或 None → hs (batch, n, d_h)。",
    bad_input="x 是空序列（n = 0）：ValueError，报错信息写出 x 和它的形状。",
    reference=_ref_forward, solution=SOLUTION,
    stub='''def rnn_forward(x, w_xh, w_hh, b, h0=None):
    """x (batch, n, d_in) → hs (batch, n, d_h)，hs[:, t] = h_t；h0 (batch, d_h)，None 时全 0。
    n = 0：ValueError（报错信息写出 x 与形状）。"""
    raise NotImplementedError("在这里写你的实现")
''',
    properties=[
        Property("matches", "h0 = None：hs[:, t] 等于从全 0 出发的第 t 步隐藏状态",
                 "hs[:, 0] 是 h_0（已经读了 x[:, 0]），不是初始状态；一共 n 个，不多不少。", PAGE, "模型与损失",
                 _make_forward, matches_reference(), dims=FWD_DIMS),
        Property("h0", "给了 h0：从 h0 出发",
                 "h0 是「第 −1 步」的隐藏状态：第一步用的 h_prev 就是它，不能忽略。", PAGE, "模型与损失",
                 lambda rng, **d: _make_forward(rng, with_h0=True, **d), matches_reference(), dims=FWD_DIMS),
        Property("bad-x", "空序列：ValueError，并写出参数名 x",
                 "x.shape[1] == 0 时没有任何一步可算：报错，而不是返回空张量。", PAGE, "模型与损失",
                 _make_bad_forward, raises("x")),
    ],
))


# --------------------------------------------------------------------------- bptt_jacobian
def _ref_jacobian(hs, w_hh, k, t):
    return rnn.bptt_jacobian(hs, w_hh, k, t)


def _make_jacobian(rng, n, d_h, gap, dtype):
    hs = torch.tanh(randn(rng, n, d_h, dtype=dtype, scale=1.5))
    w_hh = randn(rng, d_h, d_h, dtype=dtype, scale=1 / d_h ** 0.5)
    t = n - 1
    return Case((hs, w_hh, max(0, t - gap), t))


def _make_bad_jacobian(rng, which):
    hs, w_hh = torch.tanh(randn(rng, 4, 2)), randn(rng, 2, 2)
    k, t = [(3, 1), (0, 4)][which]
    return Case((hs, w_hh, k, t), note=["k = 3 > t = 1", "t = 4 ≥ n = 4"][which])


register(Exercise(
    id="ch01.bptt_jacobian", name="bptt_jacobian", questions=("1.1",), title="BPTT 的雅可比连乘",
    signature="bptt_jacobian(hs, w_hh, k, t)",
    statement="返回 ∂h_t/∂h_k = ∏（i = k+1 … t） diag(1 − h_i²) W_hh：因子从左到右是 i = t, t−1, …, k+1。"
              "k = t 时是单位阵。tanh'(a_i) = 1 − h_i²，只用前向存下的 hs。",
    shapes="hs (n, d_h)，w_hh (d_h, d_h)，0 ≤ k ≤ t < n → (d_h, d_h)。",
    bad_input="k、t 不满足 0 ≤ k ≤ t < n：ValueError，报错信息写出 k 和 t。",
    reference=_ref_jacobian, solution=(PAGE, "第二步跨多步是矩阵连乘"),
    stub='''def bptt_jacobian(hs, w_hh, k, t):
    """∂h_t/∂h_k = ∏（i = k+1 … t） diag(1 − h_i²) W_hh，i = t 的因子在最左边；k = t 时是单位阵。
    hs (n, d_h)，w_hh (d_h, d_h) → (d_h, d_h)。不满足 0 ≤ k ≤ t < n：ValueError（写出 k、t）。"""
    raise NotImplementedError("在这里写你的实现")
''',
    properties=[
        Property("identity", "k = t：单位阵",
                 "一个因子也没有的连乘是单位阵（torch.eye），不是 W_hh。", PAGE, "第二步跨多步是矩阵连乘",
                 lambda rng, n, d_h, dtype: _make_jacobian(rng, n, d_h, 0, dtype), matches_reference(),
                 dims={"n": [1, 2, 3], "d_h": [1, 2, 3], "dtype": DTYPES}, tries=6),
        Property("matches", "k < t：与连乘 ∏ diag(1 − h_i²) W_hh 一致，i = t 的因子在最左边",
                 "因子用的是 h_i（i = k+1 … t），不是 h_(i−1)；每次把新因子乘在右边：J ← J · diag(1 − h_i²) W_hh，i 从 t 往下走。",
                 PAGE, "第二步跨多步是矩阵连乘", _make_jacobian, matches_reference(),
                 dims={"n": [2, 3, 5], "d_h": [1, 2, 3, 4], "gap": [1, 2, 4], "dtype": DTYPES}),
        Property("bad-k-t", "k > t 或 t ≥ n：ValueError，并写出参数名 k",
                 "先检查 0 ≤ k ≤ t < n，报错信息写出 k、t 与 n。", PAGE, "第二步跨多步是矩阵连乘",
                 _make_bad_jacobian, raises("k"), dims={"which": [0, 1]}),
    ],
))


# --------------------------------------------------------------------------- gradient_norms
def _ref_norms(hs, w_hh, max_k):
    return rnn.gradient_norms(hs, w_hh, max_k)


def _make_norms(rng, n, d_h, max_k, scale, dtype):
    hs = torch.tanh(randn(rng, n, d_h, dtype=dtype, scale=1.5))
    w_hh = randn(rng, d_h, d_h, dtype=dtype, scale=scale / d_h ** 0.5)
    return Case((hs, w_hh, min(max_k, n - 1)))


def _make_bad_norms(rng, which):
    hs = torch.tanh(randn(rng, 4, 3))
    w_hh = randn(rng, 3, 3)
    return Case((hs, w_hh, [0, 4][which]), note=["max_k = 0", "max_k = n = 4，超过 n − 1"][which])


register(Exercise(
    id="ch01.gradient_norms", questions=("1.1",), name="gradient_norms", title="BPTT 的梯度范数",
    signature="gradient_norms(hs, w_hh, max_k)",
    statement="给定一条序列的隐藏状态 hs（hs[i] = h_i）与 W_hh，T = n − 1 是最后一步。对 k = 1 … max_k 返回谱范数"
              " ‖∂h_T/∂h_(T−k)‖₂，其中 ∂h_T/∂h_(T−k) = ∏（i = T−k+1 … T） diag(1 − h_i²) W_hh（i = T 的因子在最左边）。"
              "tanh'(a_i) = 1 − h_i²：只用前向存下的 h。",
    shapes="hs (n, d_h)，w_hh (d_h, d_h)，1 ≤ max_k ≤ n − 1 → (max_k,)。",
    bad_input="max_k 不在 [1, n − 1]：ValueError，报错信息写出 max_k。",
    reference=_ref_norms, solution=(PAGE, "第五步数值例子上界不是实际值"),
    stub='''def gradient_norms(hs, w_hh, max_k):
    """‖∂h_T/∂h_(T−k)‖₂（谱范数），k = 1 … max_k，T = n − 1。
    hs (n, d_h)，w_hh (d_h, d_h) → (max_k,)。max_k 不在 [1, n − 1]：ValueError（写出 max_k）。"""
    raise NotImplementedError("在这里写你的实现")
''',
    properties=[
        Property("matches", "与雅可比连乘的谱范数一致（随机 hs、W_hh，不同的 ‖W_hh‖）",
                 "每个因子是 diag(1 − h_i²) W_hh（把 W_hh 的第 r 行乘上 1 − h_i[r]²）；第 k 个范数的连乘从 i = T 到"
                 " i = T − k + 1，新因子乘在右边；范数是谱范数（matrix_norm(ord=2)），不是 Frobenius 范数。",
                 PAGE, "第二步跨多步是矩阵连乘", _make_norms, matches_reference(),
                 dims={"n": [2, 3, 4, 6], "d_h": [1, 2, 3, 5], "max_k": [1, 2, 3, 5], "scale": [1.0, 0.5, 2.0],
                       "dtype": DTYPES}),
        Property("bad-max_k", "max_k 不在 [1, n − 1]：ValueError，并写出参数名 max_k",
                 "T = n − 1，最远只能回到 h_0，所以 max_k ≤ n − 1。", PAGE, "第二步跨多步是矩阵连乘",
                 _make_bad_norms, raises("max_k"), dims={"which": [0, 1]}),
    ],
))
