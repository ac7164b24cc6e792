"""The reader's 2017 Transformer (snippets/transformer.py) against torch.nn.Transformer, the whole model:
the reader's weights copied into PyTorch's, encoder and decoder outputs equal in float64 (post-LN and
pre-LN). Every convention that differs is mapped, one comment each, in ``to_torch_transformer``.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from snippets.attention import padding_mask
from snippets.transformer import Transformer
from tests.support.reference import F64, gen, load_mha, load_sublayers, randomize_

V, D, H, LAYERS, D_FF, MAX_LEN = 40, 16, 4, 2, 24, 32


def to_torch_transformer(ours: Transformer) -> nn.Transformer:
    """An nn.Transformer holding the reader's weights. What differs, and how it is mapped:"""
    layer = ours.encoder_layers[0]
    # d_k: nn.MultiheadAttention has no separate head width for queries and keys (its kdim/vdim are the
    #   widths of the key and value *inputs*), so a reader model built with d_k != d_model / h is refused.
    if layer.self_attn.d_k != layer.self_attn.d_head:
        raise NotImplementedError(f"nn.Transformer has no d_k != d_model/h: d_k={layer.self_attn.d_k}, "
                                  f"d_model/h={layer.self_attn.d_head}")
    ref = nn.Transformer(
        ours.d_model, ours.num_heads, ours.num_layers, ours.num_layers,
        dim_feedforward=layer.ffn.linear1.out_features,
        dropout=0.0,             # dropout: the same places (§5.4 and tensor2tensor's relu_dropout); off in eval
        activation="relu",       # activation: the paper's max(0, ·); nn's default too, written out
        layer_norm_eps=layer.norm1.eps,   # LayerNorm ε: 1e-5 on both sides
        batch_first=True,        # layout: the reader's tensors are (batch, n, d); nn's default is (n, batch, d)
        norm_first=ours.encoder_layers[0].norm_first,
        dtype=ours.src_embed.weight.dtype)
    for theirs, mine in zip(ref.encoder.layers, ours.encoder_layers):
        # fused projections: nn keeps W^Q, W^K, W^V stacked row-wise in one in_proj_weight (3d, d)
        #   and in_proj_bias (3d,); W^O is out_proj (tests/support/reference.load_mha)
        load_mha(mine.self_attn, theirs.self_attn)
        # FFN and LayerNorms: the same names (linear1, linear2, norm1, norm2), copied as they are
        load_sublayers(mine, theirs)
    for theirs, mine in zip(ref.decoder.layers, ours.decoder_layers):
        load_mha(mine.self_attn, theirs.self_attn)
        load_mha(mine.cross_attn, theirs.multihead_attn)   # cross-attention: nn calls it multihead_attn
        load_sublayers(mine, theirs, ("norm1", "norm2", "norm3"))
    # final LayerNorm: nn.Transformer ends both stacks in a LayerNorm whatever norm_first is; the
    #   reader's post-LN model has none (the paper's last sublayer already ends in LN), its pre-LN
    #   model has one per stack. So: post-LN -> remove nn's (norm=None), pre-LN -> copy the reader's.
    if ours.encoder_layers[0].norm_first:
        load_norm(ours.encoder_norm, ref.encoder.norm)
        load_norm(ours.decoder_norm, ref.decoder.norm)
    else:
        ref.encoder.norm = None
        ref.decoder.norm = None
    # embeddings, √d_model scale, positional encoding and the output projection are not part of
    #   nn.Transformer: it starts at embedding·√d + PE and ends at the last layer's output, so those
    #   stay with the reader's model (embed() below; ours.output_projection)
    return ref.eval()


def load_norm(mine: nn.LayerNorm, theirs: nn.LayerNorm) -> None:
    with torch.no_grad():
        theirs.weight.copy_(mine.weight)
        theirs.bias.copy_(mine.bias)


def embed(ours: Transformer, tokens: torch.Tensor, target: bool = False) -> torch.Tensor:
    """What nn.Transformer takes as input: the reader's embedding·√d_model + PE, (batch, n, d)."""
    return ours.positional((ours.tgt_embed if target else ours.src_embed)(tokens))


def torch_masks(keep: torch.Tensor, m: int) -> dict:
    """The reader's masks as nn.Transformer's arguments.

    - padding: the reader's bool mask is True = may attend, (batch, 1, n) from padding_mask; nn's
      *_key_padding_mask is True = ignore this key, (batch, n): the complement of its row;
    - causal: the reader's decode builds tril itself; nn needs tgt_mask (float, -inf above the
      diagonal) and tgt_is_causal only as a hint that the mask is causal.
    """
    return {"src_key_padding_mask": ~keep[:, 0], "memory_key_padding_mask": ~keep[:, 0],
            "tgt_mask": nn.Transformer.generate_square_subsequent_mask(m, dtype=F64), "tgt_is_causal": True}


def model(norm_first: bool, seed: int = 1) -> Transformer:
    torch.manual_seed(seed)
    ours = Transformer(V, D, H, LAYERS, D_FF, dropout=0.0, max_len=MAX_LEN, norm_first=norm_first).double()
    return randomize_(ours, seed).eval()


@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors:UserWarning",
                            "ignore:enable_nested_tensor is True:UserWarning")
@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
@pytest.mark.claim("ch02-equals-nn-transformer", paper="§3.1–§3.3",
                   title="论文的 Transformer 与 torch.nn.Transformer",
                   text="复制权重后，读者的编码器输出、解码器输出与 torch.nn.Transformer 相差 < 1e-12（post-LN 与 pre-LN，"
                        "带填充的批）；post-LN 要删掉 nn.Transformer 两个栈末尾的 LayerNorm")
def test_whole_model_equals_nn_transformer(norm_first):
    """Encoder output, decoder output and logits equal nn.Transformer's to 1e-12 (float64), with a
    padded source batch; nn's post-LN encoder returns exact zeros at padded positions."""
    ours = model(norm_first)
    ref = to_torch_transformer(ours)
    src = torch.randint(0, V, (2, 7), generator=gen(2))
    tgt = torch.randint(0, V, (2, 5), generator=gen(3))
    keep = padding_mask([7, 4], 7)                                  # (2, 1, 7): second source has 3 pads
    masks = torch_masks(keep, tgt.shape[1])
    real = keep[:, 0]                                               # (2, 7) True = a real source token
    with torch.no_grad():
        memory = ours.encode(src, keep)
        memory_ref = ref.encoder(embed(ours, src), src_key_padding_mask=masks["src_key_padding_mask"])
        assert (memory - memory_ref)[real].abs().max() < 1e-12
        # padded positions: post-LN in eval takes nn's nested-tensor fast path, which returns exact 0
        # there; the reader keeps whatever the layers computed (only masked keys ever read them)
        padded = memory_ref[~real]
        assert padded.abs().max() == 0 if not norm_first else padded.abs().max() > 0.1
        y = ours.decode(tgt, memory, keep)
        y_ref = ref.decoder(embed(ours, tgt, target=True), memory_ref, tgt_mask=masks["tgt_mask"],
                            tgt_is_causal=True, memory_key_padding_mask=masks["memory_key_padding_mask"])
        assert (y - y_ref).abs().max() < 1e-12
        assert (ours(src, tgt, keep) - ours.output_projection(y_ref)).abs().max() < 1e-12


def test_nn_transformers_default_final_norm_is_not_post_ln():
    """The final-LayerNorm mapping is needed: left in, nn's extra LayerNorm changes a post-LN model's output."""
    ours = model(norm_first=False)
    ref = to_torch_transformer(ours)
    ref.encoder.norm = nn.LayerNorm(D, dtype=F64)                  # what nn.Transformer(norm_first=False) has
    src = torch.randint(0, V, (2, 7), generator=gen(2))
    with torch.no_grad():
        assert (ours.encode(src) - ref.encoder(embed(ours, src))).abs().max() > 1e-3
