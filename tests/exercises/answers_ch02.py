"""第 02 章练习的答案（见 answers_ch01.py 的说明）。"""

import torch

from snippets.attention import causal_mask as _causal


def _check_n(n):
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"n must be an int, got {type(n).__name__}")
    if n < 1:
        raise ValueError(f"n must be >= 1, got n={n}")


def mask_triu(n):
    _check_n(n)
    return torch.ones(n, n, dtype=torch.bool).triu()  # 看的是未来


def mask_strict(n):
    _check_n(n)
    return torch.ones(n, n, dtype=torch.bool).tril(-1)  # 看不到自己


def mask_float(n):
    _check_n(n)
    return torch.ones(n, n).tril()


def mask_no_check(n):
    return torch.ones(n, n, dtype=torch.bool).tril()


def mask_by_arange(n):
    _check_n(n)
    i = torch.arange(n)
    return i[None, :] <= i[:, None]


def _check_lengths(lengths, n):
    if lengths.is_floating_point() or lengths.dtype == torch.bool:
        raise TypeError(f"lengths must be integers, got {lengths.dtype}")
    if ((lengths < 0) | (lengths > n)).any():
        raise ValueError(f"lengths must lie in [0, {n}], got {lengths.tolist()}")


def dmask_no_padding(lengths, n):
    _check_lengths(lengths, n)
    return _causal(n).expand(lengths.shape[0], n, n).clone()


def dmask_padding_on_queries(lengths, n):
    _check_lengths(lengths, n)
    pad = torch.arange(n) < lengths[:, None]  # (batch, n)
    return _causal(n) & pad[:, :, None]  # 遮成了查询


def dmask_no_causal(lengths, n):
    _check_lengths(lengths, n)
    pad = torch.arange(n) < lengths[:, None]
    return pad[:, None, :].expand(-1, n, -1).clone()


def dmask_no_check(lengths, n):
    pad = torch.arange(n) < torch.as_tensor(lengths)[:, None]
    return _causal(n) & pad[:, None, :]


def dmask_loops(lengths, n):
    _check_lengths(lengths, n)
    out = torch.zeros(lengths.shape[0], n, n, dtype=torch.bool)
    for b, length in enumerate(lengths.tolist()):
        for i in range(n):
            for j in range(min(i + 1, length)):
                out[b, i, j] = True
    return out


def _check_memory(layer, y, memory):
    if memory.shape[-1] != layer.d_model or memory.shape[0] != y.shape[0]:
        raise ValueError(f"memory {tuple(memory.shape)} does not match y {tuple(y.shape)}")


def _layer(layer, y, memory, memory_mask=None, causal=True, pre=False, mask_self=False,
           check=True):
    if check:
        _check_memory(layer, y, memory)
    m = y.shape[1]
    self_mask = _causal(m) if causal else None
    if mask_self:
        self_mask = memory_mask
        memory_mask = None

    def block(x, f, norm):
        return x + f(norm(x)) if pre else norm(x + f(x))

    with torch.no_grad():
        y = block(y, lambda h: layer.self_attn(h, h, h, self_mask)[0], layer.norm1)
        y = block(y, lambda h: layer.cross_attn(h, memory, memory, memory_mask)[0], layer.norm2)
        return block(y, layer.ffn, layer.norm3)


def layer_no_causal(layer, y, memory, memory_mask=None):
    return _layer(layer, y, memory, memory_mask, causal=False)


def layer_pre_ln(layer, y, memory, memory_mask=None):
    return _layer(layer, y, memory, memory_mask, pre=True)


def layer_norms_swapped(layer, y, memory, memory_mask=None):
    _check_memory(layer, y, memory)
    with torch.no_grad():
        y = layer.norm2(y + layer.self_attn(y, y, y, _causal(y.shape[1]))[0])  # norm1 与 norm2 用反了
        y = layer.norm1(y + layer.cross_attn(y, memory, memory, memory_mask)[0])
        return layer.norm3(y + layer.ffn(y))


def layer_ignores_memory_mask(layer, y, memory, memory_mask=None):
    return _layer(layer, y, memory, None)


def layer_no_check(layer, y, memory, memory_mask=None):
    return _layer(layer, y, memory, memory_mask, check=False)


def layer_explicit_mask(layer, y, memory, memory_mask=None):
    """写法不同：因果掩码用 triu 的补集造，三个子层手写，不用 lambda。"""
    _check_memory(layer, y, memory)
    m = y.shape[1]
    mask = ~torch.ones(m, m, dtype=torch.bool).triu(1)
    with torch.no_grad():
        a, _ = layer.self_attn(y, y, y, mask=mask)
        y = layer.norm1(y + a)
        c, _ = layer.cross_attn(y, memory, memory, mask=memory_mask)
        y = layer.norm2(y + c)
        return layer.norm3(y + layer.ffn(y))


WRONG = {
    "ch02.causal_mask": [("matches", mask_triu), ("matches", mask_strict), ("matches", mask_float),
                         ("bad-n", mask_no_check)],
    "ch02.decoder_mask": [("matches", dmask_no_padding), ("matches", dmask_padding_on_queries),
                          ("matches", dmask_no_causal), ("bad-lengths", dmask_no_check)],
    "ch02.decoder_layer": [("causal", layer_no_causal), ("matches", layer_pre_ln), ("matches", layer_norms_swapped),
                           ("memory-mask", layer_ignores_memory_mask), ("bad-memory", layer_no_check)],
}
RIGHT = {"ch02.causal_mask": [mask_by_arange], "ch02.decoder_mask": [dmask_loops],
         "ch02.decoder_layer": [layer_explicit_mask]}
