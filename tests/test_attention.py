"""snippets/attention.py against PyTorch and against the definitions (float64)."""

import math

import pytest
import torch
import torch.nn.functional as F

from snippets.attention import (
    MultiHeadAttention,
    causal_mask,
    padding_mask,
    scaled_dot_product_attention,
)

F64 = torch.float64
TOL = dict(rtol=0, atol=1e-10)

# (batch dims, n_q, n_k, d_k, d_v): n = 1, odd sizes, batch > 1, 4-D (batch, heads, ...)
SDPA_SHAPES = [
    ((1,), 1, 1, 1, 1),
    ((1,), 1, 5, 4, 3),
    ((3,), 5, 1, 8, 2),
    ((2,), 7, 7, 16, 16),
    ((4,), 3, 9, 5, 7),
    ((2, 3), 6, 11, 8, 4),
    ((1, 2), 13, 13, 3, 5),
]


def _qkv(gen, batch, n_q, n_k, d_k, d_v):
    q = torch.randn(*batch, n_q, d_k, generator=gen, dtype=F64)
    k = torch.randn(*batch, n_k, d_k, generator=gen, dtype=F64)
    v = torch.randn(*batch, n_k, d_v, generator=gen, dtype=F64)
    return q, k, v


def _random_mask(gen, shape):
    """Random bool mask where every row keeps at least one key (so PyTorch is well defined)."""
    mask = torch.rand(*shape, generator=gen) < 0.6
    mask[..., torch.randint(shape[-1], (1,), generator=gen)] = True
    return mask


@pytest.mark.parametrize("shape", SDPA_SHAPES)
def test_sdpa_equals_torch_without_mask(shape):
    gen = torch.Generator().manual_seed(0)
    q, k, v = _qkv(gen, *shape)
    out, weights = scaled_dot_product_attention(q, k, v)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v), **TOL)
    # weights are the softmax of the scaled scores, rows sum to 1
    ref_w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
    torch.testing.assert_close(weights, ref_w, **TOL)
    torch.testing.assert_close(weights.sum(-1), torch.ones(weights.shape[:-1], dtype=F64), **TOL)


@pytest.mark.parametrize("shape", SDPA_SHAPES)
@pytest.mark.parametrize("mask_kind", ["full", "row-broadcast", "2d"])
def test_sdpa_equals_torch_with_bool_mask(shape, mask_kind):
    gen = torch.Generator().manual_seed(1)
    batch, n_q, n_k, _, _ = shape
    q, k, v = _qkv(gen, *shape)
    mask_shape = {"full": (*batch, n_q, n_k), "row-broadcast": (*batch, 1, n_k), "2d": (n_q, n_k)}[mask_kind]
    mask = _random_mask(gen, mask_shape)
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask), **TOL)
    assert (weights.masked_select(~mask.expand_as(weights)) == 0).all()


def test_sdpa_causal_mask_equals_torch_is_causal():
    gen = torch.Generator().manual_seed(2)
    q, k, v = _qkv(gen, (2,), 9, 9, 4, 4)
    out, _ = scaled_dot_product_attention(q, k, v, causal_mask(9))
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, is_causal=True), **TOL)


def test_masks_values():
    assert causal_mask(1).tolist() == [[True]]
    assert causal_mask(3).tolist() == [[True, False, False], [True, True, False], [True, True, True]]
    pm = padding_mask(torch.tensor([2, 0, 3]), 3)
    assert pm.shape == (3, 1, 3) and pm.dtype == torch.bool
    assert pm[:, 0].tolist() == [[True, True, False], [False, False, False], [True, True, True]]
    combined = causal_mask(3) & padding_mask([2], 3)  # (1, 3, 3)
    assert combined[0].tolist() == [[True, False, False], [True, True, False], [True, True, False]]


def _copy_to_torch_mha(mha, bias):
    d, h = mha.d_model, mha.num_heads
    ref = torch.nn.MultiheadAttention(d, h, bias=bias, batch_first=True, dtype=F64)
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat([mha.w_q.weight, mha.w_k.weight, mha.w_v.weight]))
        ref.out_proj.weight.copy_(mha.w_o.weight)
        if bias:
            ref.in_proj_bias.copy_(torch.cat([mha.w_q.bias, mha.w_k.bias, mha.w_v.bias]))
            ref.out_proj.bias.copy_(mha.w_o.bias)
    return ref


# (batch, n_q, n_k, d_model, heads, bias)
MHA_CASES = [
    (1, 1, 1, 4, 1, True),
    (2, 5, 5, 8, 2, True),
    (3, 7, 4, 12, 3, False),  # cross-attention: n_q != n_k
    (2, 1, 9, 6, 6, True),
    (1, 11, 11, 15, 5, True),
]


@pytest.mark.parametrize("case", MHA_CASES)
@pytest.mark.parametrize("masked", [False, True])
def test_mha_equals_torch(case, masked):
    batch, n_q, n_k, d, h, bias = case
    torch.manual_seed(3)
    mha = MultiHeadAttention(d, h, bias=bias).to(F64)
    ref = _copy_to_torch_mha(mha, bias)
    gen = torch.Generator().manual_seed(4)
    query = torch.randn(batch, n_q, d, generator=gen, dtype=F64)
    key = torch.randn(batch, n_k, d, generator=gen, dtype=F64)
    value = torch.randn(batch, n_k, d, generator=gen, dtype=F64)
    mask = _random_mask(gen, (n_q, n_k)) if masked else None
    out, weights = mha(query, key, value, mask)
    assert out.shape == (batch, n_q, d) and weights.shape == (batch, h, n_q, n_k)
    attn_mask = None if mask is None else ~mask  # PyTorch's bool attn_mask: True = do NOT attend
    ref_out, ref_w = ref(query, key, value, attn_mask=attn_mask, need_weights=True, average_attn_weights=False)
    torch.testing.assert_close(out, ref_out, **TOL)
    torch.testing.assert_close(weights, ref_w, **TOL)
    _, ref_avg = ref(query, key, value, attn_mask=attn_mask, need_weights=True)
    torch.testing.assert_close(weights.mean(1), ref_avg, **TOL)


def test_mha_padding_mask_equals_torch_key_padding_mask():
    torch.manual_seed(5)
    mha = MultiHeadAttention(8, 4).to(F64)
    ref = _copy_to_torch_mha(mha, True)
    x = torch.randn(3, 6, 8, dtype=F64)
    lengths = torch.tensor([6, 3, 1])
    out, weights = mha(x, x, x, padding_mask(lengths, 6))
    ref_out, ref_w = ref(x, x, x, key_padding_mask=~padding_mask(lengths, 6)[:, 0], average_attn_weights=False)
    torch.testing.assert_close(out, ref_out, **TOL)
    torch.testing.assert_close(weights, ref_w, **TOL)


def test_mha_per_head_mask():
    torch.manual_seed(6)
    mha = MultiHeadAttention(6, 2).to(F64)
    x = torch.randn(2, 4, 6, dtype=F64)
    mask = torch.stack([causal_mask(4), causal_mask(4).T]).expand(2, 2, 4, 4)  # head 0 causal, head 1 anti
    _, weights = mha(x, x, x, mask)
    assert (weights[:, 0].triu(1) == 0).all() and (weights[:, 1].tril(-1) == 0).all()


def test_fully_masked_rows_are_zero_sdpa_and_mha():
    gen = torch.Generator().manual_seed(7)
    q, k, v = _qkv(gen, (2,), 4, 5, 3, 3)
    mask = torch.ones(2, 4, 5, dtype=torch.bool)
    mask[0, 1] = False
    mask[1] = False  # a whole batch element masked
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    assert not out.isnan().any() and not weights.isnan().any()
    assert (out[0, 1] == 0).all() and (weights[0, 1] == 0).all()
    assert (out[1] == 0).all() and (weights[1] == 0).all()
    torch.testing.assert_close(weights[0, [0, 2, 3]].sum(-1), torch.ones(3, dtype=F64), **TOL)
    # gradients stay finite too
    q.requires_grad_(True)
    scaled_dot_product_attention(q, k, v, mask)[0].sum().backward()
    assert q.grad.isfinite().all()

    torch.manual_seed(8)
    mha = MultiHeadAttention(6, 3).to(F64)
    x = torch.randn(2, 4, 6, dtype=F64)
    out, weights = mha(x, x, x, padding_mask([3, 0], 4))  # second sequence: no real key at all
    assert not out.isnan().any() and (weights[1] == 0).all()
    # with every key masked the head outputs are 0, so the layer returns just the output bias
    torch.testing.assert_close(out[1], mha.w_o.bias.expand(4, 6), **TOL)
