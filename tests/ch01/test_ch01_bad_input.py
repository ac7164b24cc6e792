"""Bad input raises ValueError/TypeError whose message names the argument and the shapes."""

import pytest
import torch

from snippets.attention import (
    MultiHeadAttention,
    causal_mask,
    online_softmax_attention,
    padding_mask,
    restricted_attention,
    scaled_dot_product_attention,
)
from snippets.lstm import LSTMCell, LSTMLayer, cell_state_jacobians
from snippets.rnn import RNNCell, RNNLayer, bptt_jacobian, gradient_norms

torch.manual_seed(0)
R = torch.randn
Q, K, V = R(2, 5, 16), R(2, 7, 16), R(2, 7, 4)  # a valid (q, k, v) to perturb
X = R(2, 5, 16)  # self-attention input
MHA = MultiHeadAttention(16, 4)
RNN = RNNLayer(3, 8)
LSTM = LSTMLayer(3, 8)
HS = R(10, 8)  # hidden states of one sequence

# (id, call, exception type, substrings the message must contain: the argument and the shapes)
CASES = [
    # ---- scaled_dot_product_attention
    ("sdpa-d_k-mismatch", lambda: scaled_dot_product_attention(Q, R(2, 7, 8), V), ValueError,
     ["k has d_k=8 but q has d_k=16", "q (2, 5, 16)", "k (2, 7, 8)"]),
    ("sdpa-v-length", lambda: scaled_dot_product_attention(Q, K, R(2, 6, 4)), ValueError,
     ["v has n_k=6 but k has n_k=7", "k (2, 7, 16)", "v (2, 6, 4)"]),
    ("sdpa-mask-broadcast", lambda: scaled_dot_product_attention(Q, K, V, torch.ones(3, 5, 6, dtype=torch.bool)),
     ValueError, ["mask (3, 5, 6)", "(2, 5, 7)", "q (2, 5, 16)"]),
    ("sdpa-float-mask", lambda: scaled_dot_product_attention(Q, K, V, torch.ones(5, 7)), TypeError,
     ["mask must be a bool tensor", "torch.float32", "mask (5, 7)", "q (2, 5, 16)"]),
    ("sdpa-int-tensors", lambda: scaled_dot_product_attention(Q.long(), K.long(), V.long()), TypeError,
     ["q must be a floating-point tensor", "torch.int64", "q (2, 5, 16)"]),
    ("sdpa-dtype-mismatch", lambda: scaled_dot_product_attention(Q, K.double(), V), TypeError,
     ["k has dtype torch.float64 but q has torch.float32", "k (2, 7, 16)"]),
    ("sdpa-rank", lambda: scaled_dot_product_attention(R(16), K, V), ValueError,
     ["q must have shape (..., n, d)", "q (16,)"]),
    ("sdpa-empty", lambda: scaled_dot_product_attention(R(2, 0, 16), K, V), ValueError,
     ["q is empty", "q (2, 0, 16)"]),
    ("sdpa-batch-mismatch", lambda: scaled_dot_product_attention(Q, R(3, 7, 16), R(3, 7, 4)), ValueError,
     ["k has batch dims (3,) but q has (2,)", "k (3, 7, 16)"]),
    # ---- masks
    ("causal-mask-empty", lambda: causal_mask(0), ValueError, ["n must be >= 1", "n=0", "(0, 0)"]),
    ("padding-mask-too-long", lambda: padding_mask(torch.tensor([3, 9]), 5), ValueError,
     ["lengths must lie in [0, n=5]", "[3, 9]", "lengths (2,)"]),
    ("padding-mask-float", lambda: padding_mask(torch.tensor([3.0, 2.0]), 5), TypeError,
     ["lengths must hold integers", "torch.float32", "lengths (2,)"]),
    # ---- MultiHeadAttention
    ("mha-not-divisible", lambda: MultiHeadAttention(10, 3), ValueError,
     ["d_model=10", "num_heads=3", "not divisible"]),
    ("mha-d_model", lambda: MHA(R(2, 5, 12), X, X), ValueError,
     ["query must have shape (batch, n, d_model=16)", "query (2, 5, 12)"]),
    ("mha-key-value-length", lambda: MHA(X, R(2, 6, 16), R(2, 4, 16)), ValueError,
     ["value has n_k=4 but key has n_k=6", "key (2, 6, 16)", "value (2, 4, 16)"]),
    ("mha-mask-broadcast", lambda: MHA(X, X, X, torch.ones(2, 4, 5, dtype=torch.bool)), ValueError,
     ["mask (2, 4, 5) cannot broadcast to (2, 5, 5)", "query (2, 5, 16)"]),
    ("mha-float-mask", lambda: MHA(X, X, X, causal_mask(5).float()), TypeError,
     ["mask must be a bool tensor", "mask (5, 5)"]),
    ("mha-dtype", lambda: MHA(X.double(), X.double(), X.double()), TypeError,
     ["query has dtype torch.float64 but the weights have torch.float32", "query (2, 5, 16)"]),
    ("mha-empty", lambda: MHA(R(2, 0, 16), X, X), ValueError,
     ["query is an empty sequence (n = 0)", "query (2, 0, 16)"]),
    # ---- restricted attention
    ("restricted-negative-r", lambda: restricted_attention(X, X, X, -1), ValueError,
     ["r must be >= 0", "r=-1", "q (2, 5, 16)"]),
    ("restricted-float-r", lambda: restricted_attention(X, X, X, 1.5), TypeError,
     ["r must be an int", "float", "q (2, 5, 16)"]),
    ("restricted-lengths", lambda: restricted_attention(Q, K, V, 1), ValueError,
     ["k has n=7 but q has n=5", "q (2, 5, 16)", "k (2, 7, 16)"]),
    ("restricted-full-mask", lambda: restricted_attention(X, X, X, 1, causal_mask(5)), ValueError,
     ["mask (5, 5) cannot broadcast to (2, 1, 5)", "q (2, 5, 16)"]),
    # ---- online softmax
    ("online-block-zero", lambda: online_softmax_attention(Q, K, V, block=0), ValueError,
     ["block must be >= 1", "block=0", "q (2, 5, 16)"]),
    ("online-d_k-mismatch", lambda: online_softmax_attention(Q, R(2, 7, 8), V), ValueError,
     ["k has d_k=8 but q has d_k=16", "k (2, 7, 8)"]),
    ("online-float-mask", lambda: online_softmax_attention(Q, K, V, mask=torch.zeros(5, 7)), TypeError,
     ["mask must be a bool tensor", "mask (5, 7)", "q (2, 5, 16)"]),
    # ---- RNN
    ("rnn-h0-hidden-size", lambda: RNN(R(2, 4, 3), R(2, 7)), ValueError,
     ["h0 must have shape (batch, hidden_size) = (2, 8)", "h0 (2, 7)"]),
    ("rnn-input-size", lambda: RNN(R(2, 4, 5)), ValueError,
     ["x must have shape (batch, n, input_size) = (2, 4, 3)", "x (2, 4, 5)"]),
    ("rnn-empty", lambda: RNN(R(2, 0, 3)), ValueError, ["x is an empty sequence (n = 0)", "x (2, 0, 3)"]),
    ("rnn-int", lambda: RNN(torch.ones(2, 4, 3, dtype=torch.int64)), TypeError,
     ["x must be a floating-point tensor", "torch.int64", "x (2, 4, 3)"]),
    ("rnn-rank", lambda: RNN(R(4, 3)), ValueError, ["x must have shape (batch, n, input_size)", "x (4, 3)"]),
    ("rnn-cell-h_prev", lambda: RNNCell(3, 8)(R(2, 3), R(2, 9)), ValueError,
     ["h_prev must have shape (batch, hidden_size) = (2, 8)", "h_prev (2, 9)"]),
    ("bptt-w_hh-shape", lambda: bptt_jacobian(HS, R(8, 7), 2, 5), ValueError,
     ["w_hh must have shape (d_h, d_h) = (8, 8)", "w_hh (8, 7)"]),
    ("bptt-k-after-t", lambda: bptt_jacobian(HS, R(8, 8), 6, 5), ValueError,
     ["need 0 <= k <= t < n", "k=6", "t=5", "hs (10, 8)"]),
    ("gradient-norms-too-many", lambda: gradient_norms(HS, R(8, 8), 10), ValueError,
     ["max_k <= n - 1 = 9", "max_k=10", "hs (10, 8)"]),
    # ---- LSTM
    ("lstm-c0-hidden-size", lambda: LSTM(R(2, 4, 3), (R(2, 8), R(2, 6))), ValueError,
     ["c0 must have shape (batch, hidden_size) = (2, 8)", "c0 (2, 6)"]),
    ("lstm-h0-hidden-size", lambda: LSTM(R(2, 4, 3), (R(2, 5), R(2, 8))), ValueError,
     ["h0 must have shape (batch, hidden_size) = (2, 8)", "h0 (2, 5)"]),
    ("lstm-rank", lambda: LSTM(R(2, 4, 3, 1)), ValueError,
     ["x must have shape (batch, n, input_size)", "x (2, 4, 3, 1)"]),
    ("lstm-dtype", lambda: LSTM(R(2, 4, 3).double()), TypeError,
     ["x has dtype torch.float64 but the weights have torch.float32", "x (2, 4, 3)"]),
    ("lstm-cell-x_t", lambda: LSTMCell(3, 8)(R(2, 4), (R(2, 8), R(2, 8))), ValueError,
     ["x_t must have shape (batch, input_size) = (2, 3)", "x_t (2, 4)"]),
    ("lstm-jacobian-k", lambda: cell_state_jacobians(LSTM.cell, R(6, 3), R(8), R(8), 6), ValueError,
     ["need 1 <= k <= n - 1 = 5", "k=6", "x (6, 3)"]),
]


@pytest.mark.parametrize("call,exc,parts", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_raises_with_argument_and_shapes(call, exc, parts):
    with pytest.raises(exc) as info:
        call()
    message = str(info.value)
    for part in parts:
        assert part in message, f"{part!r} not in {message!r}"
