"""Unit tests for snippets/transformer.py that are not page claims: formulas checked element by
element, the decoder layer against PyTorch, the API's edge cases, and bad input. The page claims
are in test_ch02_claims.py; the page's code runs as a reader's copy in tests/site/test_pages.py.
"""

from __future__ import annotations

import math

import pytest
import torch

from snippets.attention import KVCache, MultiHeadAttention, causal_mask, padding_mask
from snippets.decoding import decode_step, greedy_decode
from snippets.transformer import (
    DecoderCache,
    DecoderLayer,
    EncoderLayer,
    PositionalEncoding,
    PositionwiseFeedForward,
    TokenEmbedding,
    Transformer,
    count_parameters,
    pe_offset_matrix,
    sinusoidal_positional_encoding,
    transformer_param_count,
)

from tests.support.reference import gen, torch_decoder_layer

F64 = torch.float64


def small_model(seed: int = 0, **kwargs) -> Transformer:
    torch.manual_seed(seed)
    cfg = dict(vocab_size=13, d_model=32, num_heads=4, num_layers=2, d_ff=64, dropout=0.0)
    return Transformer(**{**cfg, **kwargs}).to(F64).eval()


# ---------------------------------------------------------------- sections

# ---------------------------------------------------------------- formulas, element by element

def test_positional_encoding_matches_the_paper_formula():
    d, n = 16, 30
    pe = sinusoidal_positional_encoding(n, d, dtype=F64)
    for pos in (0, 1, 7, 29):
        for i in range(d // 2):
            angle = pos / 10000 ** (2 * i / d)
            assert abs(pe[pos, 2 * i].item() - math.sin(angle)) < 1e-12
            assert abs(pe[pos, 2 * i + 1].item() - math.cos(angle)) < 1e-12


def test_pe_offset_matrix_is_a_rotation_group():
    d = 32
    m3, m4 = pe_offset_matrix(3, d), pe_offset_matrix(4, d)
    assert torch.allclose(m3 @ m4, pe_offset_matrix(7, d), atol=1e-12)
    assert torch.allclose(pe_offset_matrix(-3, d), m3.T, atol=1e-15)
    assert torch.equal(pe_offset_matrix(0, d), torch.eye(d, dtype=F64))


def test_positional_encoding_module_adds_with_offset():
    module = PositionalEncoding(8, max_len=20, dropout=0.0)
    x = torch.zeros(2, 3, 8)
    assert torch.equal(module(x), module.pe[:3].expand(2, 3, 8))
    assert torch.equal(module(x, offset=5), module.pe[5:8].expand(2, 3, 8))
    assert "pe" not in module.state_dict()                 # a buffer, recomputed, not saved


def test_ffn_is_the_formula_and_position_wise():
    torch.manual_seed(0)
    ffn = PositionwiseFeedForward(8, 20, dropout=0.0).to(F64)
    x = torch.randn(2, 5, 8, generator=gen(1), dtype=F64)
    w1, b1, w2, b2 = ffn.linear1.weight, ffn.linear1.bias, ffn.linear2.weight, ffn.linear2.bias
    expected = torch.clamp(x @ w1.T + b1, min=0) @ w2.T + b2          # max(0, xW1 + b1)W2 + b2
    assert (ffn(x) - expected).abs().max().item() < 1e-12
    assert count_parameters(ffn) == 2 * 8 * 20 + 20 + 8


def test_param_count_formula_matches_every_switch():
    for tie in (True, False):
        for norm_first in (False, True):
            model = small_model(tie_weights=tie, norm_first=norm_first)
            assert count_parameters(model) == transformer_param_count(13, 32, 2, 64, tie, norm_first)


def test_decoder_layer_equals_torch():
    d, h, d_ff, m, n = 32, 4, 64, 6, 9
    y = torch.randn(2, m, d, generator=gen(2), dtype=F64)
    memory = torch.randn(2, n, d, generator=gen(3), dtype=F64)
    src_mask = padding_mask(torch.tensor([9, 5]), n)                  # (2, 1, 9)
    for norm_first in (False, True):
        torch.manual_seed(4)
        mine = DecoderLayer(d, h, d_ff, dropout=0.0, norm_first=norm_first).to(F64).eval()
        ref = torch_decoder_layer(mine, d, h, d_ff)
        with torch.no_grad():
            ours = mine(y, memory, causal_mask(m), src_mask)
            # torch masks are the opposite convention: True = may NOT attend
            theirs = ref(y, memory, tgt_mask=~causal_mask(m), memory_key_padding_mask=~src_mask[:, 0])
        assert (ours - theirs).abs().max().item() < 1e-10


def test_decode_without_mask_uses_the_causal_mask():
    model = small_model(seed=5)
    src, tgt = torch.randint(2, 13, (2, 6), generator=gen(6)), torch.randint(2, 13, (2, 5), generator=gen(7))
    with torch.no_grad():
        memory = model.encode(src)
        assert torch.equal(model.decode(tgt, memory), model.decode(tgt, memory, tgt_mask=causal_mask(5)))


def test_greedy_decode_stops_at_eos():
    model = small_model(seed=8)
    src = torch.randint(2, 13, (1, 6), generator=gen(9))
    full = greedy_decode(model, src, 10, bos_id=1)
    eos = int(full[0, 2])                                   # pretend the third token is EOS
    first = int((full[0] == eos).nonzero()[0])
    stopped = greedy_decode(model, src, 10, bos_id=1, eos_id=eos)
    assert torch.equal(stopped, full[:, : first + 1])


def test_attention_cache_is_an_argument_of_forward():
    """Self-attention fed one position at a time through a KVCache equals the causal pass;
    a static cache projects its key/value once and then reads them."""
    torch.manual_seed(21)
    mha = MultiHeadAttention(16, 4).to(F64)
    x = torch.randn(2, 6, 16, generator=gen(22), dtype=F64)
    memory = torch.randn(2, 9, 16, generator=gen(23), dtype=F64)
    full, _ = mha(x, x, x, mask=causal_mask(6))
    cross_full, _ = mha(x, memory, memory)
    cache, static = KVCache(), KVCache(static=True)
    calls = []
    hook = mha.w_k.register_forward_hook(lambda *_: calls.append(1))
    steps, cross_steps = [], []
    for t in range(6):
        out, weights = mha(x[:, t:t + 1], x[:, t:t + 1], x[:, t:t + 1], cache=cache)
        steps.append(out)
        assert weights.shape == (2, 4, 1, t + 1) and cache.length == t + 1
        out, _ = mha(x[:, t:t + 1], memory, memory, cache=static)
        cross_steps.append(out)
    hook.remove()
    assert len(calls) == 6 + 1                      # self: one new key per step; cross: once
    assert (torch.cat(steps, dim=1) - full).abs().max().item() < 1e-12
    assert (torch.cat(cross_steps, dim=1) - cross_full).abs().max().item() < 1e-12
    assert cache.nbytes() == 2 * 2 * 6 * 16 * 8 and static.nbytes() == 2 * 2 * 9 * 16 * 8


def test_decode_with_a_cache_accepts_several_new_positions():
    """A prefix of 3 positions in one call, then one at a time: the same as one parallel decode."""
    model = small_model(seed=24)
    src, tgt = torch.randint(2, 13, (2, 6), generator=gen(25)), torch.randint(2, 13, (2, 7), generator=gen(26))
    src_mask = padding_mask(torch.tensor([6, 4]), 6)
    with torch.no_grad():
        memory = model.encode(src, src_mask)
        full = model.decode(tgt, memory, src_mask)
        cache = DecoderCache(model, memory, src_mask)
        parts = [model.decode(tgt[:, :3], memory, src_mask, cache=cache)]
        parts += [model.decode(tgt[:, t:t + 1], memory, src_mask, cache=cache) for t in range(3, 7)]
    assert cache.length == 7
    assert (torch.cat(parts, dim=1) - full).abs().max().item() < 1e-12


def test_dropout_is_active_only_in_training():
    torch.manual_seed(10)
    model = Transformer(13, 32, 4, 2, 64, dropout=0.5)
    src, tgt = torch.randint(2, 13, (2, 6), generator=gen(11)), torch.randint(2, 13, (2, 5), generator=gen(12))
    model.train()
    assert not torch.equal(model(src, tgt), model(src, tgt))
    model.eval()
    with torch.no_grad():
        assert torch.equal(model(src, tgt), model(src, tgt))


def test_int32_token_ids_are_accepted():
    model = small_model(seed=13)
    src = torch.randint(2, 13, (2, 6), generator=gen(14))
    with torch.no_grad():
        assert torch.equal(model.encode(src), model.encode(src.to(torch.int32)))


# ---------------------------------------------------------------- bad input

def test_bad_token_ids():
    model = small_model()
    good = torch.randint(2, 13, (2, 5), generator=gen(15))
    with pytest.raises(TypeError, match=r"src .*integer token ids.*float32.*\(2, 5\)"):
        model.encode(good.float())
    with pytest.raises(ValueError, match=r"src holds ids in \[2, 13\].*\[0, 13\).*\(2, 5\)"):
        model.encode(torch.where(good == good[0, 0], 13, good))
    with pytest.raises(ValueError, match=r"tgt holds ids in \[-1, .*\(2, 5\)"):
        model(good, torch.where(good == good[0, 0], -1, good))
    with pytest.raises(ValueError, match=r"src must have shape \(batch, n\), got shape \(5,\)"):
        model.encode(good[0])
    with pytest.raises(TypeError, match=r"src must be a torch.Tensor"):
        model.encode([[1, 2, 3]])


def test_bad_lengths_and_masks():
    model = small_model(max_len=8)
    src = torch.randint(2, 13, (2, 5), generator=gen(16))
    with pytest.raises(ValueError, match=r"exceed max_len=8.*\(2, 9, 32\)"):
        model(src, torch.randint(2, 13, (2, 9), generator=gen(17)))
    with pytest.raises(ValueError, match=r"tgt_mask has shape \(4, 4\).*m=6.*\(2, 6\)"):
        model(src, torch.randint(2, 13, (2, 6), generator=gen(18)), tgt_mask=causal_mask(4))
    with pytest.raises(ValueError, match=r"batch mismatch: src has shape \(2, 5\), tgt has shape \(3, 4\)"):
        model(src, torch.randint(2, 13, (3, 4), generator=gen(19)))
    with pytest.raises(ValueError, match=r"max_new_tokens=9 must be in \[1, max_len=8\]"):
        greedy_decode(model, src, 9, bos_id=1)
    with pytest.raises(ValueError, match=r"d_model=30 must be divisible by num_heads=4"):
        Transformer(13, 30, 4, 1, 8)


def test_bad_d_model():
    layer = EncoderLayer(32, 4, 64, dropout=0.0)
    with pytest.raises(ValueError, match=r"x must have shape \(batch, n, d_model=32\), got shape \(2, 5, 16\)"):
        layer(torch.randn(2, 5, 16))
    dec = DecoderLayer(32, 4, 64, dropout=0.0)
    with pytest.raises(ValueError, match=r"memory must have shape \(batch, n, d_model=32\), got shape \(2, 7, 64\)"):
        dec(torch.randn(2, 5, 32), torch.randn(2, 7, 64))
    with pytest.raises(ValueError, match=r"batch mismatch: y has shape \(2, 5, 32\), memory has shape \(3, 7, 32\)"):
        dec(torch.randn(2, 5, 32), torch.randn(3, 7, 32))
    model = small_model()
    with pytest.raises(ValueError, match=r"memory must have shape \(batch, n, d_model=32\)"):
        DecoderCache(model, torch.randn(1, 4, 16, dtype=F64))


def test_bad_cache():
    mha = MultiHeadAttention(16, 4)
    x, memory = torch.randn(2, 1, 16), torch.randn(2, 5, 16)
    cache, static = KVCache(), KVCache(static=True)
    mha(x, x, x, cache=cache)
    mha(x, memory, memory, cache=static)
    with pytest.raises(ValueError, match=r"cache holds batch 2 but query has 3: cache\.k \(2, 4, 1, 4\), query \(3, 1, 16\)"):
        mha(torch.randn(3, 1, 16), torch.randn(3, 1, 16), torch.randn(3, 1, 16), cache=cache)
    with pytest.raises(ValueError, match=r"cache holds n_k=5 but key has n_k=7: cache\.k \(2, 4, 5, 4\)"):
        mha(x, torch.randn(2, 7, 16), torch.randn(2, 7, 16), cache=static)
    x2 = torch.randn(2, 2, 16)
    with pytest.raises(ValueError, match=r"mask \(2, 2\) cannot broadcast to \(2, 2, 3\)"):
        mha(x2, x2, x2, mask=causal_mask(2), cache=cache)   # keys: 1 cached + 2 new, not 2


def test_bad_decode_step_and_pe_arguments():
    model = small_model()
    with torch.no_grad():
        cache = DecoderCache(model, model.encode(torch.randint(2, 13, (2, 5), generator=gen(20))))
        with pytest.raises(ValueError, match=r"token must have shape \(batch, 1\), got shape \(2, 2\)"):
            decode_step(model, torch.ones(2, 2, dtype=torch.long), cache)
    with pytest.raises(ValueError, match=r"d_model must be a positive even number, got d_model=7"):
        sinusoidal_positional_encoding(10, 7)
    with pytest.raises(ValueError, match=r"d_model must be a positive even number, got d_model=5"):
        pe_offset_matrix(3, 5)
    with pytest.raises(TypeError, match=r"tokens must hold integer token ids"):
        TokenEmbedding(10, 8)(torch.zeros(1, 3, dtype=torch.bool))
