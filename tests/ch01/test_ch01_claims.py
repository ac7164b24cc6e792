"""Claims of chapter 01 (docs/chapters/01-why-attention/): one test per checkable sentence.

The short ids C01–C22 are the chapter's numbered claims (see CONVENTIONS.md); C08–C13 are
proved by the probes' tests in tests/probes/, on the same classes this page shows. Everything here runs on a CPU in a few seconds, in float64
where a Jacobian is compared, with fixed seeds. Nothing asserts wall-clock time.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from snippets.attention import (
    MultiHeadAttention,
    causal_mask,
    online_softmax_attention,
    restricted_attention,
    scaled_dot_product_attention,
)
from snippets.decoding import decode_step
from snippets.lstm import LSTMCell, cell_state_jacobians
from snippets.rnn import RNNCell, RNNLayer, bptt_jacobian, gradient_norms
from snippets.probes.fit import semilog10_fit
from snippets.probes.gradients import orthogonal
from snippets.probes.memory import attention_matrix_bytes
from snippets.transformer import (
    DecoderCache,
    Transformer,
    pe_offset_matrix,
    sinusoidal_positional_encoding,
)

from tests.support.pages import CH01, CH01_QUESTIONS, assert_states
from tests.support.reference import gen

F64 = torch.float64
GiB = 2**30
MiB = 2**20


def flops(fn) -> int:
    """Total FLOPs counted by torch.utils.flop_counter for one call of fn()."""
    with FlopCounterMode(display=False) as counter:
        fn()
    return counter.get_total_flops()


def rnn_trajectory(w_hh: torch.Tensor, n: int, input_scale: float, seed: int) -> torch.Tensor:
    """Hidden states hs (n, d) of a tanh RNN (snippets.rnn.RNNLayer) whose W_hh is replaced by w_hh."""
    d = w_hh.shape[0]
    torch.manual_seed(seed)
    layer = RNNLayer(d, d).double()
    with torch.no_grad():
        layer.cell.w_hh.copy_(w_hh)
    x = input_scale * torch.randn(1, n, d, generator=gen(seed + 1), dtype=F64)
    with torch.no_grad():
        return layer(x)[0]  # (n, d)


def single_head(d: int, d_k: int, seed: int, scale: float = 1.0):
    """Column-convention weights W_Q, W_K (d_k, d) and W_V (d_k, d), float64."""
    g = gen(seed)
    w = [scale * torch.randn(d_k, d, generator=g, dtype=F64) / math.sqrt(d) for _ in range(3)]
    return w[0], w[1], w[2]


def attend(x: torch.Tensor, w_q, w_k, w_v, mask=None) -> torch.Tensor:
    """One attention head on x (n, d): rows are positions, so Q = X W_Qᵀ. Returns y (n, d_k)."""
    out, _ = scaled_dot_product_attention(x @ w_q.T, x @ w_k.T, x @ w_v.T, mask)
    return out


# ---------------------------------------------------------------------------
# Prerequisites
# ---------------------------------------------------------------------------


@pytest.mark.claim("ch01-gamma", paper="§1 (RNN background)",
                   title="tanh 与 sigmoid 导数的上确界 γ",
                   text="tanh 导数的上确界 γ = 1，logistic sigmoid 导数的上确界为 1/4，都在 0 处取到")
def test_gamma_sup_of_activation_derivatives():
    # tanh: the BPTT factor diag(1 − h²) of the page's bptt_jacobian is the identity exactly where
    # the hidden state is 0, so γ = 1 is attained; anywhere else every factor is below 1.
    d = 6
    w = torch.randn(d, d, generator=gen(0), dtype=F64)
    zero = torch.zeros(2, d, dtype=F64)
    assert torch.equal(bptt_jacobian(zero, w, 0, 1), w)
    hs = torch.tanh(torch.randn(2, d, generator=gen(1), dtype=F64))
    factor = bptt_jacobian(hs, torch.eye(d, dtype=F64), 0, 1).diagonal()  # 1 − h_1²
    assert bool((factor < 1).all() and (factor > 0).all())
    # sigmoid: the LSTM gates' derivative σ(a)(1 − σ(a)), by autograd, peaks at a = 0 with 1/4
    a = torch.linspace(-20, 20, 400_001, dtype=F64, requires_grad=True)  # contains 0
    (d_sigmoid,) = torch.autograd.grad(torch.sigmoid(a).sum(), a)
    assert d_sigmoid.max().item() == pytest.approx(0.25, abs=1e-15)
    assert abs(a[d_sigmoid.argmax()].item()) < 1e-12


@pytest.mark.claim("ch01-chain-rule-paths", paper="§4 (path length)",
                   title="多元链式法则：对路径求和",
                   text="多元链式法则：两条路径 x→u→y 与 x→v→y 的雅可比之和 CA + D·diag(1−v²)·B 等于自动求导的结果")
def test_chain_rule_is_a_sum_over_paths():
    g = gen(0)
    A, B = torch.randn(4, 3, generator=g, dtype=F64), torch.randn(5, 3, generator=g, dtype=F64)
    C, D = torch.randn(2, 4, generator=g, dtype=F64), torch.randn(2, 5, generator=g, dtype=F64)
    x = torch.randn(3, generator=g, dtype=F64)

    def y(x):
        return C @ (A @ x) + D @ torch.tanh(B @ x)

    v = torch.tanh(B @ x)
    closed = C @ A + D @ torch.diag(1 - v * v) @ B
    auto = torch.autograd.functional.jacobian(y, x)
    assert (auto - closed).abs().max().item() < 1e-14
    # a single path alone is not the derivative
    assert (auto - C @ A).abs().max().item() > 1e-2


# ---------------------------------------------------------------------------
# RNN: BPTT
# ---------------------------------------------------------------------------


@pytest.mark.claim("ch01-c01", paper="§1; Pascanu et al. 2013",
                   title="上界 0.9^k 在 10、50、100 步的数值",
                   text="γσ_max = 0.9 时，10/50/100 步的上界 0.9^k 分别为 0.3486784401、5.15×10⁻³、2.66×10⁻⁵")
def test_c01_upper_bounds_0_9_power_k():
    # the bound is attained by the linearised RNN (h = 0) with W = 0.9·Q, Q orthogonal:
    # the page's gradient_norms gives ‖∂h_T/∂h_{T−k}‖₂ = 0.9^k exactly
    w = 0.9 * orthogonal(8, gen(0))
    norms = gradient_norms(torch.zeros(101, 8, dtype=F64), w, 100)
    for k, value in ((10, 0.3486784401), (50, 5.153775207320113e-3), (100, 2.656139888758747e-5)):
        assert norms[k - 1].item() == pytest.approx(value, rel=1e-12)
    # and the page and its questions print these values, rounded
    assert_states(CH01, f"{norms[9].item():.10f}")
    assert_states(CH01_QUESTIONS, f"{norms[9].item():.3f}", f"{norms[49].item() * 1e3:.2f}\\times10^{{-3}}",
                  f"{norms[99].item() * 1e5:.2f}\\times10^{{-5}}")


@pytest.mark.claim("ch01-c02", paper="§1; §4 (path length)",
                   title="BPTT 连乘与自动求导的雅可比一致",
                   text="BPTT 连乘 ∏ diag(1−h_i²) W_hh 与自动求导的 ∂h_T/∂h_{T−20} 一致到 1e-12（d=16, T=30, float64）")
def test_c02_bptt_product_equals_autograd():
    torch.manual_seed(0)
    d, n, k, t = 16, 31, 10, 30  # T = 30, T − k = 20 steps back
    cell = RNNCell(d, d).double()
    x = torch.randn(1, n, d, generator=gen(1), dtype=F64)
    h, hs = torch.zeros(1, d, dtype=F64), []
    with torch.no_grad():
        for i in range(n):
            h = cell(x[:, i], h)
            hs.append(h[0])
    hs = torch.stack(hs)  # (n, d)

    def h_t_from_h_k(h_k):
        h = h_k[None]
        for i in range(k + 1, t + 1):
            h = cell(x[:, i], h)
        return h[0]

    auto = torch.autograd.functional.jacobian(h_t_from_h_k, hs[k])
    product = bptt_jacobian(hs, cell.w_hh.detach(), k, t)
    assert torch.equal(bptt_jacobian(hs, cell.w_hh.detach(), t, t), torch.eye(d, dtype=F64))  # no step: I
    assert t - k == 20
    assert (auto - product).abs().max().item() < 1e-12
    assert product.abs().max().item() > 1e-8  # not trivially zero


@pytest.mark.claim("ch01-bptt-sum", paper="§1; Pascanu et al. 2013 Eq. (5)",
                   title="BPTT 的双重求和与自动求导一致",
                   text="∂L/∂W_hh = Σ_k δ_k h_{k−1}ᵀ，δ_k = diag(1−h_k²) Σ_{t≥k} (∂h_t/∂h_k)ᵀ g_t，与自动求导一致")
def test_bptt_gradient_is_a_double_sum():
    torch.manual_seed(0)
    d, n = 6, 12
    layer = RNNLayer(d, d).double()
    x = torch.randn(1, n, d, generator=gen(1), dtype=F64)
    h0 = 0.5 * torch.randn(1, d, generator=gen(2), dtype=F64)
    readout = torch.randn(n, d, generator=gen(3), dtype=F64)  # L_t = readout[t] · h_t, so g_t = readout[t]
    hs = layer(x, h0)[0]  # (n, d)
    loss = (readout * hs).sum()
    (auto,) = torch.autograd.grad(loss, layer.cell.w_hh)

    hs = hs.detach()
    w_hh = layer.cell.w_hh.detach()
    explicit = torch.zeros(d, d, dtype=F64)
    for k in range(n):
        back = sum(bptt_jacobian(hs, w_hh, k, t).T @ readout[t] for t in range(k, n))
        delta = (1 - hs[k] ** 2) * back  # (d,)
        h_prev = hs[k - 1] if k > 0 else h0[0]
        explicit += torch.outer(delta, h_prev)
    assert (auto - explicit).abs().max().item() < 1e-12


@pytest.mark.claim("ch01-c03", paper="§1; Pascanu et al. 2013 §2.1",
                   title="tanh RNN：梯度消失的充分条件",
                   text="‖W_hh‖₂ = 0.9 的 tanh RNN：k = 1…100 的每个 ‖∂h_T/∂h_{T−k}‖₂ 都 ≤ 0.9^k，对数斜率 ≤ ln 0.9")
def test_c03_sufficient_condition_for_vanishing():
    d, n = 32, 101
    w = torch.randn(d, d, generator=gen(0), dtype=F64)
    w = 0.9 * w / torch.linalg.matrix_norm(w, ord=2)
    assert torch.linalg.matrix_norm(w, ord=2).item() == pytest.approx(0.9, rel=1e-12)
    hs = rnn_trajectory(w, n, input_scale=1.0, seed=0)
    norms = gradient_norms(hs, w, 100)  # (100,)
    k = torch.arange(1, 101, dtype=F64)
    assert bool((norms <= 0.9**k * (1 + 1e-9)).all())
    # least-squares slope of log₁₀ ‖J_k‖ against k (the probes' fit)
    assert semilog10_fit(k.tolist(), norms.tolist())["slope"] <= math.log10(0.9)


@pytest.mark.claim("ch01-c04", paper="§1; Pascanu et al. 2013 §2.1",
                   title="σ_max > 1/γ 只是梯度爆炸的必要条件",
                   text="σ_max > 1/γ 只是爆炸的必要条件：ρ=σ_max=1.5 的 tanh RNN，单位尺度输入时 ‖∂h_T/∂h_{T−100}‖₂ < 1，输入减半时 100 步内也不超过 10³（线性预测 1.5^100≈4.07×10¹⁷）；线性 RNN 的 ‖W^100‖ = 1.1^100")
def test_c04_necessary_not_sufficient_for_exploding():
    d = 32
    q = orthogonal(d, gen(0))
    # (a) linear RNN: ∂h_t/∂h_k = W^{t−k}, and for W = ρQ the norm is exactly ρ^{t−k}
    w = 1.1 * q
    assert torch.linalg.matrix_norm(torch.linalg.matrix_power(w, 100), ord=2).item() == pytest.approx(1.1**100, rel=1e-9)
    assert f"{1.1**100:.2e}" == "1.38e+04"
    # (b) tanh RNN with ρ = σ_max = 1.5: saturation decides, not σ_max
    w = 1.5 * q
    assert torch.linalg.matrix_norm(w, ord=2).item() == pytest.approx(1.5, rel=1e-12)
    assert torch.linalg.eigvals(w).abs().max().item() == pytest.approx(1.5, rel=1e-12)
    assert f"{1.5**100:.2e}" == "4.07e+17"
    hs = rnn_trajectory(w, 101, input_scale=1.0, seed=0)  # unit-scale inputs: the gradient even vanishes
    norms = gradient_norms(hs, w, 100)
    assert norms[-1].item() < 1
    hs = rnn_trajectory(w, 101, input_scale=0.5, seed=0)  # smaller inputs, less saturation: it grows, slowly
    norms = gradient_norms(hs, w, 100)
    assert norms[-1].item() > 1
    assert norms.max().item() <= 1e3
    # (c) with ρ = 3 it grows, but far slower than the linear prediction 3^100
    w = 3.0 * q
    hs = rnn_trajectory(w, 101, input_scale=0.5, seed=0)
    norms = gradient_norms(hs, w, 100)
    assert norms[-1].item() > 1
    assert norms[-1].item() <= 1e-20 * 3.0**100


@pytest.mark.claim("ch01-c05", paper="§1; Pascanu et al. 2013 §2.1",
                   title="非正规矩阵：谱半径小于 1 也会先放大",
                   text="非正规矩阵 [[0.9, 10], [0, 0.9]]：ρ = 0.9，但 ‖W^k‖₂ 先升到约 38.7（k = 9、10）再衰减，‖W^100‖₂ < 0.1")
def test_c05_spectral_radius_is_only_asymptotic():
    w = torch.tensor([[0.9, 10.0], [0.0, 0.9]], dtype=F64)
    assert torch.linalg.eigvals(w).abs().max().item() == pytest.approx(0.9, abs=1e-12)
    powers = [torch.linalg.matrix_power(w, k) for k in range(0, 101)]
    norms = torch.tensor([torch.linalg.matrix_norm(p, ord=2).item() for p in powers])
    assert norms.max().item() > 1
    assert norms[100].item() < 0.1
    # closed form of the top-right entry, 10·k·0.9^{k−1}, peaks at k = 9 and k = 10
    entry = [10 * k * 0.9 ** (k - 1) for k in range(1, 101)]
    assert entry[8] == pytest.approx(entry[9], rel=1e-12) == pytest.approx(38.742, abs=1e-3)
    assert max(entry) == pytest.approx(entry[8], rel=1e-12)
    for k in range(1, 101):
        assert powers[k][0, 1].item() == pytest.approx(entry[k - 1], rel=1e-12)
        assert norms[k].item() >= entry[k - 1] - 1e-12
    assert int(norms.argmax()) in (9, 10)
    assert 38.7 <= norms.max().item() < 39.5


# ---------------------------------------------------------------------------
# LSTM
# ---------------------------------------------------------------------------


def lstm_setup(forget_bias: float, seed: int = 0, zero_forget_weights: bool = False):
    """A float64 LSTMCell (d = 32), a 121-step input (20 warm-up + 100 + 1), h0 = c0 = 0."""
    torch.manual_seed(seed)
    d = 32
    cell = LSTMCell(d, d, forget_bias=forget_bias).double()
    if zero_forget_weights:
        with torch.no_grad():
            cell.w_ih[d:2 * d] = 0
            cell.w_hh[d:2 * d] = 0
    x = torch.randn(121, d, generator=gen(seed + 1), dtype=F64)
    zeros = torch.zeros(d, dtype=F64)
    return cell, x, zeros


def forget_gates(cell, x, h0, c0):
    """f_t for t = 1 … n along the trajectory, (n, d)."""
    h, c, fs = h0[None], c0[None], []
    with torch.no_grad():
        for t in range(x.shape[0]):
            fs.append(cell.gates(x[t:t + 1], h)[1][0])
            h, c = cell(x[t:t + 1], (h, c))
    return torch.stack(fs)


@pytest.mark.claim("ch01-c06", paper="§1; Gers et al. 2000",
                   title="LSTM 直接路径：遗忘门的连乘",
                   text="LSTM 直接路径 ∂c_T/∂c_{T−100} = diag(∏f)；b_f=5 时 σ(5)^100≈0.5109，b_f=0 时完整雅可比 < 1e-15")
def test_c06_lstm_direct_path_is_the_product_of_forget_gates():
    # derived constants the page prints
    assert torch.sigmoid(torch.tensor(5.0, dtype=F64)).item() == pytest.approx(0.99331, abs=1e-5)
    assert torch.sigmoid(torch.tensor(5.0, dtype=F64)).item() ** 100 == pytest.approx(0.5109, abs=1e-4)
    assert 0.5**100 == pytest.approx(7.9e-31, rel=2e-3)
    assert torch.sigmoid(torch.tensor(1.0, dtype=F64)).item() ** 100 == pytest.approx(2.5e-14, rel=2e-2)

    # direct path = diag(∏ f_t) exactly, with the trained-looking default weights
    cell, x, zeros = lstm_setup(forget_bias=5.0)
    direct, _ = cell_state_jacobians(cell, x, zeros, zeros, 100)
    f = forget_gates(cell, x, zeros, zeros)[-100:]  # f_t for the last 100 steps
    assert (direct - torch.diag(f.prod(dim=0))).abs().max().item() < 1e-12
    assert torch.linalg.matrix_norm(direct, ord=2).item() >= 0.5

    # W_f = 0, b_f = 5: every f_t = σ(5), so the direct path is σ(5)^100 · I
    cell, x, zeros = lstm_setup(forget_bias=5.0, zero_forget_weights=True)
    direct, _ = cell_state_jacobians(cell, x, zeros, zeros, 100)
    expected = torch.sigmoid(torch.tensor(5.0, dtype=F64)) ** 100
    assert (direct - expected * torch.eye(32, dtype=F64)).abs().max().item() < 1e-12
    assert expected.item() >= 0.5

    # b_f = 0: f ≈ 0.5 and the full Jacobian vanishes
    cell, x, zeros = lstm_setup(forget_bias=0.0)
    _, full = cell_state_jacobians(cell, x, zeros, zeros, 100)
    assert torch.linalg.matrix_norm(full, ord=2).item() < 1e-15


@pytest.mark.claim("ch01-c06b", paper="§1; Gers et al. 2000",
                   title="LSTM 完整雅可比可以大于直接路径",
                   text="默认初始化、b_f=5 的 LSTM：100 步完整雅可比 ‖∂c_T/∂c_{T−100}‖₂ > 1，且大于直接路径")
def test_c06b_lstm_indirect_terms_are_not_small():
    cell, x, zeros = lstm_setup(forget_bias=5.0)
    direct, full = cell_state_jacobians(cell, x, zeros, zeros, 100)
    n_direct = torch.linalg.matrix_norm(direct, ord=2).item()
    n_full = torch.linalg.matrix_norm(full, ord=2).item()
    assert n_full > 1
    assert n_full > 2 * n_direct


@pytest.mark.claim("ch01-lstm-step-jacobian", paper="§1; Gers et al. 2000",
                   title="LSTM 单步雅可比的直接项与间接项",
                   text="LSTM 单步 ∂c_t/∂c_{t−1} = diag(f_t) + [三项间接项]·diag(o_{t−1}⊙(1−tanh²c_{t−1}))，与自动求导一致")
def test_lstm_one_step_jacobian_closed_form():
    torch.manual_seed(0)
    d = 8
    cell = LSTMCell(d, d).double()
    g = gen(1)
    x_t = torch.randn(1, d, generator=g, dtype=F64)
    c_prev = torch.randn(d, generator=g, dtype=F64)
    o_prev = torch.sigmoid(torch.randn(d, generator=g, dtype=F64))  # o_{t−1}: does not depend on c_{t−1}

    def c_t(c):
        h = o_prev * torch.tanh(c)  # h_{t−1} = o_{t−1} ⊙ tanh(c_{t−1})
        return cell(x_t, (h[None], c[None]))[1][0]

    auto = torch.autograd.functional.jacobian(c_t, c_prev)
    with torch.no_grad():
        h_prev = (o_prev * torch.tanh(c_prev))[None]
        i, f, g_, _ = (u[0] for u in cell.gates(x_t, h_prev))
        w = cell.w_hh  # rows in the order i, f, g, o
        w_hi, w_hf, w_hc = w[0:d], w[d:2 * d], w[2 * d:3 * d]
        indirect = (torch.diag(c_prev * f * (1 - f)) @ w_hf
                    + torch.diag(g_ * i * (1 - i)) @ w_hi
                    + torch.diag(i * (1 - g_ * g_)) @ w_hc) @ torch.diag(o_prev * (1 - torch.tanh(c_prev) ** 2))
        closed = torch.diag(f) + indirect
    assert (auto - closed).abs().max().item() < 1e-14
    assert indirect.abs().max().item() > 1e-3  # the indirect part is really there


# ---------------------------------------------------------------------------
# Self-attention
# ---------------------------------------------------------------------------


@pytest.mark.claim("ch01-c07", paper="§4 (Maximum Path Length)",
                   title="自注意力一跳连接任意两个位置",
                   text="单层自注意力里 ∂y_n/∂x_1 非零：位置 1 一跳直达位置 n（n = 16、64）")
def test_c07_one_layer_connects_first_and_last_position():
    d = 16
    w_q, w_k, w_v = single_head(d, d, seed=0)
    for n in (16, 64):
        x = torch.randn(n, d, generator=gen(n), dtype=F64)

        def y_n(x1):
            return attend(torch.cat([x1[None], x[1:]]), w_q, w_k, w_v)[-1]

        jac = torch.autograd.functional.jacobian(y_n, x[0])
        assert torch.linalg.matrix_norm(jac, ord=2).item() > 1e-3


@pytest.mark.claim("ch01-c07b", paper="§3.2.1 Eq. (1); §4",
                   title="自注意力一跳梯度的闭式",
                   text="一跳梯度闭式 ∂y_i/∂x_j = α_ij[W_V + (v_j − y_i) q_iᵀ W_K / √d_k]（i ≠ j，取 i = n、j = 1，n = 32）与自动求导差 < 1e-12；i = j 时多出的查询项 Σ_l α_il (v_l − y_i) k_lᵀ W_Q / √d_k 也一致")
def test_c07b_one_hop_gradient_closed_form():
    n, d, d_k = 32, 16, 8
    w_q, w_k, w_v = single_head(d, d_k, seed=1, scale=2.0)
    x = torch.randn(n, d, generator=gen(2), dtype=F64)

    def y_n(x1):
        return attend(torch.cat([x1[None], x[1:]]), w_q, w_k, w_v)[-1]

    auto = torch.autograd.functional.jacobian(y_n, x[0])  # (d_k, d)
    q, k, v = x @ w_q.T, x @ w_k.T, x @ w_v.T  # (n, d_k)
    alpha = torch.softmax(q[-1] @ k.T / math.sqrt(d_k), dim=-1)  # (n,)
    y = alpha @ v
    closed = alpha[0] * (w_v + torch.outer(v[0] - y, q[-1]) @ w_k / math.sqrt(d_k))
    assert (auto - closed).abs().max().item() < 1e-12
    assert auto.abs().max().item() > 0
    # the factor α_{n1} bounds the whole Jacobian
    bound = alpha[0] * (torch.linalg.matrix_norm(w_v, ord=2)
                        + torch.linalg.vector_norm(v[0] - y) * torch.linalg.vector_norm(w_k.T @ q[-1]) / math.sqrt(d_k))
    assert torch.linalg.matrix_norm(auto, ord=2).item() <= bound.item() + 1e-12

    # i = j = 1 (the query's own input): q_1 depends on x_1 too, which adds Σ_l α_1l (v_l − y_1) k_lᵀ W_Q / √d_k
    auto_1 = torch.autograd.functional.jacobian(lambda x1: attend(torch.cat([x1[None], x[1:]]), w_q, w_k, w_v)[0], x[0])
    a1 = torch.softmax(q[0] @ k.T / math.sqrt(d_k), dim=-1)  # (n,)
    y1 = a1 @ v
    closed_1 = (a1[0] * (w_v + torch.outer(v[0] - y1, q[0]) @ w_k / math.sqrt(d_k))
                + ((a1[:, None] * (v - y1)).T @ k) @ w_q / math.sqrt(d_k))
    assert (auto_1 - closed_1).abs().max().item() < 1e-12


@pytest.mark.claim("ch01-c15", paper="§2 (reduced effective resolution)",
                   title="注意力均匀时每个位置只分到 1/n",
                   text="分数全相等（W_Q = W_K = 0）时 α_{n1} = 1/n，∂y_n/∂v_1 = I/n：n = 4、64、1024 时为 0.25、0.015625、0.0009765625")
def test_c15_uniform_attention_dilutes_by_one_over_n():
    d = 8
    expected = {4: 0.25, 64: 0.015625, 1024: 0.0009765625}
    for n, value in expected.items():
        assert 1 / n == value
        q = torch.zeros(n, d, dtype=F64)  # W_Q = 0
        k = torch.zeros(n, d, dtype=F64)  # W_K = 0
        v = torch.randn(n, d, generator=gen(n), dtype=F64)

        def y_n(v1):
            return scaled_dot_product_attention(q, k, torch.cat([v1[None], v[1:]]))[0][-1]

        jac = torch.autograd.functional.jacobian(y_n, v[0])
        assert (jac - torch.eye(d, dtype=F64) / n).abs().max().item() < 1e-15
        # and through x: ∂y_n/∂x_1 = W_V / n when Q = K = 0
        w_v = torch.randn(d, d, generator=gen(0), dtype=F64)
        x = torch.randn(n, d, generator=gen(1), dtype=F64)
        zero = torch.zeros(d, d, dtype=F64)
        jac_x = torch.autograd.functional.jacobian(
            lambda x1: attend(torch.cat([x1[None], x[1:]]), zero, zero, w_v)[-1], x[0])
        assert (jac_x - w_v / n).abs().max().item() < 1e-14


@pytest.mark.claim("ch01-perm-equivariance", paper="§3.5 (why positional encodings)",
                   title="无位置编码、无掩码时自注意力对排列等变",
                   text="没有位置编码、也没有掩码时（编码器的自注意力），多头自注意力对输入排列等变：MHA(PX) = P·MHA(X)")
def test_attention_without_positions_is_permutation_equivariant():
    torch.manual_seed(0)
    n, d = 10, 16
    mha = MultiHeadAttention(d, 4).double()
    x = torch.randn(1, n, d, generator=gen(1), dtype=F64)
    perm = torch.randperm(n, generator=gen(2))
    out, _ = mha(x, x, x)
    out_p, _ = mha(x[:, perm], x[:, perm], x[:, perm])
    assert (out_p - out[:, perm]).abs().max().item() < 1e-12
    assert not torch.equal(perm, torch.arange(n))


@pytest.mark.claim("ch01-c16", paper="§3.2.3 (masking)",
                   title="因果掩码：未来的输入不影响过去的输出",
                   text="因果掩码：扰动 x_7 后 y_1…y_6 的变化恰好为 0，y_7 及之后的输出改变（n = 12）")
def test_c16_causal_mask_blocks_the_future():
    n, d = 12, 16
    w_q, w_k, w_v = single_head(d, d, seed=3)
    x = torch.randn(n, d, generator=gen(4), dtype=F64)
    x2 = x.clone()
    x2[6] += 10 * torch.randn(d, generator=gen(5), dtype=F64)  # position 7 (1-based)
    mask = causal_mask(n)
    y, y2 = attend(x, w_q, w_k, w_v, mask), attend(x2, w_q, w_k, w_v, mask)
    assert (y2[:6] - y[:6]).abs().max().item() == 0.0
    assert (y2[6:] - y[6:]).abs().max().item() > 0


@pytest.mark.claim("ch01-c17", paper="§3.2.3; §6.1 (inference)",
                   title="自回归生成是顺序的：KV 缓存与并行前向一致",
                   text="自回归生成 10 个词元需要 10 次顺序调用；带 KV 缓存的逐步结果与一次并行因果前向的差 < 1e-12")
def test_c17_decoding_is_sequential_but_matches_the_parallel_forward():
    m, d = 10, 16
    w_q, w_k, w_v = single_head(d, d, seed=6)
    w_fb = torch.randn(d, d, generator=gen(7), dtype=F64) / math.sqrt(d)  # next input = tanh(y_t W)
    x = [torch.randn(d, generator=gen(8), dtype=F64)]
    keys, values, outputs, calls = [], [], [], 0
    for _ in range(m):  # each step needs the previous output: no way to run them at once
        calls += 1
        x_t = x[-1]
        keys.append(w_k @ x_t)
        values.append(w_v @ x_t)
        q_t = (w_q @ x_t)[None, :]  # (1, d)
        y_t, _ = scaled_dot_product_attention(q_t, torch.stack(keys), torch.stack(values))
        outputs.append(y_t[0])
        x.append(torch.tanh(y_t[0] @ w_fb))
    assert calls == m
    xs = torch.stack(x[:m])  # (m, d): the inputs the loop actually used
    parallel = attend(xs, w_q, w_k, w_v, causal_mask(m))  # one call, all positions at once
    assert (parallel - torch.stack(outputs)).abs().max().item() < 1e-12


@pytest.mark.claim("ch01-c18", paper="§3.2.1 Eq. (1)",
                   title="注意力权重随输入而变，每行和为 1",
                   text="参数 W_Q、W_K 固定，换一个输入注意力矩阵就不同（最大差 > 1e-3），每行的和始终为 1")
def test_c18_mixing_weights_are_dynamic_parameters_are_not():
    n, d = 8, 16
    w_q, w_k, w_v = single_head(d, d, seed=9)
    weights = []
    for seed in (10, 11):
        x = torch.randn(n, d, generator=gen(seed), dtype=F64)
        _, a = scaled_dot_product_attention(x @ w_q.T, x @ w_k.T, x @ w_v.T)
        assert (a.sum(dim=-1) - 1).abs().max().item() < 1e-12
        weights.append(a)
    assert (weights[0] - weights[1]).abs().max().item() > 1e-3


@pytest.mark.claim("ch01-c19", paper="§3.2.1, footnote 4",
                   title="点积方差为 d_k，除以 √d_k 后为 1",
                   text="独立、零均值、单位方差分量：Var(q·k) 在 d_k 的 3% 以内，除以 √d_k 后方差在 1 的 3% 以内（d_k = 16、64、256）")
def test_c19_dot_product_variance_is_d_k():
    g = gen(12)
    samples = 50_000
    for d_k in (16, 64, 256):
        dots = []
        for _ in range(samples // 10_000):
            q = torch.randn(10_000, d_k, generator=g, dtype=F64)
            k = torch.randn(10_000, d_k, generator=g, dtype=F64)
            dots.append((q * k).sum(dim=-1))
        dots = torch.cat(dots)
        assert abs(dots.mean().item()) < 0.05 * math.sqrt(d_k)
        assert dots.var().item() == pytest.approx(d_k, rel=0.03)
        assert (dots / math.sqrt(d_k)).var().item() == pytest.approx(1.0, rel=0.03)


def _softmax_jacobian_fro(s: torch.Tensor) -> torch.Tensor:
    """‖diag(α) − ααᵀ‖_F for each row of s (rows, n), built explicitly in chunks of 500 rows."""
    norms = []
    for chunk in s.split(500):
        a = torch.softmax(chunk, dim=-1)  # (rows, n)
        jac = torch.diag_embed(a) - a[:, :, None] * a[:, None, :]  # (rows, n, n)
        norms.append(jac.flatten(1).norm(dim=1))
    return torch.cat(norms)


@pytest.mark.claim("ch01-softmax-saturation", paper="§3.2.1",
                   title="分数方差大时 softmax 饱和、梯度变小",
                   text="softmax 雅可比 diag(α) − ααᵀ：分数标准差从 1 增大到 √512 ≈ 22.6 时，其 Frobenius 范数的中位数缩小到 1/10 以下，超过 30% 的分数行的雅可比范数 < 1e-3（n = 64）")
def test_softmax_saturation_shrinks_the_jacobian():
    n = 64
    z = torch.randn(4000, n, generator=gen(13), dtype=F64)
    # diag(α) − ααᵀ is the Jacobian of softmax
    a = torch.softmax(3 * z[0], dim=-1)
    auto = torch.autograd.functional.jacobian(lambda s: torch.softmax(s, -1), 3 * z[0])
    assert (auto - (torch.diag(a) - torch.outer(a, a))).abs().max().item() < 1e-14

    unit = _softmax_jacobian_fro(z)
    big = _softmax_jacobian_fro(math.sqrt(512) * z)
    assert big.median().item() < 0.1 * unit.median().item()
    assert (unit < 1e-3).float().mean().item() == 0.0
    assert (big < 1e-3).float().mean().item() > 0.3


# ---------------------------------------------------------------------------
# Table 1: FLOPs, counter caveats
# ---------------------------------------------------------------------------


@pytest.mark.claim("ch01-c21", paper="§4 (表 1)",
                   title="n = d 时多头自注意力层的 FLOPs 是 RNN 层的 3 倍",
                   text="n = d = 64：一层多头自注意力（含投影）的 FLOPs 恰为 Elman RNN 层的 3 倍（4n²d+8nd² 对 4nd²）；墙钟时间不断言")
def test_c21_attention_costs_three_times_the_rnn_at_n_equal_d():
    n = d = 64
    torch.manual_seed(0)
    mha = MultiHeadAttention(d, 4, bias=False)
    rnn = RNNLayer(d, d)
    x = torch.randn(1, n, d)
    with torch.no_grad():
        f_attn = flops(lambda: mha(x, x, x))
        f_rnn = flops(lambda: rnn(x))
    assert f_attn == 4 * n * n * d + 8 * n * d * d
    # the bias add of RNNCell is not a matmul; the two matmuls per step are 2d² each
    assert f_rnn == 4 * n * d * d
    assert f_attn == 3 * f_rnn
    for ratio_n in (16, 64, 256):  # ratio 2 + n/d for any n
        assert (4 * ratio_n**2 * d + 8 * ratio_n * d * d) / (4 * ratio_n * d * d) == 2 + ratio_n / d


@pytest.mark.claim("ch01-c22", paper="§4 (表 1), measurement caveat",
                   title="FlopCounterMode 数不到的运算",
                   text="FlopCounterMode 的盲区：torch.mv 计 0；CPU 上 4 维 SDPA 计 0；nn.LSTM（oneDNN）计 0；MHA(need_weights=False) 只计投影")
def test_c22_flop_counter_blind_spots():
    n, d = 128, 64
    torch.manual_seed(0)
    w, h = torch.randn(d, d), torch.randn(d)
    assert flops(lambda: torch.mv(w, h)) == 0
    assert flops(lambda: w @ h[:, None]) == 2 * d * d  # same product with a batch dim: counted

    q = torch.randn(1, 1, n, d)
    assert flops(lambda: F.scaled_dot_product_attention(q, q, q)) == 0  # fused CPU kernel
    assert flops(lambda: F.scaled_dot_product_attention(q[0], q[0], q[0])) == 4 * n * n * d  # 3-D: math path

    x = torch.randn(1, n, d)
    lstm = torch.nn.LSTM(d, d, bias=False, batch_first=True)
    assert flops(lambda: lstm(x)) == 0
    with torch.backends.mkldnn.flags(enabled=False):
        assert flops(lambda: lstm(x)) == 16 * n * d * d
    rnn = torch.nn.RNN(d, d, bias=False, batch_first=True)
    assert flops(lambda: rnn(x)) == 4 * n * d * d

    mha = torch.nn.MultiheadAttention(d, 4, bias=False, batch_first=True)
    assert flops(lambda: mha(x, x, x, need_weights=False)) == 8 * n * d * d  # projections only
    assert flops(lambda: mha(x, x, x, need_weights=True)) == 4 * n * n * d + 8 * n * d * d


# ---------------------------------------------------------------------------
# 2026 view: memory, KV cache, long-context mechanisms, positions
# ---------------------------------------------------------------------------


@pytest.mark.claim(
    "ch01-c14", paper="§4 表 1",
    title="一张 n×n 注意力矩阵的字节数",
    text="一个 n×n 注意力矩阵占 n²·b 字节：n = 512、fp32 为 1,048,576 B（1 MiB）；"
    "n = 131072（128K）时 fp32 为 64 GiB、2 字节类型为 32 GiB")
@pytest.mark.claim("ch01-attn-matrix-bytes", paper="§3.2.1; 表 3 (base model)",
                   title="base 模型全部注意力矩阵的显存",
                   text="注意力矩阵 n²·b 字节：n=512 为 1 MiB（fp32）/0.5 MiB（fp16）；base 模型 8 头×18 子层 = 144 张图 = 144 MiB；n=131072 为 64/32 GiB，n=128000 约 61.04/30.52 GiB")
def test_attention_matrix_bytes():
    # a real softmax output of one head, one layer, one sequence: n²·b bytes
    q = torch.randn(512, 8, generator=gen(14))
    _, weights = scaled_dot_product_attention(q, q, q)
    assert weights.shape == (512, 512) and weights.dtype == torch.float32
    assert weights.nbytes == attention_matrix_bytes(512, 4) == MiB
    assert weights.half().nbytes == attention_matrix_bytes(512, 2) == MiB // 2
    # the base model's attention sub-layers, counted from the model itself: N = 6, h = 8
    base = Transformer(vocab_size=11, d_model=64, num_heads=8, num_layers=6, d_ff=16, dropout=0.0)
    maps = base.num_heads * sum(isinstance(m, MultiHeadAttention) for m in base.modules())
    big = {n: attention_matrix_bytes(n, b) / GiB for n in (131_072, 128_000) for b in (4, 2)}
    assert_states(CH01, f"{512 * 512 * 4:,}B", f"{maps}MiB", f"8\\times18={maps}",
                  f"{big[131_072]:.0f}GiB", f"fp16为{attention_matrix_bytes(131_072, 2) / GiB:.0f}GiB",
                  f"{attention_matrix_bytes(128_000, 4) / GiB:.2f}GiB", f"{attention_matrix_bytes(128_000, 2) / GiB:.2f}GiB")
    assert_states(CH01_QUESTIONS, "每头每层1MiB")


@pytest.mark.claim("ch01-online-softmax", paper="§3.2.1 Eq. (1); Dao et al. 2022",
                   title="分块在线 softmax 与一次性计算一致",
                   text="分块在线 softmax 的注意力与一次性计算的公式 (1) 在 float64 下一致到 1e-12（块大小不整除 n）")
def test_online_softmax_equals_naive_attention():
    g = gen(15)
    q = torch.randn(2, 100, 16, generator=g, dtype=F64)
    k = torch.randn(2, 130, 16, generator=g, dtype=F64)
    v = torch.randn(2, 130, 12, generator=g, dtype=F64)
    ref, _ = scaled_dot_product_attention(q, k, v)
    for block in (3, 32, 128, 512):
        out = online_softmax_attention(q, k, v, block=block)
        assert (out - ref).abs().max().item() < 1e-12
    # large scores: subtracting the running max keeps it finite and exact
    out = online_softmax_attention(50 * q, k, v, block=16)
    ref, _ = scaled_dot_product_attention(50 * q, k, v)
    assert torch.isfinite(out).all() and (out - ref).abs().max().item() < 1e-12


@pytest.mark.claim("ch01-attn-compute-crossover", paper="§4 (表 1); §3.3 (d_ff)",
                   title="注意力混合项超过线性部分的长度 n > 6d",
                   text="一层编码器（d_ff = 4d）里，注意力的混合项 4n²d 超过全部线性部分（4 个投影 8nd² 与 FFN 16nd²）恰在 n > 6d；d = 4096 时约 24576 个位置")
def test_attention_mixing_outweighs_the_linear_parts_beyond_six_d():
    from snippets.ffn import encoder_layer_flops
    from snippets.probes.facts import LAYERS
    from snippets.transformer import EncoderLayer

    d, h = 16, 2
    for n in (6 * d - 1, 6 * d, 6 * d + 1):
        closed = encoder_layer_flops(n, d, 4 * d)
        mixing = LAYERS["attention_core"].flops(n, d)
        linear = closed["total"] - mixing
        assert (mixing > linear) == (n > 6 * d)
        assert (mixing == linear) == (n == 6 * d)
    # the closed form is what the reader's layer actually does
    torch.manual_seed(0)
    layer = EncoderLayer(d, h, 4 * d, dropout=0.0).eval()
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        layer(torch.randn(1, 6 * d, d))
    assert counter.get_total_flops() == encoder_layer_flops(6 * d, d, 4 * d)["total"]
    assert_states(CH01, "n>6d", f"{6 * 4096}")


@pytest.mark.claim("ch01-kv-cache-bytes", paper="§3.2.3; §6.1 (inference)",
                   title="KV 缓存的字节数，及 GQA 的节省",
                   text="KV 缓存 2·N·n·d_kv·b 字节：32 层、d_kv=4096、fp16、n=128K 为 64 GiB，d_kv=1024（GQA）为 16 GiB；实际缓存逐步按此增长")
def test_kv_cache_bytes():
    def kv_bytes(layers, n, d_kv, b):
        return 2 * layers * n * d_kv * b

    # the decoder's self-attention cache of snippets.transformer grows exactly by the formula
    torch.manual_seed(0)
    layers, d = 2, 16
    model = Transformer(vocab_size=11, d_model=d, num_heads=2, num_layers=layers, d_ff=32, dropout=0.0).eval()
    src = torch.randint(0, 11, (1, 5), generator=gen(16))
    with torch.no_grad():
        cache = DecoderCache(model, model.encode(src))
        token = torch.zeros(1, 1, dtype=torch.long)
        for t in range(1, 7):
            token = decode_step(model, token, cache).argmax(dim=-1, keepdim=True)
            assert cache.self_attention_nbytes() == kv_bytes(layers, t, d, 4)
    # the page's two examples, by the same formula: 32 layers, 128K tokens, fp16, MHA vs 8 KV heads
    mha, gqa = kv_bytes(32, 131_072, 32 * 128, 2) / GiB, kv_bytes(32, 131_072, 8 * 128, 2) / GiB
    assert_states(CH01, f"={mha:.0f}GiB", f"降到{gqa:.0f}GiB")


@pytest.mark.claim("ch01-swa-span", paper="§4 (restricted self-attention)",
                   title="滑动窗口注意力的感受野与所需层数",
                   text="滑动窗口 W 的感受野约为 W×L：4096×32 = 131072；距离 n−1 需要 ⌈(n−1)/W⌉ 层（W=4、n=33 时 8 层）")
def test_sliding_window_span_and_path_length():
    assert_states(CH01, f"4096\\times32={4096 * 32}")
    n, d, w = 33, 4, 4
    x = torch.randn(1, n, d, generator=gen(17), dtype=F64, requires_grad=True)

    def reach(layers):
        y = x
        for _ in range(layers):
            y, _ = restricted_attention(y, y, y, w)
        (g,) = torch.autograd.grad(y[0, -1].sum(), x)
        return g[0, 0].abs().max().item() > 0

    need = math.ceil((n - 1) / w)
    assert need == 8  # the claim's example
    assert reach(need) and not reach(need - 1)


@pytest.mark.claim("ch01-linear-scan", paper="§1 (sequential computation); 2026 view",
                   title="对角线性递推可用并行前缀扫描",
                   text="对角线性递推 h_t = a_t⊙h_{t−1} + b_t（仿射映射的复合满足结合律）可用并行前缀扫描在 ⌈log₂ n⌉ 轮内算完，与逐步循环一致（n = 1000）")
def test_linear_recurrence_parallel_scan():
    n, d = 1000, 8
    g = gen(18)
    a = torch.rand(n, d, generator=g, dtype=F64)
    b = torch.randn(n, d, generator=g, dtype=F64)
    # sequential loop: n dependent steps
    h, loop = torch.zeros(d, dtype=F64), []
    for t in range(n):
        h = a[t] * h + b[t]
        loop.append(h)
    loop = torch.stack(loop)
    # Hillis–Steele scan on affine maps (a, b): (a2, b2) ∘ (a1, b1) = (a2·a1, a2·b1 + b2), associative
    A, B, shift, rounds = a.clone(), b.clone(), 1, 0
    while shift < n:
        A_prev = torch.cat([torch.ones(shift, d, dtype=F64), A[:-shift]])
        B_prev = torch.cat([torch.zeros(shift, d, dtype=F64), B[:-shift]])
        A, B = A * A_prev, A * B_prev + B  # every position updated at once
        shift, rounds = 2 * shift, rounds + 1
    assert rounds == math.ceil(math.log2(n)) == 10
    assert (B - loop).abs().max().item() < 1e-12


@pytest.mark.claim("ch01-c20", paper="§3.5",
                   title="正弦位置编码：相对偏移是线性变换",
                   text="正弦位置编码满足 PE_{p+k} = M_k·PE_p，M_k 只依赖 k：d=64、k=37、p<20000 时误差 < 1e-8")
def test_c20_sinusoidal_offset_is_linear():
    d, k, n = 64, 37, 20_000
    pe = sinusoidal_positional_encoding(n + k, d, dtype=F64)  # (n + k, d)
    m = pe_offset_matrix(k, d)
    err = (pe[k:] - pe[:n] @ m.T).abs().max().item()
    assert err < 1e-8
    # M_k is a rotation: orthogonal, and it does not depend on the position
    assert (m @ m.T - torch.eye(d, dtype=F64)).abs().max().item() < 1e-12
