"""第 04 章练习的答案（见 answers_ch01.py 的说明）。"""

import math

import torch


def _check_h(x, num_heads):
    if x.shape[-1] % num_heads:
        raise ValueError(f"num_heads={num_heads} does not divide d_model={x.shape[-1]}")


def split_direct_view(x, num_heads):
    _check_h(x, num_heads)
    b, n, d = x.shape
    return x.view(b, num_heads, n, d // num_heads)  # 把不同位置混进一个头


def split_interleaved(x, num_heads):
    _check_h(x, num_heads)
    b, n, d = x.shape
    return x.view(b, n, d // num_heads, num_heads).permute(0, 3, 1, 2)  # 第 i 个头取了每隔 h 维的一维


def split_no_transpose(x, num_heads):
    _check_h(x, num_heads)
    b, n, d = x.shape
    return x.view(b, n, num_heads, d // num_heads)


def split_no_check(x, num_heads):
    b, n, d = x.shape
    return x.reshape(b, n, num_heads, -1).transpose(1, 2)


def split_by_chunks(x, num_heads):
    if not isinstance(num_heads, int) or num_heads < 1 or x.shape[-1] % num_heads:
        raise ValueError(f"num_heads={num_heads} must divide d_model={x.shape[-1]}")
    return torch.stack(x.chunk(num_heads, dim=-1), dim=1)


def _check_query(mha, query):
    if query.shape[-1] != mha.d_model:
        raise ValueError(f"query {tuple(query.shape)} does not have d_model={mha.d_model}")


def _mha(mha, query, key, value, mask, split="right", scale=None, w_o=True, unsqueeze=True, check=True):
    if check:
        _check_query(mha, query)
    b, n_q, d = query.shape
    h = mha.num_heads

    def heads(x):
        if split == "direct":
            return x.reshape(b, h, x.shape[1], -1)
        return x.view(b, x.shape[1], h, -1).transpose(1, 2)

    with torch.no_grad():
        q, k, v = heads(mha.w_q(query)), heads(mha.w_k(key)), heads(mha.w_v(value))
        s = q @ k.transpose(-2, -1) / math.sqrt(scale or q.shape[-1])
        if mask is not None:
            m = mask.unsqueeze(1) if unsqueeze else mask
            s = s.masked_fill(~m, float("-inf"))
        w = torch.softmax(s, -1)
        out = (w @ v).transpose(1, 2).reshape(b, n_q, d)
        return (mha.w_o(out) if w_o else out), w


def mha_direct_view(mha, query, key, value, mask=None):
    return _mha(mha, query, key, value, mask, split="direct")


def mha_scale_d_model(mha, query, key, value, mask=None):
    return _mha(mha, query, key, value, mask, scale=mha.d_model)


def mha_no_w_o(mha, query, key, value, mask=None):
    return _mha(mha, query, key, value, mask, w_o=False)


def mha_mask_not_unsqueezed(mha, query, key, value, mask=None):
    return _mha(mha, query, key, value, mask, unsqueeze=False)


def mha_no_check(mha, query, key, value, mask=None):
    return _mha(mha, query, key, value, mask, check=False)


def mha_head_loop(mha, query, key, value, mask=None):
    """写法不同：一个头一个头地算（切出 W_i^Q 的列），拼接后乘 W^O。"""
    _check_query(mha, query)
    d_head = mha.d_model // mha.num_heads
    with torch.no_grad():
        q, k, v = mha.w_q(query), mha.w_k(key), mha.w_v(value)
        outs, weights = [], []
        for i in range(mha.num_heads):
            sl = slice(i * d_head, (i + 1) * d_head)
            s = q[..., sl] @ k[..., sl].transpose(1, 2) / math.sqrt(d_head)
            if mask is not None:
                s = s.masked_fill(~mask, float("-inf"))
            w = torch.softmax(s, -1)
            outs.append(w @ v[..., sl])
            weights.append(w)
        return mha.w_o(torch.cat(outs, -1)), torch.stack(weights, 1)


def _gqa(gqa, query, key, value, mask, repeat="interleave", view_heads=None, check=True):
    if check and key.shape[1] != value.shape[1]:
        raise ValueError(f"value {tuple(value.shape)} and key {tuple(key.shape)} differ in length")
    b, n_q, d = query.shape
    n_k = key.shape[1]
    g, dh = gqa.n_heads // gqa.n_kv_heads, d // gqa.n_heads
    kv_heads = view_heads or gqa.n_kv_heads
    with torch.no_grad():
        q = gqa.w_q(query).view(b, n_q, gqa.n_heads, dh).transpose(1, 2)
        k = gqa.w_k(key).reshape(b, n_k, kv_heads, -1).transpose(1, 2)
        v = gqa.w_v(value).reshape(b, n_k, kv_heads, -1).transpose(1, 2)
        if repeat == "interleave":
            k, v = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
        else:
            k, v = k.repeat(1, g, 1, 1), v.repeat(1, g, 1, 1)
        s = q @ k.transpose(-2, -1) / math.sqrt(dh)
        if mask is not None:
            s = s.masked_fill(~mask.unsqueeze(1), float("-inf"))
        w = torch.softmax(s, -1)
        return gqa.w_o((w @ v).transpose(1, 2).reshape(b, n_q, d)), w


def gqa_repeat(gqa, query, key, value, mask=None):
    return _gqa(gqa, query, key, value, mask, repeat="tile")


def gqa_view_n_heads(gqa, query, key, value, mask=None):
    return _gqa(gqa, query, key, value, mask, view_heads=gqa.n_heads)


def gqa_no_check(gqa, query, key, value, mask=None):
    return _gqa(gqa, query, key, value, mask, check=False)


def gqa_group_index(gqa, query, key, value, mask=None):
    """写法不同：不复制 K、V，把查询头排成 (n_kv_heads, g) 两维，用广播。"""
    if key.shape[1] != value.shape[1]:
        raise ValueError(f"value has {value.shape[1]} positions but key has {key.shape[1]}")
    b, n_q, d = query.shape
    n_k, H, G = key.shape[1], gqa.n_heads, gqa.n_kv_heads
    dh = d // H
    with torch.no_grad():
        q = gqa.w_q(query).view(b, n_q, G, H // G, dh).permute(0, 2, 3, 1, 4)  # (b, G, g, n_q, dh)
        k = gqa.w_k(key).view(b, n_k, G, dh).transpose(1, 2)[:, :, None]  # (b, G, 1, n_k, dh)
        v = gqa.w_v(value).view(b, n_k, G, dh).transpose(1, 2)[:, :, None]
        s = q @ k.transpose(-2, -1) / math.sqrt(dh)
        if mask is not None:
            s = s.masked_fill(~mask[:, None, None], float("-inf"))
        w = torch.softmax(s, -1)
        out = (w @ v).reshape(b, H, n_q, dh).transpose(1, 2).reshape(b, n_q, d)
        return gqa.w_o(out), w.reshape(b, H, n_q, n_k)


def _params(d_model, n_heads, n_kv_heads, bias, kv_width=None, bias_each=None):
    if n_heads % n_kv_heads:
        raise ValueError(f"n_kv_heads={n_kv_heads} must divide n_heads={n_heads}")
    d_kv = kv_width if kv_width is not None else n_kv_heads * (d_model // n_heads)
    weights = 2 * d_model * d_model + 2 * d_model * d_kv
    if not bias:
        return weights
    return weights + (4 * d_model if bias_each == "d_model" else 2 * d_model + 2 * d_kv)


def params_forgot_bias(d_model, n_heads, n_kv_heads, bias=True):
    return _params(d_model, n_heads, n_kv_heads, False)


def params_kv_full_width(d_model, n_heads, n_kv_heads, bias=True):
    return _params(d_model, n_heads, n_kv_heads, bias, kv_width=d_model)


def params_bias_d_model(d_model, n_heads, n_kv_heads, bias=True):
    return _params(d_model, n_heads, n_kv_heads, bias, bias_each="d_model")


def params_no_check(d_model, n_heads, n_kv_heads, bias=True):
    d_kv = n_kv_heads * (d_model // n_heads)
    return 2 * d_model * d_model + 2 * d_model * d_kv + ((2 * d_model + 2 * d_kv) if bias else 0)


def params_by_modules(d_model, n_heads, n_kv_heads, bias=True):
    """写法不同：真的建出四个 nn.Linear 再数。"""
    if n_heads % n_kv_heads:
        raise ValueError(f"n_heads={n_heads} is not divisible by n_kv_heads={n_kv_heads}")
    d_kv = n_kv_heads * d_model // n_heads
    layers = [torch.nn.Linear(d_model, w, bias=bias, device="meta") for w in (d_model, d_kv, d_kv, d_model)]
    return sum(p.numel() for layer in layers for p in layer.parameters())


WRONG = {
    "ch04.split_heads": [("matches", split_direct_view), ("matches", split_interleaved),
                         ("matches", split_no_transpose), ("bad-num_heads", split_no_check)],
    "ch04.multi_head_attention": [("matches", mha_direct_view), ("matches", mha_scale_d_model), ("matches", mha_no_w_o),
                                  ("mask", mha_mask_not_unsqueezed), ("bad-query", mha_no_check)],
    "ch04.grouped_query_attention": [("grouping", gqa_repeat), ("mqa", gqa_view_n_heads), ("bad-value", gqa_no_check)],
    "ch04.attention_params": [("matches", params_forgot_bias), ("matches", params_kv_full_width),
                              ("matches", params_bias_d_model), ("bad-n_kv_heads", params_no_check)],
}
RIGHT = {"ch04.split_heads": [split_by_chunks], "ch04.multi_head_attention": [mha_head_loop],
         "ch04.grouped_query_attention": [gqa_group_index], "ch04.attention_params": [params_by_modules]}
