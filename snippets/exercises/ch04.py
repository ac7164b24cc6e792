"""第 04 章的练习：拆头、多头注意力、分组查询注意力（GQA）、注意力层的参数量。
参考答案：snippets/attention.py（MultiHeadAttention）、snippets/multihead.py。"""

from __future__ import annotations

from types import SimpleNamespace

import torch

from snippets import attention, multihead
from snippets.exercises.core import Case, Exercise, Property, Text, matches_reference, raises, randn, register

DERIV = "04-multi-head/derivation.md"
COST = "04-multi-head/derivation-cost.md"
CODE = ("04-multi-head/code.md", "code")
DTYPES = [torch.float64, torch.float32]


# --------------------------------------------------------------------------- split_heads
def _ref_split(x, num_heads):
    if not isinstance(num_heads, int) or num_heads < 1 or x.shape[-1] % num_heads:
        raise ValueError(f"num_heads={num_heads!r} must be a positive int dividing d_model: x {tuple(x.shape)}")
    return attention.MultiHeadAttention._split_heads(SimpleNamespace(num_heads=num_heads), x)


def _make_split(rng, batch, n, heads, d_head, dtype):
    return Case((randn(rng, batch, n, heads * d_head, dtype=dtype), heads))


register(Exercise(
    id="ch04.split_heads", questions=("4.5",), name="split_heads", title="拆头",
    signature="split_heads(x, num_heads)",
    statement="把拼在一起的 d_model 维拆成 num_heads 个头：第 i 个头是第 i 段连续的 d_head = d_model / h 维"
              "（w_q 的第 i 段输出列就是 W_i^Q），再把头这一维挪到位置那一维之前。",
    shapes="x (batch, n, d_model)，num_heads 整除 d_model → (batch, num_heads, n, d_head)。",
    bad_input="num_heads 不整除 d_model（或不是正整数）：ValueError，报错信息写出 num_heads。",
    reference=_ref_split, solution=CODE,
    stub='''def split_heads(x, num_heads):
    """x (batch, n, d_model) → (batch, num_heads, n, d_model // num_heads)，第 i 个头是第 i 段连续的 d_head 维。
    num_heads 不整除 d_model：ValueError（写出 num_heads）。"""
    raise NotImplementedError("在这里写你的实现")
''',
    properties=[
        Property("matches", "第 i 个头是第 i 段连续的 d_head 维，形状 (batch, h, n, d_head)",
                 "先 view 成 (batch, n, h, d_head)，再交换 n 与 h 两维；直接 view 成 (batch, h, n, d_head) 会把不同位置的数混进一个头。",
                 DERIV, "reshape", _make_split, matches_reference(),
                 dims={"batch": [1, 2], "n": [1, 2, 3, 5], "heads": [1, 2, 3, 4], "d_head": [1, 2, 3], "dtype": DTYPES}),
        Property("bad-num_heads", "num_heads 不整除 d_model：ValueError，并写出参数名 num_heads",
                 "检查 x.shape[-1] % num_heads == 0。", DERIV, "reshape",
                 lambda rng: Case((randn(rng, 1, 2, 6), 4), note="d_model = 6，num_heads = 4"), raises("num_heads")),
    ],
))


# --------------------------------------------------------------------------- multi_head_attention
def _ref_mha(mha, query, key, value, mask=None):
    with torch.no_grad():
        return mha(query, key, value, mask)


def _init(module, rng, dtype):
    module = module.to(dtype)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(randn(rng, *p.shape, dtype=dtype, scale=0.4))
    return module


def _mha_case(rng, module, name, batch, n_q, n_k, with_mask, dtype):
    d = module.d_model
    query = randn(rng, batch, n_q, d, dtype=dtype)
    kv = randn(rng, batch, n_k, d, dtype=dtype)
    heads = f"num_heads={module.num_heads}" if name == "MultiHeadAttention" else \
        f"n_heads={module.n_heads}, n_kv_heads={module.n_kv_heads}"
    shown = {"module": Text(f"{name}(d_model={d}, {heads})，随机权重"), "query": query, "key = value": kv}
    kwargs = {}
    if with_mask:
        mask = torch.rand(batch, n_q, n_k, generator=rng) < 0.7
        mask[..., 0] = True
        kwargs["mask"], shown["mask"] = mask, mask
    return Case((module, query, kv, kv), kwargs, show=shown,
                note="mask 是 3 维 (batch, n_q, n_k)，所有头共用" if with_mask else "")


def _make_mha(rng, batch, n_q, n_k, heads, d_head, dtype, with_mask=False):
    mha = _init(attention.MultiHeadAttention(heads * d_head, heads), rng, dtype)
    return _mha_case(rng, mha, "MultiHeadAttention", batch, n_q, n_k, with_mask, dtype)


MHA_DIMS = {"batch": [1, 2], "n_q": [1, 2, 3], "n_k": [1, 2, 4], "heads": [1, 2, 4], "d_head": [1, 2, 3], "dtype": DTYPES}

register(Exercise(
    id="ch04.multi_head_attention", questions=("4.2", "4.5"), name="multi_head_attention", title="多头注意力",
    signature="multi_head_attention(mha, query, key, value, mask=None)",
    statement="用 mha（snippets.attention.MultiHeadAttention）的 w_q、w_k、w_v、w_o 与 num_heads，写出 MultiHead(Q, K, V) ="
              " Concat(head_1, …, head_h) W^O：投影、拆头、每个头做缩放点积注意力（除以 √d_head）、拼回 d_model 维、乘 W^O。"
              "mask 为 3 维 (batch, n_q, n_k) 时所有头共用。返回输出与每个头的权重。",
    shapes="query (batch, n_q, d_model)，key、value (batch, n_k, d_model)，mask 为 bool (batch, n_q, n_k) 或 None"
           " → out (batch, n_q, d_model)，weights (batch, h, n_q, n_k)。",
    bad_input="query 的最后一维不是 d_model：ValueError，报错信息写出 query 和形状。",
    reference=_ref_mha, solution=CODE,
    stub='''def multi_head_attention(mha, query, key, value, mask=None):
    """mha：snippets.attention.MultiHeadAttention（用它的 w_q、w_k、w_v、w_o、num_heads）。
    query (batch, n_q, d)，key、value (batch, n_k, d)，mask bool (batch, n_q, n_k) 或 None
    → out (batch, n_q, d)，weights (batch, h, n_q, n_k)。query 宽度不对：ValueError（写出 query）。"""
    raise NotImplementedError("在这里写你的实现")
''',
    properties=[
        Property("matches", "不带掩码：输出与每个头的权重都与 Concat(head_1, …, head_h) W^O 一致（n_q ≠ n_k）",
                 "拆头要先 view 成 (batch, n, h, d_head) 再 transpose(1, 2)；每个头除以 √d_head（不是 √d_model）；最后别忘了 W^O。",
                 DERIV, "formula", _make_mha, matches_reference(), dims=MHA_DIMS),
        Property("mask", "3 维掩码 (batch, n_q, n_k)：所有头共用",
                 "分数是 4 维 (batch, h, n_q, n_k)：把 mask unsqueeze(1) 成 (batch, 1, n_q, n_k)，它才沿头那一维广播。",
                 DERIV, "formula", lambda rng, **d: _make_mha(rng, with_mask=True, **d), matches_reference(), dims=MHA_DIMS),
        Property("bad-query", "query 的宽度不是 d_model：ValueError，并写出参数名 query",
                 "比较 query.shape[-1] 与 mha.d_model。", DERIV, "formula",
                 lambda rng: Case((_init(attention.MultiHeadAttention(4, 2), rng, torch.float64), randn(rng, 1, 2, 6),
                                   randn(rng, 1, 3, 4), randn(rng, 1, 3, 4)), note="query 宽 6，d_model = 4"),
                 raises("query")),
    ],
))


# --------------------------------------------------------------------------- grouped_query_attention
def _ref_gqa(gqa, query, key, value, mask=None):
    with torch.no_grad():
        return gqa(query, key, value, mask)


def _make_gqa(rng, batch, n_q, n_k, kv_heads, group, d_head, dtype):
    heads = kv_heads * group
    gqa = _init(multihead.GroupedQueryAttention(heads * d_head, heads, kv_heads), rng, dtype)
    return _mha_case(rng, gqa, "GroupedQueryAttention", batch, n_q, n_k, False, dtype)


register(Exercise(
    id="ch04.grouped_query_attention", questions=("4.8",), name="grouped_query_attention", title="分组查询注意力（GQA）",
    signature="grouped_query_attention(gqa, query, key, value, mask=None)",
    statement="用 gqa（snippets.multihead.GroupedQueryAttention）的 w_q、w_k、w_v、w_o、n_heads、n_kv_heads 写出 GQA："
              "n_heads 个查询头分成 n_kv_heads 组，第 j 组（查询头 j·g … (j+1)·g − 1，g = n_heads / n_kv_heads）共用第 j 个 K、V 头。"
              "n_kv_heads = n_heads 时就是 MHA，n_kv_heads = 1 时就是 MQA。mask 的约定与多头注意力相同。",
    shapes="query (batch, n_q, d_model)，key、value (batch, n_k, d_model) → out (batch, n_q, d_model)，"
           "weights (batch, n_heads, n_q, n_k)。",
    bad_input="key 与 value 的位置数不同：ValueError，报错信息写出 value 和形状。",
    reference=_ref_gqa, solution=CODE,
    stub='''def grouped_query_attention(gqa, query, key, value, mask=None):
    """gqa：snippets.multihead.GroupedQueryAttention。查询头 j·g … (j+1)·g − 1 共用第 j 个 K、V 头，
    g = n_heads // n_kv_heads。→ out (batch, n_q, d_model)，weights (batch, n_heads, n_q, n_k)。
    key、value 位置数不同：ValueError（写出 value）。"""
    raise NotImplementedError("在这里写你的实现")
''',
    properties=[
        Property("mqa", "n_kv_heads = 1（MQA）：所有查询头共用一对 K、V",
                 "K、V 投影只有 n_kv_heads·d_head 维：view 成 (batch, n_k, n_kv_heads, d_head)，不是 n_heads。",
                 COST, "gqa", lambda rng, **d: _make_gqa(rng, kv_heads=1, **d), matches_reference(),
                 dims={"batch": [1, 2], "n_q": [1, 2, 3], "n_k": [1, 2, 4], "group": [1, 2, 4], "d_head": [1, 2],
                       "dtype": DTYPES}),
        Property("grouping", "一般的分组：查询头 j·g … (j+1)·g − 1 共用第 j 个 K、V 头",
                 "相邻的 g 个查询头共用一个 K、V 头：用 repeat_interleave(g, dim=1)；repeat 会把头轮流分给各组。",
                 COST, "gqa", _make_gqa, matches_reference(),
                 dims={"batch": [1, 2], "n_q": [1, 2, 3], "n_k": [1, 2, 4], "kv_heads": [2, 3], "group": [2, 3],
                       "d_head": [1, 2], "dtype": DTYPES}),
        Property("bad-value", "value 的位置数与 key 不同：ValueError，并写出参数名 value",
                 "比较 key.shape[1] 与 value.shape[1]。", COST, "gqa",
                 lambda rng: Case((_init(multihead.GroupedQueryAttention(4, 2, 1), rng, torch.float64),
                                   randn(rng, 1, 2, 4), randn(rng, 1, 3, 4), randn(rng, 1, 2, 4)),
                                  note="key 有 3 个位置，value 有 2 个"), raises("value")),
    ],
))


# --------------------------------------------------------------------------- attention_params
def _ref_params(d_model, n_heads, n_kv_heads, bias=True):
    return multihead.attention_params(d_model, n_heads, n_kv_heads, bias)


def _make_params(rng, d_head, n_kv, group, bias):
    heads = n_kv * group
    return Case((heads * d_head, heads, n_kv), {"bias": bias})


register(Exercise(
    id="ch04.attention_params", questions=("4.3", "4.8"), name="attention_params", title="注意力层的参数量",
    signature="attention_params(d_model, n_heads, n_kv_heads, bias=True)",
    statement="数出一层（分组查询）注意力的参数个数：W^Q、W^O 各 d_model × d_model；W^K、W^V 各 d_model × (n_kv_heads·d_head)，"
              "d_head = d_model / n_heads；bias=True 时每个投影再加它输出宽度那么多个偏置。返回 int。",
    shapes="d_model、n_heads、n_kv_heads 是正整数，n_heads 整除 d_model，n_kv_heads 整除 n_heads → int。",
    bad_input="n_kv_heads 不整除 n_heads：ValueError，报错信息写出 n_kv_heads。",
    reference=_ref_params, solution=CODE,
    stub='''def attention_params(d_model, n_heads, n_kv_heads, bias=True):
    """W^Q、W^O 各 d_model²，W^K、W^V 各 d_model·(n_kv_heads·d_head)；bias=True 再加各自的输出宽度。→ int。
    n_kv_heads 不整除 n_heads：ValueError（写出 n_kv_heads）。"""
    raise NotImplementedError("在这里写你的实现")
''',
    properties=[
        Property("matches", "MHA、GQA、MQA，带偏置与不带偏置：参数个数都对",
                 "K、V 的输出宽度是 n_kv_heads·d_head，不是 d_model；偏置的个数等于每个投影的输出宽度。",
                 COST, "gqa", _make_params, matches_reference(),
                 dims={"bias": [False, True], "d_head": [1, 2, 8, 64], "n_kv": [1, 2, 4], "group": [1, 2, 4]}, tries=16),
        Property("bad-n_kv_heads", "n_kv_heads 不整除 n_heads：ValueError，并写出参数名 n_kv_heads",
                 "检查 n_heads % n_kv_heads == 0。", COST, "gqa",
                 lambda rng: Case((12, 6, 4), note="n_heads = 6，n_kv_heads = 4"), raises("n_kv_heads")),
    ],
))
