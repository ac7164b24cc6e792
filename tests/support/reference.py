"""PyTorch's own modules loaded with the weights of ours, so that the two can be compared exactly."""

from __future__ import annotations

import torch

F64 = torch.float64


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def load_mha(ours, theirs: torch.nn.MultiheadAttention) -> torch.nn.MultiheadAttention:
    """Our w_q, w_k, w_v stacked row-wise are torch's in_proj; w_o is its out_proj."""
    with torch.no_grad():
        theirs.in_proj_weight.copy_(torch.cat([ours.w_q.weight, ours.w_k.weight, ours.w_v.weight]))
        theirs.out_proj.weight.copy_(ours.w_o.weight)
        if ours.w_q.bias is not None:
            theirs.in_proj_bias.copy_(torch.cat([ours.w_q.bias, ours.w_k.bias, ours.w_v.bias]))
            theirs.out_proj.bias.copy_(ours.w_o.bias)
    return theirs


def torch_mha(ours, dtype=F64) -> torch.nn.MultiheadAttention:
    ref = torch.nn.MultiheadAttention(ours.d_model, ours.num_heads, bias=ours.w_q.bias is not None,
                                      batch_first=True, dtype=dtype)
    return load_mha(ours, ref)


def load_sublayers(ours, theirs, norms=("norm1", "norm2")) -> None:
    """FFN (linear1, linear2) and LayerNorms of an encoder/decoder layer into torch's layer."""
    with torch.no_grad():
        for name in ("linear1", "linear2"):
            getattr(theirs, name).weight.copy_(getattr(ours.ffn, name).weight)
            getattr(theirs, name).bias.copy_(getattr(ours.ffn, name).bias)
        for name in norms:
            getattr(theirs, name).weight.copy_(getattr(ours, name).weight)
            getattr(theirs, name).bias.copy_(getattr(ours, name).bias)


def torch_encoder_layer(ours, d: int, h: int, d_ff: int, dtype=F64) -> torch.nn.TransformerEncoderLayer:
    ref = torch.nn.TransformerEncoderLayer(d, h, d_ff, dropout=0.0, activation="relu", batch_first=True,
                                           norm_first=ours.norm_first, dtype=dtype).eval()
    load_mha(ours.self_attn, ref.self_attn)
    load_sublayers(ours, ref)
    return ref


def torch_decoder_layer(ours, d: int, h: int, d_ff: int, dtype=F64) -> torch.nn.TransformerDecoderLayer:
    ref = torch.nn.TransformerDecoderLayer(d, h, d_ff, dropout=0.0, batch_first=True,
                                           norm_first=ours.norm_first, dtype=dtype).eval()
    load_mha(ours.self_attn, ref.self_attn)
    load_mha(ours.cross_attn, ref.multihead_attn)
    load_sublayers(ours, ref, ("norm1", "norm2", "norm3"))
    return ref


def torch_rnn(ours, dtype=F64) -> torch.nn.RNN:
    """Our RNNLayer as nn.RNN (tanh): its single bias goes into bias_ih, bias_hh stays 0."""
    cell = ours.cell
    ref = torch.nn.RNN(cell.input_size, cell.hidden_size, batch_first=True, dtype=dtype)
    with torch.no_grad():
        ref.weight_ih_l0.copy_(cell.w_xh)
        ref.weight_hh_l0.copy_(cell.w_hh)
        ref.bias_ih_l0.copy_(cell.b)
        ref.bias_hh_l0.zero_()
    return ref


def torch_lstm(ours, dtype=F64) -> torch.nn.LSTM:
    """Our LSTMLayer as nn.LSTM (same gate order i, f, g, o): bias into bias_ih, bias_hh stays 0."""
    cell = ours.cell
    ref = torch.nn.LSTM(cell.input_size, cell.hidden_size, batch_first=True, dtype=dtype)
    with torch.no_grad():
        ref.weight_ih_l0.copy_(cell.w_ih)
        ref.weight_hh_l0.copy_(cell.w_hh)
        ref.bias_ih_l0.copy_(cell.b)
        ref.bias_hh_l0.zero_()
    return ref


def rand(*shape, seed: int = 0, dtype=F64) -> torch.Tensor:
    """Standard-normal tensor from its own seeded generator (float64 unless told)."""
    return torch.randn(*shape, generator=gen(seed), dtype=dtype)


def randomize_(module: torch.nn.Module, seed: int = 0) -> torch.nn.Module:
    """Draw every parameter afresh from one seeded generator, so that a weight copied to the wrong place
    shows in the outputs: matrices N(0, 1/fan_in), norm gains 1 + U(-0.5, 0.5), other vectors (biases)
    U(-0.5, 0.5). Default inits (gains 1, biases 0) would hide a swapped or forgotten LayerNorm or bias.
    A shared parameter is drawn once. Returns the module."""
    g = gen(seed)
    with torch.no_grad():
        for name, p in module.named_parameters():
            if p.dim() >= 2:
                p.copy_(torch.randn(p.shape, generator=g, dtype=F64) / p.shape[-1] ** 0.5)
            elif "norm" in name and not name.endswith("bias"):
                p.copy_(1 + torch.rand(p.shape, generator=g, dtype=F64) - 0.5)
            else:
                p.copy_(torch.rand(p.shape, generator=g, dtype=F64) - 0.5)
    return module
