"""A LLaMA-style decoder assembled only from the reader's parts (snippets/llama.py: RMSNorm, SwiGLUFFN,
apply_rope_half / apply_rope, GroupedQueryAttention, KVCache, TokenEmbedding) against Hugging Face's
LlamaForCausalLM built from a tiny LlamaConfig with GQA (no download): after copying the weights, the
same logits, the same cached keys and values, and greedy decoding with the reader's KV cache gives
``generate(do_sample=False)``'s tokens. Every convention that differs is mapped, one comment each, in
``llama_config`` and ``to_hf_llama``. Also the module's own contract: bad input, the meta device.
"""

from __future__ import annotations

from typing import TYPE_CHECKING


import pytest
import torch

from snippets.attention import KVCache
from snippets.checks import values_unchecked
from snippets.llama import LlamaDecoder, RotaryGroupedQueryAttention, greedy_generate
from snippets.positional import interleaved_to_half
from tests.support.reference import F64, gen, randomize_

# transformers is imported inside the helpers, not at the top: every pytest-xdist worker collects every
# test file, and only the workers that run these tests should pay its import (~3 s of CPU).
if TYPE_CHECKING:
    from transformers import LlamaConfig, LlamaForCausalLM

V, D, LAYERS, HEADS, KV_HEADS, D_FF = 64, 32, 2, 4, 2, 48    # d_head = 8; 2 query heads per K/V head


def llama_config(ours: LlamaDecoder) -> LlamaConfig:
    from transformers import LlamaConfig

    block = ours.layers[0]
    return LlamaConfig(
        vocab_size=ours.vocab_size, hidden_size=block.attn.d_model, num_hidden_layers=len(ours.layers),
        num_attention_heads=block.attn.n_heads,
        num_key_value_heads=block.attn.n_kv_heads,      # GQA: the reader's n_kv_heads
        intermediate_size=block.ffn.w_gate.out_features,
        hidden_act="silu",                              # SwiGLU's Swish = SiLU (LLaMA's default, written out)
        rms_norm_eps=block.attn_norm.eps,               # RMSNorm ε: 1e-6 on both sides
        rope_theta=block.attn.base,                     # RoPE base θ: the reader's base (10000, LlamaConfig's default too)
        attention_bias=False, mlp_bias=False,           # no biases anywhere, as in the reader's LLaMA parts
        tie_word_embeddings=ours.lm_head.weight is ours.embed.weight,
        max_position_embeddings=64,                     # only sizes HF's RoPE cache; the reader's RoPE has no table
        bos_token_id=None, eos_token_id=None, pad_token_id=None)   # no stopping rule unless a test passes one


def to_hf_llama(ours: LlamaDecoder) -> LlamaForCausalLM:
    """A LlamaForCausalLM (float64, eval) computing the reader's model. What differs, and how it is mapped:

    - names: embed -> model.embed_tokens; per layer attn_norm -> input_layernorm, attn.w_q/w_k/w_v/w_o ->
      self_attn.q_proj/k_proj/v_proj/o_proj, ffn_norm -> post_attention_layernorm, ffn.w_gate/w_up/w_down ->
      mlp.gate_proj/up_proj/down_proj; norm -> model.norm; lm_head -> lm_head. RMSNorm's gain g is HF's weight.
    - RoPE pairing: HF rotates with rotate_half (dimension i pairs with i + d_head/2), which is the reader's
      apply_rope_half: copied as they are. A reader model with rope="interleaved" (pairs 2i, 2i+1, Meta's
      original code) needs the rows of w_q and w_k of every head permuted by P = interleaved_to_half(d_head):
      the `permute` that transformers' convert_llama_weights_to_hf.py applies to Meta's checkpoints.
    - embedding: no √d scale and no positional table on either side (TokenEmbedding(scale_embedding=False)).
    - KV cache: both cache n_kv_heads heads, after RoPE and before repeat_kv / repeat_interleave.
    """
    from transformers import LlamaForCausalLM

    ref = LlamaForCausalLM(llama_config(ours)).to(F64).eval()
    head = lambda w: w                                  # noqa: E731
    if ours.layers[0].attn.rope == "interleaved":
        d_head = ours.layers[0].attn.d_head
        p = interleaved_to_half(d_head)
        head = lambda w: w.view(-1, d_head, w.shape[-1])[:, p].reshape(w.shape)   # noqa: E731  (heads, d_head, d)
    state = {"model.embed_tokens.weight": ours.embed.weight, "model.norm.weight": ours.norm.gain,
             "lm_head.weight": ours.lm_head.weight}
    for i, block in enumerate(ours.layers):
        prefix = f"model.layers.{i}."
        state.update({
            prefix + "input_layernorm.weight": block.attn_norm.gain,
            prefix + "self_attn.q_proj.weight": head(block.attn.w_q.weight),
            prefix + "self_attn.k_proj.weight": head(block.attn.w_k.weight),
            prefix + "self_attn.v_proj.weight": block.attn.w_v.weight,      # V is never rotated
            prefix + "self_attn.o_proj.weight": block.attn.w_o.weight,
            prefix + "post_attention_layernorm.weight": block.ffn_norm.gain,
            prefix + "mlp.gate_proj.weight": block.ffn.w_gate.weight,
            prefix + "mlp.up_proj.weight": block.ffn.w_up.weight,
            prefix + "mlp.down_proj.weight": block.ffn.w_down.weight})
    ref.load_state_dict({k: v.detach().clone() for k, v in state.items()}, strict=True)
    return ref


def model(rope: str = "half", tie: bool = False, base: float = 10000.0, seed: int = 1) -> LlamaDecoder:
    torch.manual_seed(seed)
    ours = LlamaDecoder(V, D, LAYERS, HEADS, KV_HEADS, D_FF, base=base, rope=rope, tie_weights=tie).double()
    return randomize_(ours, seed).eval()


# HF computes in float32 inside a float64 model: RMSNorm (hidden_states.to(torch.float32)), the RoPE
# frequencies and angles (inv_freq, position_ids.float()), so float64 agreement is ~1e-6, not 1e-12
TOL = 1e-5


@pytest.mark.parametrize("rope, tie, base", [("half", False, 1e4), ("half", True, 1e4), ("interleaved", False, 1e4),
                                            ("half", False, 5e5)])
@pytest.mark.claim("ch10-llama-from-parts", paper="§3 (2017) → 2026 的解码器",
                   title="用读者零件拼出的 LLaMA 与 Hugging Face LlamaForCausalLM",
                   text="只用 RMSNorm、SwiGLU、半分配对的 RoPE、GQA 与 KV 缓存拼出的解码器，复制权重后与 transformers 5.23.0 的 "
                        "LlamaForCausalLM logits 相差 < 1e-5（HF 在 float32 里算 RMSNorm 与 RoPE 角度）；交错配对要按 HF "
                        "转换脚本的 permute 置换 w_q、w_k 的行")
def test_llama_logits_equal_the_readers(rope, tie, base):
    """Same logits for a prompt of 9 tokens, batch 2: HF's pairing, tied embeddings, Meta's interleaved
    pairing after permuting the rows of w_q and w_k, and another RoPE base."""
    ours = model(rope, tie, base)
    ref = to_hf_llama(ours)
    tokens = torch.randint(0, V, (2, 9), generator=gen(2))
    with torch.no_grad():
        logits = ours(tokens)                                          # (2, 9, V)
        assert (logits - ref(tokens).logits).abs().max() < TOL
        assert logits.abs().max() > 1.0                                 # not a near-zero model


def test_llama_interleaved_rope_without_the_permutation_differs():
    """The permutation is needed: Meta's pairing copied straight into HF gives other logits."""
    ours = model("interleaved")
    ours.layers[0].attn.rope = "half"                                   # map as if the pairings agreed
    ref = to_hf_llama(ours)
    ours.layers[0].attn.rope = "interleaved"
    tokens = torch.randint(0, V, (2, 9), generator=gen(2))
    with torch.no_grad():
        assert (ours(tokens) - ref(tokens).logits).abs().max() > 1e-2


def test_llama_cache_holds_the_same_rotated_kv_heads():
    """After a prefill, each layer's reader KVCache holds HF's cached keys and values: n_kv_heads heads,
    keys already rotated."""
    ours = model()
    ref = to_hf_llama(ours)
    tokens = torch.randint(0, V, (2, 9), generator=gen(2))
    caches = ours.new_caches()
    with torch.no_grad():
        ours(tokens, caches)
        past = ref(tokens, use_cache=True).past_key_values
    for cache, layer in zip(caches, past.layers):
        assert cache.k.shape == layer.keys.shape == (2, KV_HEADS, 9, D // HEADS)
        assert (cache.k - layer.keys).abs().max() < TOL
        assert (cache.v - layer.values).abs().max() < TOL


@pytest.mark.claim("ch10-llama-generate", paper="§3 (2017) → 2026 的解码器",
                   title="读者的 KV 缓存贪心解码与 generate 逐词相同",
                   text="读者带 KV 缓存的贪心解码与 LlamaForCausalLM.generate(do_sample=False) 逐词相同，也与不用缓存的重算相同")
def test_llama_greedy_with_the_readers_kv_cache_equals_generate():
    """greedy_generate (prefill, then one token a step through the KVCache) gives generate(do_sample=False)'s
    tokens, 12 new ones for a batch of 2, and with the cache the same tokens as recomputing every prefix."""
    ours = model()
    ref = to_hf_llama(ours)
    prompt = torch.randint(0, V, (2, 9), generator=gen(2))
    with torch.no_grad():
        tokens = greedy_generate(ours, prompt, 12)
        theirs = ref.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=12, do_sample=False)
        uncached = prompt
        for _ in range(12):
            uncached = torch.cat([uncached, ours(uncached)[:, -1:].argmax(-1)], dim=1)
    assert tokens.tolist() == theirs.tolist() == uncached.tolist()
    assert len(set(tokens[:, 9:].flatten().tolist())) >= 4, "a degenerate model would prove little"


def test_llama_greedy_stops_at_eos_as_generate_does():
    """With an end-of-sequence id, a finished row is filled with it (HF pads with pad_token_id = eos_id)
    and decoding stops once every row has finished: the same tokens and the same length as generate."""
    ours = model()
    ref = to_hf_llama(ours)
    prompt = torch.randint(0, V, (2, 9), generator=gen(2))
    with torch.no_grad():
        free = greedy_generate(ours, prompt, 12)
        eos = int(free[0, 11])                          # row 0's third new token: row 0 finishes there
        assert eos not in free[0, 9:11].tolist() + free[1, 9:].tolist()
        for rows in (prompt, prompt[:1]):               # batch 2: row 0 is filled; batch 1: it stops
            tokens = greedy_generate(ours, rows, 12, eos_id=eos)
            theirs = ref.generate(rows, attention_mask=torch.ones_like(rows), max_new_tokens=12,
                                  do_sample=False, eos_token_id=eos, pad_token_id=eos)
            assert tokens.tolist() == theirs.tolist()
    assert tokens.shape == (1, 12)                      # 9 prompt tokens + 3 new, the last one eos


def test_llama_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="rope must be 'half' or 'interleaved'"):
        RotaryGroupedQueryAttention(32, 4, 2, rope="complex")
    with pytest.raises(ValueError, match="d_head = d_model / n_heads = 12 / 4 = 3 must be even"):
        RotaryGroupedQueryAttention(12, 4, 2)
    with pytest.raises(ValueError, match="n_heads=4 is not divisible by n_kv_heads=3"):
        RotaryGroupedQueryAttention(32, 4, 3)
    ours = model()
    tokens = torch.randint(0, V, (1, 3), generator=gen(2))
    with pytest.raises(ValueError, match=r"caches must hold one KVCache per layer \(2\), got 1"):
        ours(tokens, [KVCache()])
    with pytest.raises(ValueError, match="tokens holds ids in"):
        ours(tokens + V)
    with pytest.raises(ValueError, match="max_new_tokens must be a positive int, got 0"):
        greedy_generate(ours, tokens, 0)
    with pytest.raises(ValueError, match=r"eos_id must lie in \[0, vocab_size=64\), got eos_id=64"):
        greedy_generate(ours, tokens, 2, eos_id=V)
    with pytest.raises(ValueError, match=r"query must have shape \(batch, n, d_model=32\)"):
        ours.layers[0].attn(torch.zeros(1, 3, 16, dtype=F64))


def test_llama_follows_the_input_device():
    """Every tensor made inside (positions, mask, done flags) follows the input: the meta device runs through, with
    the token-id range check (it reads values) switched off by snippets.checks.values_unchecked()."""
    ours = LlamaDecoder(V, D, LAYERS, HEADS, KV_HEADS, D_FF).to("meta")
    tokens = torch.zeros(2, 5, dtype=torch.long, device="meta")
    caches = ours.new_caches()
    with values_unchecked():
        assert ours(tokens, caches).shape == (2, 5, V) and caches[0].k.shape == (2, KV_HEADS, 5, D // HEADS)
        assert ours(tokens[:, :1], caches).device.type == "meta"
        assert greedy_generate(ours, tokens, 3).shape == (2, 8)
