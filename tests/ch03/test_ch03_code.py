"""Chapter 03's reader code: bad input gets clear errors (argument name and shapes, no silent
broadcasting), and each module's sections, copied out in file order, run in a fresh interpreter."""

from __future__ import annotations

import re

import pytest
import torch

from snippets.additive import AdditiveAttention, additive_attention, attention_cost
from snippets.softmax import (
    attention_logits,
    exp_overflow_threshold,
    masked_cross_entropy,
    masked_softmax,
    soft_cap,
    softmax_jacobian,
    softmax_vjp,
    stable_softmax,
)
from tests.support.copyrun import run_fresh
from tests.support.sections import ROOT, parse_sections

R = torch.randn
Q, K, V = R(2, 5, 6), R(2, 7, 3), R(2, 7, 4)
WQ, WK, VA = R(6, 8), R(3, 8), R(8)

CASES = [
    ("softmax-int", lambda: stable_softmax(torch.arange(4)), TypeError, ["z must be a floating-point", "torch.int64", "z (4,)"]),
    ("softmax-empty", lambda: stable_softmax(R(3, 0)), ValueError, ["z is empty", "z (3, 0)"]),
    ("softmax-list", lambda: stable_softmax([1.0, 2.0]), TypeError, ["z must be a torch.Tensor", "list"]),
    ("jacobian-scalar", lambda: softmax_jacobian(torch.tensor(1.0)), ValueError, ["z must have at least 1 dims", "z ()"]),
    ("vjp-shape", lambda: softmax_vjp(R(2, 5), R(2, 4)), ValueError, ["grad_p must have p's shape", "p (2, 5)", "grad_p (2, 4)"]),
    ("vjp-int", lambda: softmax_vjp(R(2, 5), torch.ones(2, 5, dtype=torch.long)), TypeError, ["grad_p must be a floating-point", "grad_p (2, 5)"]),
    ("logits-dk", lambda: attention_logits(R(2, 5, 8), R(2, 7, 4)), ValueError, ["q (2, 5, 8)", "k (2, 7, 4)"]),
    ("logits-batch", lambda: attention_logits(R(2, 5, 8), R(3, 7, 8)), ValueError, ["q (2, 5, 8)", "k (3, 7, 8)"]),
    ("logits-dtype", lambda: attention_logits(R(2, 5, 8), R(2, 7, 8).double()), TypeError, ["k has dtype torch.float64", "q (2, 5, 8)"]),
    ("logits-scale", lambda: attention_logits(R(2, 5, 8), R(2, 7, 8), "half"), ValueError, ["scale must be", "'half'"]),
    ("masked-float-mask", lambda: masked_softmax(R(3, 4), torch.ones(3, 4)), TypeError, ["mask must be a bool tensor", "scores (3, 4)"]),
    ("masked-broadcast", lambda: masked_softmax(R(3, 4), torch.ones(3, 5, dtype=torch.bool)), ValueError, ["mask (3, 5)", "scores (3, 4)"]),
    ("masked-grows", lambda: masked_softmax(R(3, 4), torch.ones(2, 3, 4, dtype=torch.bool)), ValueError, ["mask (2, 3, 4)", "scores (3, 4)"]),
    ("ce-shape", lambda: masked_cross_entropy(R(2, 5, 7), torch.zeros(2, 4, dtype=torch.long)), ValueError, ["logits (2, 5, 7)", "targets (2, 4)"]),
    ("ce-float-targets", lambda: masked_cross_entropy(R(2, 5, 7), torch.zeros(2, 5)), TypeError, ["targets must be an integer tensor", "logits (2, 5, 7)"]),
    ("ce-range", lambda: masked_cross_entropy(R(2, 5, 7), torch.full((2, 5), 9)), ValueError, ["vocab=7"]),
    ("softcap", lambda: soft_cap(R(3), 0), ValueError, ["cap must be a positive number", "scores (3,)"]),
    ("overflow-int", lambda: exp_overflow_threshold(torch.int32), TypeError, ["floating torch.dtype", "torch.int32"]),
    ("add-value-length", lambda: additive_attention(Q, K, R(2, 6, 4), WQ, WK, VA), ValueError, ["value has n_k=6 but key has n_k=7", "value (2, 6, 4)"]),
    ("add-wq", lambda: additive_attention(Q, K, V, R(5, 8), WK, VA), ValueError, ["w_q must have shape (d_q=6, d_h)", "w_q (5, 8)"]),
    ("add-wk", lambda: additive_attention(Q, K, V, WQ, R(3, 9), VA), ValueError, ["w_k must have shape (d_key=3, d_h=8)", "w_k (3, 9)"]),
    ("add-va", lambda: additive_attention(Q, K, V, WQ, WK, R(9)), ValueError, ["v_a must have shape (d_h=8,)", "v_a (9,)"]),
    ("add-bias", lambda: additive_attention(Q, K, V, WQ, WK, VA, b_h=R(3)), ValueError, ["b_h must have shape (d_h=8,)", "b_h (3,)"]),
    ("add-batch", lambda: additive_attention(Q, R(3, 7, 3), R(3, 7, 4), WQ, WK, VA), ValueError, ["key has batch dims (3,) but query has (2,)"]),
    ("add-dtype", lambda: additive_attention(Q, K.double(), V, WQ, WK, VA), TypeError, ["key has dtype torch.float64", "query (2, 5, 6)"]),
    ("add-mask", lambda: additive_attention(Q, K, V, WQ, WK, VA, torch.ones(5, 6, dtype=torch.bool)), ValueError, ["mask (5, 6) cannot broadcast to (2, 5, 7)"]),
    ("add-float-mask", lambda: additive_attention(Q, K, V, WQ, WK, VA, torch.ones(5, 7)), TypeError, ["mask must be a bool tensor"]),
    ("add-module-size", lambda: AdditiveAttention(6, 0, 8), ValueError, ["d_key must be a positive int", "d_key=0"]),
    ("cost-kind", lambda: attention_cost("mult", 1, 2, 2, 4, 4, 4, 4), ValueError, ["kind must be 'dot' or 'additive'", "'mult'"]),
    ("cost-dot-dims", lambda: attention_cost("dot", 1, 2, 2, 4, 8, 4, 4), ValueError, ["d_q = d_key = d_h"]),
]


@pytest.mark.parametrize("name, call, exc, parts", CASES, ids=[c[0] for c in CASES])
def test_bad_input_names_argument_and_shapes(name, call, exc, parts):
    with pytest.raises(exc) as info:
        call()
    for part in parts:
        assert part in str(info.value), (part, str(info.value))


@pytest.mark.slow  # every section of the page, each in a fresh interpreter
def test_sections_run_by_themselves_in_page_order(tmp_path):
    """attention.py:imports+sdpa+checks, then softmax.py's sections, then additive.py's, as the page shows them."""
    att = dict(parse_sections(ROOT / "snippets" / "attention.py"))
    soft, add = parse_sections(ROOT / "snippets" / "softmax.py"), parse_sections(ROOT / "snippets" / "additive.py")
    assert soft[0][0] == "imports" and add[0][0] == "imports"
    for name, code in soft[1:] + add[1:]:
        assert not re.search(r"^\s*(import|from)\s+\w", code, re.M), f"section {name} imports"
    program = "\n\n".join([att["imports"], att["sdpa"], att["checks"]] + [c for _, c in soft] + [c for _, c in add])
    smoke = """
import torch
z = torch.randn(3, 5, dtype=torch.float64)
assert torch.allclose(stable_softmax(z), torch.softmax(z, -1))
assert softmax_jacobian(z).shape == (3, 5, 5)
q, k, v = torch.randn(2, 4, 6), torch.randn(2, 7, 6), torch.randn(2, 7, 3)
out, w = AdditiveAttention(6, 6, 8)(q, k, v, torch.rand(4, 7) < 0.5)
assert out.shape == (2, 4, 3) and not out.isnan().any()
assert attention_cost("dot", 1, 4, 7, 6, 6, 6, 3)["matmul"] == 2 * 4 * 7 * 9
print("ok")
"""
    assert run_fresh(program + "\n" + smoke, tmp_path).strip() == "ok"
