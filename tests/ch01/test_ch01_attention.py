"""snippets/attention.py against PyTorch and against the definitions (float64)."""

import math

import pytest
import torch
import torch.nn.functional as F

from snippets.probes.memory import peak_allocated_bytes_cpu as peak_allocated_bytes
from tests.support.reference import torch_mha

from snippets.attention import (
    MultiHeadAttention,
    online_softmax_attention,
    restricted_attention,
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
    ref = torch_mha(mha)
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
    ref = torch_mha(mha)
    x = torch.randn(3, 6, 8, dtype=F64)
    lengths = torch.tensor([6, 3, 1])
    out, weights = mha(x, x, x, padding_mask(lengths, 6))
    ref_out, ref_w = ref(x, x, x, key_padding_mask=~padding_mask(lengths, 6)[:, 0], average_attn_weights=False)
    torch.testing.assert_close(out, ref_out, **TOL)
    torch.testing.assert_close(weights, ref_w, **TOL)


@pytest.mark.parametrize("shape", [(7,), (1, 7), (4, 7), (3, 1, 7), (3, 4, 7)])
def test_mha_accepts_every_broadcastable_mask_shape(shape):
    torch.manual_seed(9)
    mha = MultiHeadAttention(6, 3).to(F64)
    query, kv = torch.randn(3, 4, 6, dtype=F64), torch.randn(3, 7, 6, dtype=F64)
    mask = _random_mask(torch.Generator().manual_seed(9), shape)
    out, weights = mha(query, kv, kv, mask)
    ref_out, ref_w = mha(query, kv, kv, mask.expand(3, 4, 7))  # the same mask written out in full
    torch.testing.assert_close(out, ref_out, rtol=0, atol=0)
    torch.testing.assert_close(weights, ref_w, rtol=0, atol=0)
    assert (weights.masked_select(~mask.expand(3, 4, 7)[:, None].expand(3, 3, 4, 7)) == 0).all()


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


# ---------------------------------------------------------------- restricted attention


def band_mask(n, r):
    i = torch.arange(n)
    return (i[:, None] - i[None, :]).abs() <= r  # (n, n)


def band_to_full(weights, r):
    """(..., n, 2r+1) window weights -> (..., n, n), weights[..., i, w] sits at column j = i - r + w."""
    n = weights.shape[-2]
    full = weights.new_zeros(weights.shape[:-1] + (n,))
    for i in range(n):
        for w in range(2 * r + 1):
            j = i - r + w
            if 0 <= j < n:
                full[..., i, j] = weights[..., i, w]
    return full


@pytest.mark.parametrize("batch,n,d,r", [((1,), 1, 3, 0), ((2,), 7, 4, 0), ((2,), 7, 4, 2),
                                         ((3,), 9, 5, 3), ((2, 2), 6, 3, 10), ((1,), 12, 8, 5)])
def test_restricted_equals_banded_sdpa(batch, n, d, r):
    gen = torch.Generator().manual_seed(10)
    q, k, v = _qkv(gen, batch, n, n, d, d + 1)
    out, weights = restricted_attention(q, k, v, r)
    ref_out, ref_w = scaled_dot_product_attention(q, k, v, band_mask(n, r))
    assert weights.shape == (*batch, n, 2 * r + 1)
    torch.testing.assert_close(out, ref_out, rtol=0, atol=1e-12)
    torch.testing.assert_close(band_to_full(weights, r), ref_w, rtol=0, atol=1e-12)


def test_restricted_with_padding_mask_equals_banded_sdpa():
    gen = torch.Generator().manual_seed(11)
    q, k, v = _qkv(gen, (3,), 8, 8, 4, 4)
    pm = padding_mask([8, 5, 2], 8)  # (3, 1, 8)
    out, weights = restricted_attention(q, k, v, 1, pm)
    ref_out, _ = scaled_dot_product_attention(q, k, v, band_mask(8, 1) & pm)
    torch.testing.assert_close(out, ref_out, rtol=0, atol=1e-12)
    # sequence 2 has 2 real tokens: queries 4..7 see no real key within radius 1 -> zero rows
    assert (out[2, 4:] == 0).all() and (weights[2, 4:] == 0).all()
    assert not out.isnan().any() and not weights.isnan().any()
    # a 1-D key mask (n,) broadcasts the same way
    key_mask = torch.tensor([True, False, True, True, False, True, True, True])
    torch.testing.assert_close(restricted_attention(q, k, v, 2, key_mask)[0],
                               scaled_dot_product_attention(q, k, v, band_mask(8, 2) & key_mask)[0],
                               rtol=0, atol=1e-12)
    torch.testing.assert_close(online_softmax_attention(q, k, v, block=3, mask=key_mask),
                               scaled_dot_product_attention(q, k, v, key_mask)[0], rtol=0, atol=1e-12)


@pytest.mark.parametrize("r", [0, 1, 3])
def test_restricted_output_depends_only_on_window(r):
    gen = torch.Generator().manual_seed(12)
    n, d = 9, 3
    q, k, v = _qkv(gen, (), n, n, d, d)
    inside = band_mask(n, r)  # (n_out, n_in)
    for which in range(3):
        def f(x):
            args = [q, k, v]
            args[which] = x
            return restricted_attention(*args, r)[0]
        jac = torch.autograd.functional.jacobian(f, (q, k, v)[which])  # (n, d, n, d)
        per_pair = jac.abs().sum(dim=(1, 3))  # (n_out, n_in)
        assert (per_pair[~inside] == 0).all()  # exactly zero outside the radius
        # inside the window the dependence is real (with r = 0 the single weight is always 1,
        # so only v matters; a query only moves its own output)
        if which == 2 or (which == 1 and r > 0):
            assert (per_pair[inside] > 0).all()
        elif r > 0:
            assert (per_pair.diagonal() > 0).all()


# ---------------------------------------------------------------- online softmax
@pytest.mark.parametrize("n_q,n_k,block", [(1, 1, 1), (1, 7, 3), (16, 16, 4), (17, 23, 5),
                                           (30, 30, 64), (13, 11, 1)])
def test_online_softmax_equals_naive(n_q, n_k, block):
    gen = torch.Generator().manual_seed(13)
    q, k, v = _qkv(gen, (2, 3), n_q, n_k, 8, 5)
    q = 4 * q  # sharp softmax: the running max matters
    ref, _ = scaled_dot_product_attention(q, k, v)
    torch.testing.assert_close(online_softmax_attention(q, k, v, block=block), ref, rtol=0, atol=1e-12)


@pytest.mark.parametrize("block", [1, 3, 4, 7, 64])
def test_online_softmax_with_mask_and_fully_masked_rows(block):
    gen = torch.Generator().manual_seed(14)
    n = 12
    q, k, v = _qkv(gen, (3,), n, n, 4, 6)
    mask = causal_mask(n) & padding_mask([12, 7, 0], n)  # (3, n, n); batch 2 fully masked
    mask[0, 5] = False  # one fully masked row in the middle of a block
    ref, _ = scaled_dot_product_attention(q, k, v, mask)
    out = online_softmax_attention(q, k, v, block=block, mask=mask)
    assert not out.isnan().any()
    torch.testing.assert_close(out, ref, rtol=0, atol=1e-12)
    assert (out[0, 5] == 0).all() and (out[2] == 0).all()
    # a broadcast key mask (batch, 1, n) works too
    pm = padding_mask([3, 12, 1], n)
    torch.testing.assert_close(online_softmax_attention(q, k, v, block=block, mask=pm),
                               scaled_dot_product_attention(q, k, v, pm)[0], rtol=0, atol=1e-12)


def test_restricted_and_online_keep_zero_rows_for_fully_masked_input():
    q, k, v = _qkv(torch.Generator().manual_seed(15), (2,), 5, 5, 3, 3)
    none = torch.zeros(2, 1, 5, dtype=torch.bool)
    out_r, w_r = restricted_attention(q, k, v, 2, none)
    out_o = online_softmax_attention(q, k, v, block=2, mask=none)
    for t in (out_r, w_r, out_o):
        assert not t.isnan().any() and (t == 0).all()


def _peak(attention, n, d=16, **kw):
    gen = torch.Generator().manual_seed(16)
    q, k, v = (torch.randn(1, n, d, generator=gen) for _ in range(3))  # float32, allocated outside
    return peak_allocated_bytes(lambda: attention(q, k, v, **kw))["peak_bytes"]


def test_online_softmax_peak_memory_is_linear_in_n():
    block = 512  # 512 x 512 scores per step: few Python iterations, still O(n) overall
    p1, p2, p4 = (_peak(online_softmax_attention, n, block=block) for n in (1024, 2048, 4096))
    # linear: doubling n adds the same amount again (quadratic would give a ratio of 4)
    assert (p4 - p2) / (p2 - p1) == pytest.approx(2.0, rel=0.05)
    assert p2 / p1 < 2.05 and p4 / p2 < 2.05
    assert p4 < 4096 * 4096 * 4 / 10  # far below one n x n float32 matrix (64 MiB)
    # and the result is right in float32 as well
    q, k, v = (torch.randn(1, 300, 16, generator=torch.Generator().manual_seed(s)) for s in range(3))
    torch.testing.assert_close(online_softmax_attention(q, k, v, block=block), scaled_dot_product_attention(q, k, v)[0],
                               rtol=0, atol=1e-5)
