"""The reader's 2017 Transformer (snippets/transformer.py) against Hugging Face's MarianMTModel, a
post-LN encoder–decoder with sinusoidal positions, tied embeddings and √d scaling, built from a tiny
MarianConfig with random weights (no download): after copying the reader's weights, the same logits,
and greedy decoding gives the same tokens as ``generate``. Every convention that differs is mapped,
one comment each, in ``marian_config`` and ``to_marian``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
import torch

from snippets.attention import padding_mask
from snippets.decoding import greedy_decode
from snippets.positional import interleaved_to_half, sinusoidal_positional_encoding
from snippets.transformer import Transformer
from tests.support.reference import F64, gen, randomize_

# transformers is imported inside the helpers, not at the top: every pytest-xdist worker collects every
# test file, and only the workers that run these tests should pay its import (~3 s of CPU).
if TYPE_CHECKING:
    from transformers import MarianConfig, MarianMTModel

V, D, H, LAYERS, D_FF, MAX_LEN = 40, 16, 4, 2, 24, 32
BOS = V - 1        # Marian starts the decoder with its pad id; the reader's BOS is any id: use the same one


def marian_config(ours: Transformer) -> MarianConfig:
    from transformers import MarianConfig

    layer = ours.encoder_layers[0]
    return MarianConfig(
        vocab_size=ours.vocab_size, d_model=ours.d_model, max_position_embeddings=ours.max_len,
        encoder_layers=ours.num_layers, decoder_layers=ours.num_layers,
        encoder_attention_heads=ours.num_heads, decoder_attention_heads=ours.num_heads,
        encoder_ffn_dim=layer.ffn.linear1.out_features, decoder_ffn_dim=layer.ffn.linear1.out_features,
        activation_function="relu",     # activation: Marian's default is "gelu"; the paper's FFN is ReLU
        scale_embedding=True,           # embedding scale: Marian's default is False (×1); the paper multiplies by √d_model
        share_encoder_decoder_embeddings=True,   # shared embeddings: one matrix for source and target ...
        tie_word_embeddings=True,       # ... and for the output projection: the reader's tie_weights=True
        dropout=0.0, attention_dropout=0.0, activation_dropout=0.0,   # dropout: off (eval either way)
        # padding_idx: Marian's nn.Embedding(padding_idx=pad) only zeroes that row's gradient (and its
        # initial value); the copied weights overwrite the row, and no test computes gradients
        pad_token_id=BOS, decoder_start_token_id=BOS,
        eos_token_id=None, forced_eos_token_id=None)   # no stopping rule: the reader's greedy_decode gets eos_id=None


def to_marian(ours: Transformer) -> MarianMTModel:
    """A MarianMTModel (float64, eval) computing the reader's model. What differs, and how it is mapped:

    sinusoid layout: the reader's PE interleaves (dim 2i = sin, 2i+1 = cos, the paper's §3.5); Marian puts
    the sines of all frequencies in the first half and the cosines in the second. Marian's table is the
    reader's with its columns permuted by P = interleaved_to_half(d) = [0, 2, 4, …, 1, 3, 5, …].
    Rather than overwrite Marian's table, every weight is moved into the permuted basis of the residual
    stream: a weight that reads the stream has its input columns permuted, one that writes it has its
    output rows permuted, and LayerNorm's gain and bias are permuted. LayerNorm's mean and variance and
    the dot products of attention do not change under a permutation of coordinates, so the permuted model
    is the same function, and the tied output projection (columns permuted) gives the same logits.
    """
    from transformers import MarianMTModel

    ref = MarianMTModel(marian_config(ours)).to(F64).eval()
    p = interleaved_to_half(ours.d_model)
    reads = lambda w: w[:, p]             # noqa: E731  (d_in = d_model: permute the input columns)
    writes = lambda w: w[p]               # noqa: E731  (d_out = d_model: permute the output rows / the vector)
    state = {}
    embedding = reads(ours.src_embed.weight)
    # shared embeddings: Marian's state dict names the one matrix four times; all get the same tensor
    for name in ("model.shared", "model.encoder.embed_tokens", "model.decoder.embed_tokens", "lm_head"):
        state[f"{name}.weight"] = embedding
    for side, layers in (("encoder", ours.encoder_layers), ("decoder", ours.decoder_layers)):
        for i, layer in enumerate(layers):
            prefix = f"model.{side}.layers.{i}."
            # cross-attention: Marian calls it encoder_attn; its K, V read the encoder output, which lives in
            # the same (permuted) residual basis
            attentions = [("self_attn", layer.self_attn)]
            if side == "decoder":
                attentions.append(("encoder_attn", layer.cross_attn))
            for name, attn in attentions:
                # separate projections (not fused): q_proj, k_proj, v_proj, out_proj; the scale is
                # head_dim ** -0.5 = 1/√d_k on both sides
                for proj, lin in (("q_proj", attn.w_q), ("k_proj", attn.w_k), ("v_proj", attn.w_v)):
                    state[f"{prefix}{name}.{proj}.weight"] = reads(lin.weight)
                    state[f"{prefix}{name}.{proj}.bias"] = lin.bias
                state[f"{prefix}{name}.out_proj.weight"] = writes(attn.w_o.weight)
                state[f"{prefix}{name}.out_proj.bias"] = writes(attn.w_o.bias)
            state[prefix + "fc1.weight"] = reads(layer.ffn.linear1.weight)   # FFN: fc1, fc2 = linear1, linear2
            state[prefix + "fc1.bias"] = layer.ffn.linear1.bias
            state[prefix + "fc2.weight"] = writes(layer.ffn.linear2.weight)
            state[prefix + "fc2.bias"] = writes(layer.ffn.linear2.bias)
            # post-LN, no final LayerNorm on either side: the same order as the reader's norm1, norm2(, norm3)
            norms = ["self_attn_layer_norm", "encoder_attn_layer_norm", "final_layer_norm"]
            mine = [layer.norm1, layer.norm2] + ([layer.norm3] if side == "decoder" else [])
            for name, norm in zip(norms if side == "decoder" else norms[::2], mine):
                state[f"{prefix}{name}.weight"] = writes(norm.weight)
                state[f"{prefix}{name}.bias"] = writes(norm.bias)
    missing, unexpected = ref.load_state_dict({k: v.detach().clone() for k, v in state.items()}, strict=False)
    # not copied, on purpose: Marian's own sinusoid tables (the permuted basis makes them right), and
    # final_logits_bias, a (1, V) buffer Marian adds to the logits, zeros here as the reader has no output bias
    assert sorted(missing) == ["final_logits_bias", "model.decoder.embed_positions.weight",
                               "model.encoder.embed_positions.weight"] and not unexpected, (missing, unexpected)
    assert ref.final_logits_bias.abs().max() == 0
    # position offset: Marian numbers positions from 0, and from past_key_values_length while decoding
    # with a cache, as the reader's PositionalEncoding(offset=t) does (BART's learned table adds 2; Marian has none)
    return ref


def model(seed: int = 1) -> Transformer:
    torch.manual_seed(seed)
    return randomize_(Transformer(V, D, H, LAYERS, D_FF, dropout=0.0, max_len=MAX_LEN).double(), seed).eval()


def batch():
    src = torch.randint(0, V - 1, (2, 7), generator=gen(2))
    tgt = torch.cat([torch.full((2, 1), BOS), torch.randint(0, V - 1, (2, 4), generator=gen(3))], dim=1)
    return src, tgt, padding_mask([7, 4], 7)        # (2, 1, 7): the second source has 3 pads


def test_marian_sinusoid_is_the_readers_with_columns_permuted():
    """Marian's table = the reader's PE with columns P = [0, 2, …, 1, 3, …] (sin half, cos half), to
    float32 rounding (Marian builds it in NumPy float64 and stores a float32 copy)."""
    ref = to_marian(model())
    ours = sinusoidal_positional_encoding(MAX_LEN, D, F64)
    table = ref.model.encoder.embed_positions.weight
    assert (table - ours[:, interleaved_to_half(D)]).abs().max() < 1e-7
    assert (table - ours).abs().max() > 0.5                       # unpermuted: a different layout


@pytest.mark.claim("ch02-equals-marian", paper="§3.4–§3.5",
                   title="论文的 Transformer 与 Hugging Face MarianMTModel",
                   text="relu、嵌入乘 √d_model、三处共享嵌入、final_logits_bias 为 0，残差流坐标按正弦表的排法置换后，读者模型与 "
                        "MarianMTModel 的 logits 相差 < 1e-6；带 KV 缓存的贪心解码与 generate 逐词相同")
def test_marian_logits_equal_the_readers():
    """Same logits (float64; Marian's float32 sinusoid table bounds the difference at ~1e-7), padded batch;
    the same weights copied without the permutation P give different logits."""
    ours = model()
    ref = to_marian(ours)
    src, tgt, keep = batch()
    with torch.no_grad():
        logits = ours(src, tgt, keep)                                          # (2, 5, V)
        theirs = ref(input_ids=src, attention_mask=keep[:, 0].long(), decoder_input_ids=tgt).logits
        assert (logits - theirs).abs().max() < 1e-6
        # without the permutation the sinusoid layouts disagree: put the reader's interleaved table in
        ref.model.encoder.embed_positions.weight.copy_(ref.model.encoder.embed_positions.weight[:, torch.argsort(
            interleaved_to_half(D))])
        wrong = ref(input_ids=src, attention_mask=keep[:, 0].long(), decoder_input_ids=tgt).logits
        assert (logits - wrong).abs().max() > 1e-2


def test_marian_greedy_generate_equals_the_readers_greedy_decode():
    """The reader's greedy_decode (DecoderCache, positions offset by the cache length) gives the same
    tokens as Marian's generate(do_sample=False, num_beams=1), which starts from decoder_start_token_id,
    and the same logits at every step (a tiny random model repeats tokens; the logits still differ per step)."""
    ours = model()
    ref = to_marian(ours)
    src, _, keep = batch()
    with torch.no_grad():
        tokens, logits = greedy_decode(ours, src, 8, bos_id=BOS, src_mask=keep, return_logits=True)  # (2, 8), (2, 8, V)
        out = ref.generate(input_ids=src, attention_mask=keep[:, 0].long(), max_new_tokens=8, do_sample=False,
                           num_beams=1, output_logits=True, return_dict_in_generate=True)
    assert out.sequences[:, 0].tolist() == [BOS, BOS]                          # (2, 9): BOS first
    assert tokens.tolist() == out.sequences[:, 1:].tolist()
    theirs = torch.stack(out.logits, dim=1)                                     # (2, 8, V)
    assert (logits - theirs).abs().max() < 1e-6
    assert (logits[:, 1:] - logits[:, :-1]).abs().max() > 1e-2                  # the steps do differ
