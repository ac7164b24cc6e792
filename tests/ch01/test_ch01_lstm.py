"""snippets/lstm.py against nn.LSTM and the cell-state Jacobian formulas (float64)."""

import math

import pytest
import torch

from snippets.lstm import LSTMCell, LSTMLayer, cell_state_jacobians

F64 = torch.float64


def _copy_to_torch_lstm(layer):
    cell = layer.cell
    ref = torch.nn.LSTM(cell.input_size, cell.hidden_size, batch_first=True, dtype=F64)
    with torch.no_grad():  # same gate order i, f, g, o in both
        ref.weight_ih_l0.copy_(cell.w_ih)
        ref.weight_hh_l0.copy_(cell.w_hh)
        ref.bias_ih_l0.copy_(cell.b)  # nn.LSTM has two biases; their sum is our b
        ref.bias_hh_l0.zero_()
    return ref


@pytest.mark.parametrize("batch,n,d_in,d_h", [(1, 1, 1, 1), (3, 7, 5, 4), (2, 1, 3, 9), (4, 13, 6, 6)])
@pytest.mark.parametrize("with_state", [False, True])
def test_lstm_layer_equals_torch(batch, n, d_in, d_h, with_state):
    torch.manual_seed(0)
    layer = LSTMLayer(d_in, d_h, forget_bias=1.0).to(F64)
    ref = _copy_to_torch_lstm(layer)
    x = torch.randn(batch, n, d_in, dtype=F64)
    state = (torch.randn(batch, d_h, dtype=F64), torch.randn(batch, d_h, dtype=F64)) if with_state else None
    hs, (h_n, c_n) = layer(x, state)
    ref_hs, (ref_h, ref_c) = ref(x, None if state is None else (state[0][None], state[1][None]))
    assert hs.shape == (batch, n, d_h)
    torch.testing.assert_close(hs, ref_hs, rtol=0, atol=1e-10)
    torch.testing.assert_close(h_n, ref_h[0], rtol=0, atol=1e-10)
    torch.testing.assert_close(c_n, ref_c[0], rtol=0, atol=1e-10)


def test_forget_bias_initialises_b_f_only():
    cell = LSTMCell(3, 4, forget_bias=5.0)
    assert (cell.b[4:8] == 5.0).all()
    assert (cell.b[:4].abs() <= 0.5).all() and (cell.b[8:].abs() <= 0.5).all()  # U(−1/√4, 1/√4)


def _setup(d=32, n=120, seed=0, forget_bias=5.0, zero_w_f=False):
    torch.manual_seed(seed)
    cell = LSTMCell(d, d, forget_bias=forget_bias).to(F64)
    if zero_w_f:
        with torch.no_grad():
            cell.w_ih[d:2 * d] = 0  # W_f = 0, input part
            cell.w_hh[d:2 * d] = 0  # W_f = 0, hidden part
    x = torch.randn(n, d, dtype=F64)
    h0, c0 = torch.zeros(d, dtype=F64), torch.zeros(d, dtype=F64)
    return cell, x, h0, c0


def _forget_gate_product(cell, x, h0, c0, k):
    """∏ f_t over the last k steps (t = n−k+1 .. n), from a plain forward run."""
    h, c, fs = h0[None], c0[None], []
    with torch.no_grad():
        for t in range(x.shape[0]):
            fs.append(cell.gates(x[t:t + 1], h)[1][0])
            h, c = cell(x[t:t + 1], (h, c))
    return torch.stack(fs[-k:]).prod(dim=0)  # (d_h,)


@pytest.mark.parametrize("forget_bias,k", [(5.0, 100), (0.0, 10), (None, 1)])
def test_direct_path_is_product_of_forget_gates(forget_bias, k):
    cell, x, h0, c0 = _setup(d=16, n=k + 20, seed=1, forget_bias=forget_bias)
    direct, _ = cell_state_jacobians(cell, x, h0, c0, k)
    prod_f = _forget_gate_product(cell, x, h0, c0, k)
    torch.testing.assert_close(direct, torch.diag(prod_f), rtol=0, atol=1e-12)


def test_forget_bias_5_keeps_the_direct_path_open():
    # C06: W_f = 0 and b_f = 5  =>  f = σ(5) at every step, ∏ f over 100 steps = σ(5)^100 ≈ 0.5109
    cell, x, h0, c0 = _setup(zero_w_f=True)
    direct, _ = cell_state_jacobians(cell, x, h0, c0, 100)
    prod_f = _forget_gate_product(cell, x, h0, c0, 100)
    expected = (1 / (1 + math.exp(-5.0))) ** 100
    assert expected == pytest.approx(0.5109, abs=1e-4)
    torch.testing.assert_close(prod_f, torch.full((32,), expected, dtype=F64), rtol=1e-12, atol=0)
    assert (prod_f >= 0.5).all()
    torch.testing.assert_close(direct, expected * torch.eye(32, dtype=F64), rtol=0, atol=1e-12)


def test_full_jacobian_adds_indirect_terms():
    # C06b: at default init with b_f = 5 the indirect terms through h are not small
    cell, x, h0, c0 = _setup(seed=0)
    direct, full = cell_state_jacobians(cell, x, h0, c0, 100)
    norm_direct = torch.linalg.matrix_norm(direct, ord=2).item()
    norm_full = torch.linalg.matrix_norm(full, ord=2).item()
    assert norm_direct >= 0.5
    assert norm_full > 1 > norm_direct  # the full Jacobian is larger than the carousel alone
    # with b_f = 0 (f ≈ 0.5) both paths vanish over 100 steps
    cell, x, h0, c0 = _setup(seed=0, forget_bias=0.0)
    direct, full = cell_state_jacobians(cell, x, h0, c0, 100)
    assert torch.linalg.matrix_norm(full, ord=2).item() < 1e-15
    assert torch.linalg.matrix_norm(direct, ord=2).item() < 1e-20


def test_full_jacobian_single_step_formula():
    # R20 with k = 1: ∂c_t/∂c_{t−1} = diag(f) + [diag(c_{t−1} f(1−f)) W_hf + diag(g i(1−i)) W_hi
    #                                  + diag(i (1−g²)) W_hg] diag(o_{t−1} (1 − tanh² c_{t−1}))
    d = 6
    cell, x, h0, c0 = _setup(d=d, n=5, seed=3, forget_bias=1.0)
    _, full = cell_state_jacobians(cell, x, h0, c0, 1)
    h, c = h0[None], c0[None]
    with torch.no_grad():
        for t in range(4):  # c_4 = c_{n−k} with n = 5, k = 1
            h_prev = h
            h, c = cell(x[t:t + 1], (h, c))
        o_prev = cell.gates(x[3:4], h_prev)[3][0]  # o_4
        i, f, g, _ = (z[0] for z in cell.gates(x[4:5], h))  # gates of step 5
    c_prev = c[0]
    w_hi, w_hf, w_hg, _ = cell.w_hh.detach().chunk(4, dim=0)
    dh_dc = torch.diag(o_prev * (1 - torch.tanh(c_prev) ** 2))
    expected = torch.diag(f) + (torch.diag(c_prev * f * (1 - f)) @ w_hf + torch.diag(g * i * (1 - i)) @ w_hi
                                + torch.diag(i * (1 - g ** 2)) @ w_hg) @ dh_dc
    torch.testing.assert_close(full, expected, rtol=0, atol=1e-12)
