"""snippets/lstm.py against nn.LSTM (float64); the cell-state Jacobian claims (C06, C06b, the one-step formula) are in test_ch01_claims.py."""

import pytest
import torch

from snippets.lstm import LSTMCell, LSTMLayer
from tests.support.reference import torch_lstm

F64 = torch.float64


@pytest.mark.parametrize("batch,n,d_in,d_h", [(1, 1, 1, 1), (3, 7, 5, 4), (2, 1, 3, 9), (4, 13, 6, 6)])
@pytest.mark.parametrize("with_state", [False, True])
def test_lstm_layer_equals_torch(batch, n, d_in, d_h, with_state):
    torch.manual_seed(0)
    layer = LSTMLayer(d_in, d_h, forget_bias=1.0).to(F64)
    ref = torch_lstm(layer)
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
