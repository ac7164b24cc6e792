"""LSTM：单元、沿时间的循环，以及细胞状态 c 的雅可比（直接路径与完整路径）。

页面先引入算法各节，最后引入 snippets/checks.py 的 imports、checks 节（_check_tensor）。
测试：tests/ch01/test_ch01_lstm.py、tests/ch01/test_ch01_bad_input.py。

节之间的依赖（页面引用时要带上）：每节都要 imports 和 snippets/checks.py 的 imports、checks；
lstm-layer 与 cell-jacobian 要 lstm-cell。下面这行导入在所有小节之外，只在 `import snippets.lstm`
时生效（页面上不显示）。
"""

from snippets.checks import _check_tensor  # noqa: F401  (小节里按名字使用)

# --8<-- [start:imports]
import math

import torch
from torch import nn
# --8<-- [end:imports]


# --8<-- [start:lstm-cell]
class LSTMCell(nn.Module):
    """带遗忘门的 LSTM 单元（遗忘门来自 Gers et al. 2000）：

        i = σ(W_i [h_{t−1}; x_t] + b_i)        输入门
        f = σ(W_f [h_{t−1}; x_t] + b_f)        遗忘门
        g = tanh(W_g [h_{t−1}; x_t] + b_g)     候选值 c̃_t
        o = σ(W_o [h_{t−1}; x_t] + b_o)        输出门
        c_t = f ⊙ c_{t−1} + i ⊙ g
        h_t = o ⊙ tanh(c_t)

    四个门的权重竖着拼在一起：w_ih (4·d_h, d_in)、w_hh (4·d_h, d_h)、b (4·d_h,)，
    顺序 i, f, g, o（与 nn.LSTM 相同）。forget_bias：给出时把 b_f 初始化成这个值
    （如 1.0，或 5.0 让 f ≈ 0.993）；None 时与其它参数一样取 U(−1/√d_h, 1/√d_h)。
    forward(x_t (batch, d_in), (h_prev, c_prev) 各 (batch, d_h)) → (h_t, c_t) 各 (batch, d_h)。
    check_inputs = False 跳过输入检查（复杂度探针计时用：每一步的检查开销会扭曲墙钟时间）。
    """

    check_inputs = True

    def __init__(self, input_size, hidden_size, forget_bias=None):
        super().__init__()
        if not all(isinstance(size, int) and size >= 1 for size in (input_size, hidden_size)):
            raise ValueError(f"input_size and hidden_size must be positive ints, "
                             f"got input_size={input_size!r}, hidden_size={hidden_size!r}")
        self.input_size, self.hidden_size = input_size, hidden_size
        d_h, bound = hidden_size, 1 / math.sqrt(hidden_size)
        self.w_ih = nn.Parameter(torch.empty(4 * d_h, input_size).uniform_(-bound, bound))  # (4·d_h, d_in)
        self.w_hh = nn.Parameter(torch.empty(4 * d_h, d_h).uniform_(-bound, bound))  # (4·d_h, d_h)
        self.b = nn.Parameter(torch.empty(4 * d_h).uniform_(-bound, bound))  # (4·d_h,)
        if forget_bias is not None:
            with torch.no_grad():
                self.b[d_h:2 * d_h] = forget_bias  # b_f：第二块

    def gates(self, x_t, h_prev):
        """四个门 i, f, g, o，各 (batch, d_h)。"""
        z = x_t @ self.w_ih.T + h_prev @ self.w_hh.T + self.b  # (batch, 4·d_h)：一次算完四个门
        z_i, z_f, z_g, z_o = z.chunk(4, dim=-1)  # 各 (batch, d_h)
        return torch.sigmoid(z_i), torch.sigmoid(z_f), torch.tanh(z_g), torch.sigmoid(z_o)

    def forward(self, x_t, state):
        if self.check_inputs:
            dtype = self.w_hh.dtype
            _check_tensor("x_t", x_t, "(batch, input_size)", (None, self.input_size), dtype)
            if not isinstance(state, (tuple, list)) or len(state) != 2:
                raise TypeError(f"state must be a pair (h_prev, c_prev), got {type(state).__name__}")
            batch, d_h = x_t.shape[0], self.hidden_size
            _check_tensor("h_prev", state[0], "(batch, hidden_size)", (batch, d_h), dtype)
            _check_tensor("c_prev", state[1], "(batch, hidden_size)", (batch, d_h), dtype)
        h_prev, c_prev = state
        i, f, g, o = self.gates(x_t, h_prev)
        c = f * c_prev + i * g  # (batch, d_h)：旧记忆按 f 保留，新内容按 i 写入
        h = o * torch.tanh(c)  # (batch, d_h)：按 o 读出
        return h, c
# --8<-- [end:lstm-cell]


# --8<-- [start:lstm-layer]
class LSTMLayer(nn.Module):
    """把 LSTMCell 沿时间展开：x (batch, n, d_in) → hs (batch, n, d_h) 和最后的 (h_n, c_n)。

    state = (h0, c0)，各 (batch, d_h)，可选，默认全 0。输入检查跟随 self.cell.check_inputs。
    """

    def __init__(self, input_size, hidden_size, forget_bias=None):
        super().__init__()
        self.cell = LSTMCell(input_size, hidden_size, forget_bias)

    def forward(self, x, state=None):
        cell = self.cell
        if cell.check_inputs:
            _check_tensor("x", x, "(batch, n, input_size)", (None, None, cell.input_size), cell.w_hh.dtype)
            if x.shape[1] == 0:
                raise ValueError(f"x is an empty sequence (n = 0): x {tuple(x.shape)}")
        batch, n, _ = x.shape
        if state is None:
            zeros = x.new_zeros(batch, cell.hidden_size)
            state = (zeros, zeros)
        h0, c0 = state
        if cell.check_inputs:
            for name, t in (("h0", h0), ("c0", c0)):
                _check_tensor(name, t, "(batch, hidden_size)", (batch, cell.hidden_size), cell.w_hh.dtype)
        h, c = h0, c0
        hs = []
        for t in range(n):  # 与 RNN 一样只能逐步计算
            h, c = cell(x[:, t], (h, c))  # 各 (batch, d_h)
            hs.append(h)
        return torch.stack(hs, dim=1), (h, c)  # (batch, n, d_h), ((batch, d_h), (batch, d_h))
# --8<-- [end:lstm-layer]


# --8<-- [start:cell-jacobian]
def cell_state_jacobians(cell, x, h0, c0, k):
    """∂c_n/∂c_{n−k}：直接路径（direct）与完整路径（full），各 (d_h, d_h)。

    x (n, d_in) 是一条序列，h0、c0 (d_h,)；时间从 1 数，c_t 是第 t 步之后的细胞状态，1 ≤ k ≤ n − 1。
    - direct：只沿 c_t = f_t ⊙ c_{t−1} 这条"传送带"求导（把 h 从图里切断），
      等于 ∏_{t=n−k+1}^{n} diag(f_t)：没有 W_hh，也没有 tanh' 这类压缩导数。
    - full：还算上 c_{t−1} → h_{t−1} = o_{t−1} ⊙ tanh(c_{t−1}) → 各个门 → c_t 的间接路径（自动微分）。
    """
    d_h, dtype = cell.hidden_size, cell.w_hh.dtype
    _check_tensor("x", x, "(n, input_size)", (None, cell.input_size), dtype)
    _check_tensor("h0", h0, "(hidden_size,)", (d_h,), dtype)
    _check_tensor("c0", c0, "(hidden_size,)", (d_h,), dtype)
    n = x.shape[0]
    if not (isinstance(k, int) and 1 <= k <= n - 1):
        raise ValueError(f"need 1 <= k <= n - 1 = {n - 1}, got k={k!r}: x {tuple(x.shape)}")
    # 先不求导地走 n − k 步，到达起点 c_{n−k}；记下这一步的输出门 o_{n−k}
    with torch.no_grad():
        h, c = h0[None], c0[None]  # (1, d_h)
        for t in range(n - k):
            h_prev = h
            h, c = cell(x[t:t + 1], (h, c))
        o_start = cell.gates(x[n - k - 1:n - k], h_prev)[3]  # (1, d_h)

    def c_last(c_start, direct):
        # h_{n−k} = o_{n−k} ⊙ tanh(c_{n−k})：h 也是 c 的函数
        h, c = o_start * torch.tanh(c_start), c_start  # (1, d_h)
        for t in range(n - k, n):
            h_in = h.detach() if direct else h  # direct：切断 c → h → 门 这条路
            h, c = cell(x[t:t + 1], (h_in, c))
        return c[0]  # (d_h,)

    direct = torch.autograd.functional.jacobian(lambda c_: c_last(c_[None], True), c[0])  # (d_h, d_h)
    full = torch.autograd.functional.jacobian(lambda c_: c_last(c_[None], False), c[0])  # (d_h, d_h)
    return direct, full
# --8<-- [end:cell-jacobian]
