"""snippets/rnn.py against nn.RNN, autograd and the spectral-norm bound (float64)."""

import pytest
import torch

from snippets.rnn import RNNLayer, bptt_jacobian, gradient_norms

F64 = torch.float64


def _copy_to_torch_rnn(layer):
    cell = layer.cell
    ref = torch.nn.RNN(cell.input_size, cell.hidden_size, nonlinearity="tanh", batch_first=True, dtype=F64)
    with torch.no_grad():
        ref.weight_ih_l0.copy_(cell.w_xh)
        ref.weight_hh_l0.copy_(cell.w_hh)
        ref.bias_ih_l0.copy_(cell.b)  # nn.RNN has two biases; their sum is our b
        ref.bias_hh_l0.zero_()
    return ref


@pytest.mark.parametrize("batch,n,d_in,d_h", [(1, 1, 1, 1), (3, 7, 5, 4), (2, 1, 3, 9), (4, 13, 6, 6)])
@pytest.mark.parametrize("with_h0", [False, True])
def test_rnn_layer_equals_torch(batch, n, d_in, d_h, with_h0):
    torch.manual_seed(0)
    layer = RNNLayer(d_in, d_h).to(F64)
    ref = _copy_to_torch_rnn(layer)
    x = torch.randn(batch, n, d_in, dtype=F64)
    h0 = torch.randn(batch, d_h, dtype=F64) if with_h0 else None
    hs = layer(x, h0)
    ref_hs, ref_hn = ref(x, None if h0 is None else h0[None])
    assert hs.shape == (batch, n, d_h)
    torch.testing.assert_close(hs, ref_hs, rtol=0, atol=1e-10)
    torch.testing.assert_close(hs[:, -1], ref_hn[0], rtol=0, atol=1e-10)


def _run_sequence(d_in=4, d_h=16, n=31, seed=1, w_hh_norm=None):
    """One sequence through a fresh RNNLayer; returns (layer, x (1, n, d_in), hs (n, d_h))."""
    torch.manual_seed(seed)
    layer = RNNLayer(d_in, d_h).to(F64)
    if w_hh_norm is not None:
        with torch.no_grad():
            w = torch.randn(d_h, d_h, dtype=F64)
            layer.cell.w_hh.copy_(w * (w_hh_norm / torch.linalg.matrix_norm(w, ord=2)))
    x = torch.randn(1, n, d_in, dtype=F64)
    with torch.no_grad():
        hs = layer(x)[0]
    return layer, x, hs


def _autograd_jacobian(layer, x, hs, k, t):
    """∂h_t/∂h_k by autograd: restart the cell from h_k and run steps k+1 .. t."""
    def h_t_from(h_k):
        h = h_k[None]
        for i in range(k + 1, t + 1):
            h = layer.cell(x[:, i], h)
        return h[0]
    return torch.autograd.functional.jacobian(h_t_from, hs[k])


@pytest.mark.parametrize("k,t", [(10, 30), (0, 30), (29, 30), (5, 12), (7, 7)])
def test_bptt_jacobian_equals_autograd(k, t):
    layer, x, hs = _run_sequence()
    jac = bptt_jacobian(hs, layer.cell.w_hh.detach(), k, t)
    torch.testing.assert_close(jac, _autograd_jacobian(layer, x, hs, k, t), rtol=0, atol=1e-12)
    if k == t:
        assert torch.equal(jac, torch.eye(16, dtype=F64))


def test_gradient_norms_match_bptt_jacobian():
    layer, _, hs = _run_sequence(n=21)
    w_hh = layer.cell.w_hh.detach()
    norms = gradient_norms(hs, w_hh, 20)
    assert norms.shape == (20,)
    for k in (1, 2, 9, 20):
        expected = torch.linalg.matrix_norm(bptt_jacobian(hs, w_hh, 20 - k, 20), ord=2)
        torch.testing.assert_close(norms[k - 1], expected, rtol=1e-12, atol=0)


def test_gradient_norms_bounded_by_spectral_norm_power():
    # C03: ‖W_hh‖₂ = 0.9 and tanh' ≤ 1  =>  ‖∂h_T/∂h_{T−k}‖₂ ≤ 0.9^k for every k
    layer, _, hs = _run_sequence(d_in=8, d_h=32, n=101, seed=2, w_hh_norm=0.9)
    w_hh = layer.cell.w_hh.detach()
    assert torch.linalg.matrix_norm(w_hh, ord=2).item() == pytest.approx(0.9, abs=1e-12)
    norms = gradient_norms(hs, w_hh, 100)
    bound = 0.9 ** torch.arange(1, 101, dtype=F64)
    assert (norms <= bound * (1 + 1e-12)).all()
    assert (norms > 0).all()
    # the bound is only an upper bound: tanh' < 1 on a real trajectory makes it far smaller
    assert norms[9] < bound[9]
