"""Single pieces of the reader's code against the libraries' own:

- GroupedQueryAttention's head sharing (repeat_interleave) against Hugging Face's repeat_kv, and the
  cached decode step against F.scaled_dot_product_attention(..., enable_gqa=True) with a lower-right
  causal mask (chapter 04 already checks enable_gqa without a cache: tests/ch04, ch04-gqa-torch);
- ALiBi (alibi_slopes, alibi_bias) against BLOOM's build_alibi_tensor;
- the causal mask of a decode step after t cached positions (Transformer.decode, and the LLaMA
  attention of snippets/llama.py) against torch.nn.attention.bias.causal_lower_right.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention.bias import causal_lower_right

from snippets.attention import KVCache, causal_mask
from snippets.llama import RotaryGroupedQueryAttention
from snippets.multihead import GroupedQueryAttention
from snippets.positional import alibi_bias, alibi_slopes
from snippets.transformer import DecoderCache, Transformer
from tests.support.reference import F64, gen, rand, randomize_


# transformers is imported inside the tests, not at the top: every pytest-xdist worker collects every
# test file, and only the workers that run these tests should pay its import (~3 s of CPU).


def heads(x: torch.Tensor, lin: torch.nn.Linear, n_heads: int) -> torch.Tensor:
    """(batch, n, d_model) through one projection, split into heads: (batch, n_heads, n, d_head)."""
    batch, n, _ = x.shape
    return lin(x).view(batch, n, n_heads, -1).transpose(1, 2)


@pytest.mark.claim("ch04-gqa-repeat-kv", paper="Ainslie et al. 2023 (GQA)",
                   title="GQA 的头共享与 Hugging Face 的 repeat_kv",
                   text="读者 GQA 的 repeat_interleave 与 HF 的 repeat_kv 相同：查询头 i 读 K/V 头 i // (h/g)；带缓存的解码步与 "
                        "scaled_dot_product_attention(enable_gqa=True) 加 causal_lower_right 相同")
def test_gqa_sharing_is_hf_repeat_kv():
    """HF's eager attention expands the K/V heads with repeat_kv ((b, g, n, d) -> (b, h, n, d), query head i
    reads K/V head i // (h/g)); with those K, V the reader's GroupedQueryAttention gives the same output."""
    from transformers.models.llama.modeling_llama import repeat_kv

    x = rand(2, 6, 32, seed=1)
    for n_kv in (1, 2, 4):
        torch.manual_seed(n_kv)
        gqa = randomize_(GroupedQueryAttention(32, 4, n_kv).double(), seed=n_kv)
        q, k, v = heads(x, gqa.w_q, 4), heads(x, gqa.w_k, n_kv), heads(x, gqa.w_v, n_kv)
        ref = F.scaled_dot_product_attention(q, repeat_kv(k, 4 // n_kv), repeat_kv(v, 4 // n_kv), is_causal=True)
        ref = gqa.w_o(ref.transpose(1, 2).reshape(2, 6, 32))
        ours, _ = gqa(x, x, x, causal_mask(6))
        assert (ours - ref).abs().max() < 1e-12


def lower_right(m: int, total: int) -> torch.Tensor:
    """causal_lower_right(m, total) as a bool (m, total) mask, through public API only: with q = k = 0 every
    allowed key gets the same weight, every masked one 0, so the weights on V = I are the mask's pattern."""
    zeros_q, zeros_k = torch.zeros(1, 1, m, 1, dtype=F64), torch.zeros(1, 1, total, 1, dtype=F64)
    eye = torch.eye(total, dtype=F64)[None, None]
    return F.scaled_dot_product_attention(zeros_q, zeros_k, eye, attn_mask=causal_lower_right(m, total))[0, 0] > 0


def test_gqa_decode_chunk_with_cache_is_sdpa_enable_gqa_lower_right():
    """After t = 5 cached positions, m = 3 new queries through the reader's GQA with a KVCache equal SDPA on the
    cache's n_kv_heads K/V heads with enable_gqa=True and causal_lower_right(3, 8); the cache holds g heads, not h."""
    torch.manual_seed(0)
    gqa = randomize_(GroupedQueryAttention(32, 4, 2).double(), seed=3)
    x = rand(2, 8, 32, seed=4)
    cache = KVCache()
    gqa(x[:, :5], x[:, :5], x[:, :5], causal_mask(5), cache=cache)      # prefill t = 5
    chunk = x[:, 5:]
    mask = torch.ones(3, 8, dtype=torch.bool).tril(5)                   # the reader's decode-step mask
    ours, _ = gqa(chunk, chunk, chunk, mask, cache=cache)
    assert cache.k.shape == (2, 2, 8, 8)                                # (batch, g, t + m, d_head)
    q = heads(chunk, gqa.w_q, 4)
    ref = F.scaled_dot_product_attention(q, cache.k, cache.v, attn_mask=causal_lower_right(3, 8), enable_gqa=True)
    ref = gqa.w_o(ref.transpose(1, 2).reshape(2, 3, 32))
    assert (ours - ref).abs().max() < 1e-12


@pytest.mark.parametrize("n_heads", [1, 2, 3, 4, 5, 6, 8, 12, 16, 20, 24, 32])
@pytest.mark.claim("ch07-alibi-bloom", paper="Press et al. 2022 (ALiBi)",
                   title="ALiBi 的斜率与 BLOOM 的 build_alibi_tensor",
                   text="1 到 32 个头（含非 2 的幂）的斜率与 BLOOM 相同；偏置每行只差一个常数 −m·i，softmax 不变")
def test_alibi_slopes_are_blooms(n_heads):
    """The slopes equal BLOOM's (powers of two and not, where both take every other slope of 2c heads), to
    float32 rounding: BLOOM computes them in float32."""
    from transformers.models.bloom.modeling_bloom import build_alibi_tensor

    alibi = build_alibi_tensor(torch.ones(1, 4, dtype=torch.long), n_heads, F64)   # (heads, 1, 4): m_h · j
    assert (alibi[:, 0, 1] - alibi_slopes(n_heads)).abs().max() < 1e-7 * alibi_slopes(n_heads).max()


def test_alibi_bias_is_blooms_up_to_a_row_constant():
    """BLOOM adds +m_h·j (key position j only), the reader −m_h·(i − j): they differ by −m_h·i, a constant per
    query row, so after the causal mask the softmax weights are the same."""
    from transformers.models.bloom.modeling_bloom import build_alibi_tensor

    n_heads, n = 6, 7
    ours = alibi_bias(n_heads, n)                                                 # (6, 7, 7)
    bloom = build_alibi_tensor(torch.ones(1, n, dtype=torch.long), n_heads, F64)  # (6, 1, 7)
    slopes = bloom[:, 0, 1]
    row = torch.arange(n, dtype=F64)[:, None]                                     # (7, 1): query position i
    keep = causal_mask(n)
    shift = (ours - bloom).masked_select(keep) - (-slopes[:, None, None] * row).expand_as(ours).masked_select(keep)
    assert shift.abs().max() < 1e-6                                               # float32 slopes in BLOOM
    scores = rand(n_heads, n, n, seed=5)
    soft = lambda bias: torch.softmax((scores + bias).masked_fill(~keep, float("-inf")), dim=-1)   # noqa: E731
    assert (soft(ours) - soft(bloom)).abs().max() < 1e-6


@pytest.mark.claim("ch12-decode-mask-lower-right", paper="§3.2.3",
                   title="解码步的因果掩码是右下对齐的",
                   text="缓存了 t 个位置后，读者 Transformer.decode 与 LLaMA 注意力对 m 个新位置用的掩码恰好是 "
                        "causal_lower_right(m, t + m)；SDPA 的 is_causal=True 是左上对齐")
def test_transformer_decode_step_mask_is_causal_lower_right():
    """Transformer.decode with t cached positions and m new ones builds the (m, t + m) mask that
    causal_lower_right(m, t + m) is: the weights of its self-attention are zero exactly where that mask is False."""
    torch.manual_seed(0)
    model = randomize_(Transformer(20, 16, 2, 1, 24, dropout=0.0, max_len=16).double(), seed=6).eval()
    src, tgt = torch.randint(0, 20, (1, 5), generator=gen(7)), torch.randint(0, 20, (1, 9), generator=gen(8))
    for t, m in ((0, 4), (4, 1), (4, 3), (6, 2)):
        cache = DecoderCache(model, model.encode(src))
        with torch.no_grad():
            if t:
                model.decode(tgt[:, :t], cache.memory, cache=cache)
            model.decode(tgt[:, t:t + m], cache.memory, cache=cache)
        weights = model.decoder_layers[0].self_attn_weights               # (1, h, m, t + m)
        assert weights.shape[-2:] == (m, t + m)
        assert torch.equal(weights[0] != 0, lower_right(m, t + m).expand_as(weights[0]))


def test_llama_attention_step_mask_is_causal_lower_right():
    """The same for the LLaMA attention of snippets/llama.py, which builds its own mask from the cache length."""
    torch.manual_seed(0)
    attn = randomize_(RotaryGroupedQueryAttention(32, 4, 2).double(), seed=9)
    x = rand(1, 9, 32, seed=10)
    for t, m in ((0, 4), (4, 1), (4, 3), (6, 2)):
        cache = KVCache()
        if t:
            attn(x[:, :t], cache)
        _, weights = attn(x[:, t:t + m], cache)                           # (1, h, m, t + m)
        assert torch.equal(weights[0] != 0, lower_right(m, t + m).expand_as(weights[0]))


def test_sdpa_is_causal_is_upper_left_not_a_decode_step_mask():
    """The pitfall the lower-right mask avoids: with fewer queries than keys, SDPA's is_causal=True aligns the
    mask top-left (query i sees keys j ≤ i), not bottom-right as a decode step after t cached positions needs."""
    m, total = 2, 5
    zeros_q, zeros_k = torch.zeros(1, 1, m, 1, dtype=F64), torch.zeros(1, 1, total, 1, dtype=F64)
    eye = torch.eye(total, dtype=F64)[None, None]
    upper_left = F.scaled_dot_product_attention(zeros_q, zeros_k, eye, is_causal=True)[0, 0] > 0
    assert torch.equal(upper_left, torch.ones(m, total, dtype=torch.bool).tril())
    assert torch.equal(lower_right(m, total), torch.ones(m, total, dtype=torch.bool).tril(total - m))
