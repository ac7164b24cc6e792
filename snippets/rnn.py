"""Elman RNN：单元、沿时间的循环、BPTT 的雅可比连乘和梯度范数。

h_t = tanh(W_hh h_{t−1} + W_xh x_t + b)，∂h_t/∂h_k = ∏ diag(1 − h_i²) W_hh。
页面先引入算法各节，最后引入检查：本文件的 checks 节（_check_hs）与 snippets/checks.py 的
imports、checks 节（_check_tensor）。测试：tests/ch01/test_ch01_rnn.py、tests/ch01/test_ch01_bad_input.py。

节之间的依赖（页面引用时要带上）：每节都要 imports；rnn-cell、rnn-layer 要 snippets/checks.py 的
imports 与 checks；rnn-layer 还要 rnn-cell；bptt-jacobian、gradient-norms 要本文件的 checks。
下面这行导入在所有小节之外，只在 `import snippets.rnn` 时生效（页面上不显示）。
"""

from snippets.checks import _check_tensor  # noqa: F401  (小节里按名字使用)

# --8<-- [start:imports]
import math

import torch
from torch import nn
# --8<-- [end:imports]


# --8<-- [start:rnn-cell]
class RNNCell(nn.Module):
    """Elman 单元：h_t = tanh(W_hh h_{t−1} + W_xh x_t + b)。

    公式用列向量；代码里一行是一个样本，所以写成 h_prev @ W_hhᵀ + x_t @ W_xhᵀ + b。
    forward(x_t (batch, d_in), h_prev (batch, d_h)) → h_t (batch, d_h)。
    check_inputs = False 跳过输入检查（复杂度探针计时用：每一步的检查开销会扭曲墙钟时间）。
    """

    check_inputs = True

    def __init__(self, input_size, hidden_size):
        super().__init__()
        if not all(isinstance(size, int) and size >= 1 for size in (input_size, hidden_size)):
            raise ValueError(f"input_size and hidden_size must be positive ints, "
                             f"got input_size={input_size!r}, hidden_size={hidden_size!r}")
        self.input_size, self.hidden_size = input_size, hidden_size
        bound = 1 / math.sqrt(hidden_size)  # 与 nn.RNN 相同：U(−1/√d_h, 1/√d_h)
        self.w_xh = nn.Parameter(torch.empty(hidden_size, input_size).uniform_(-bound, bound))  # (d_h, d_in)
        self.w_hh = nn.Parameter(torch.empty(hidden_size, hidden_size).uniform_(-bound, bound))  # (d_h, d_h)
        self.b = nn.Parameter(torch.empty(hidden_size).uniform_(-bound, bound))  # (d_h,)

    def forward(self, x_t, h_prev):
        if self.check_inputs:
            dtype = self.w_hh.dtype
            _check_tensor("x_t", x_t, "(batch, input_size)", (None, self.input_size), dtype)
            _check_tensor("h_prev", h_prev, "(batch, hidden_size)", (x_t.shape[0], self.hidden_size), dtype)
        a = h_prev @ self.w_hh.T + x_t @ self.w_xh.T + self.b  # (batch, d_h)：预激活 a_t
        return torch.tanh(a)  # (batch, d_h)：h_t
# --8<-- [end:rnn-cell]


# --8<-- [start:rnn-layer]
class RNNLayer(nn.Module):
    """把 RNNCell 沿时间展开：x (batch, n, d_in) → 全部隐藏状态 hs (batch, n, d_h)。

    h0 (batch, d_h) 可选，默认全 0。hs[:, t] 就是 h_t（t 从 0 起算）。
    输入检查跟随 self.cell.check_inputs。
    """

    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.cell = RNNCell(input_size, hidden_size)

    def forward(self, x, h0=None):
        cell = self.cell
        if cell.check_inputs:
            _check_tensor("x", x, "(batch, n, input_size)", (None, None, cell.input_size), cell.w_hh.dtype)
            if x.shape[1] == 0:
                raise ValueError(f"x is an empty sequence (n = 0): x {tuple(x.shape)}")
        batch, n, _ = x.shape
        if h0 is None:
            h0 = x.new_zeros(batch, cell.hidden_size)
        if cell.check_inputs:
            _check_tensor("h0", h0, "(batch, hidden_size)", (batch, cell.hidden_size), cell.w_hh.dtype)
        h, hs = h0, []
        for t in range(n):  # 只能一步一步来：算 h_t 必须先有 h_{t−1}
            h = cell(x[:, t], h)  # (batch, d_h)
            hs.append(h)
        return torch.stack(hs, dim=1)  # (batch, n, d_h)
# --8<-- [end:rnn-layer]


# --8<-- [start:bptt-jacobian]
def bptt_jacobian(hs, w_hh, k, t):
    """BPTT 的连乘：∂h_t/∂h_k = ∏_{i=k+1}^{t} diag(1 − h_i²) W_hh，因子从左到右是 i = t, t−1, …, k+1。

    hs (n, d_h)：一条序列的隐藏状态，hs[i] = h_i；w_hh (d_h, d_h)；0 ≤ k ≤ t < n。
    tanh'(a_i) = 1 − tanh²(a_i) = 1 − h_i²，所以只要前向存下的 h，不必再算 a_i。
    返回 (d_h, d_h)；k = t 时是单位阵。
    """
    n, d_h = _check_hs(hs, w_hh)
    if not (isinstance(k, int) and isinstance(t, int) and 0 <= k <= t < n):
        raise ValueError(f"need 0 <= k <= t < n, got k={k!r}, t={t!r}, n={n}: hs {tuple(hs.shape)}")
    jac = torch.eye(d_h, dtype=hs.dtype, device=hs.device)  # (d_h, d_h)
    for i in range(t, k, -1):  # i = t, t−1, …, k+1
        # diag(1 − h_i²) W_hh：把 W_hh 的第 r 行乘上 1 − h_i[r]²
        jac = jac @ ((1 - hs[i] ** 2)[:, None] * w_hh)  # (d_h, d_h)
    return jac
# --8<-- [end:bptt-jacobian]


# --8<-- [start:gradient-norms]
def gradient_norms(hs, w_hh, max_k):
    """‖∂h_T/∂h_{T−k}‖₂（谱范数，最大奇异值），k = 1 … max_k；T = n − 1 是最后一步。

    与 bptt_jacobian 是同一个连乘，只是从 T 往回每次多乘一个因子：
    J_k = J_{k−1} · diag(1 − h_{T−k+1}²) W_hh。因为 tanh' ≤ 1，‖J_k‖₂ ≤ ‖W_hh‖₂^k。
    hs (n, d_h)，w_hh (d_h, d_h)，1 ≤ max_k ≤ n − 1。返回 (max_k,)。
    """
    n, d_h = _check_hs(hs, w_hh)
    if not (isinstance(max_k, int) and 1 <= max_k <= n - 1):
        raise ValueError(f"need 1 <= max_k <= n - 1 = {n - 1}, got max_k={max_k!r}: hs {tuple(hs.shape)}")
    T = n - 1
    jac = torch.eye(d_h, dtype=hs.dtype, device=hs.device)  # J_0 = I
    norms = []
    for k in range(1, max_k + 1):
        jac = jac @ ((1 - hs[T - k + 1] ** 2)[:, None] * w_hh)  # J_k = ∂h_T/∂h_{T−k}，(d_h, d_h)
        norms.append(torch.linalg.matrix_norm(jac, ord=2))
    return torch.stack(norms)  # (max_k,)
# --8<-- [end:gradient-norms]


# --8<-- [start:checks]
def _check_hs(hs, w_hh):
    """hs (n, d_h) 与 w_hh (d_h, d_h) 必须是同 dtype 的浮点张量；返回 (n, d_h)。"""
    for name, t in (("hs", hs), ("w_hh", w_hh)):
        if not isinstance(t, torch.Tensor) or not t.is_floating_point():
            raise TypeError(f"{name} must be a floating-point tensor, got {getattr(t, 'dtype', type(t).__name__)}")
    if hs.dim() != 2 or hs.shape[0] == 0:
        raise ValueError(f"hs must have shape (n, d_h) with n >= 1, got hs {tuple(hs.shape)}")
    n, d_h = hs.shape
    if tuple(w_hh.shape) != (d_h, d_h) or w_hh.dtype != hs.dtype:
        raise ValueError(f"w_hh must have shape (d_h, d_h) = ({d_h}, {d_h}) and dtype {hs.dtype}, "
                         f"got w_hh {tuple(w_hh.shape)} {w_hh.dtype}: hs {tuple(hs.shape)}")
    return n, d_h
# --8<-- [end:checks]
