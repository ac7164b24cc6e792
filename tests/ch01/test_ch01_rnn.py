"""snippets/rnn.py against nn.RNN, and gradient_norms against bptt_jacobian (float64); BPTT vs autograd (C02) and the 0.9^k bound (C03) are claims in test_ch01_claims.py."""

import pytest
import torch

from snippets.rnn import RNNLayer, bptt_jacobian, gradient_norms
from tests.support.reference import torch_rnn

F64 = torch.float64


@pytest.mark.parametrize("batch,n,d_in,d_h", [(1, 1, 1, 1), (3, 7, 5, 4), (2, 1, 3, 9), (4, 13, 6, 6)])
@pytest.mark.parametrize("with_h0", [False, True])
def test_rnn_layer_equals_torch(batch, n, d_in, d_h, with_h0):
    torch.manual_seed(0)
    layer = RNNLayer(d_in, d_h).to(F64)
    ref = torch_rnn(layer)
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


def test_gradient_norms_match_bptt_jacobian():
    layer, _, hs = _run_sequence(n=21)
    w_hh = layer.cell.w_hh.detach()
    norms = gradient_norms(hs, w_hh, 20)
    assert norms.shape == (20,)
    for k in (1, 2, 9, 20):
        expected = torch.linalg.matrix_norm(bptt_jacobian(hs, w_hh, 20 - k, 20), ord=2)
        torch.testing.assert_close(norms[k - 1], expected, rtol=1e-12, atol=0)
