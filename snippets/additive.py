"""加性注意力（additive attention，Bahdanau et al. 2015）与它和点积注意力的计算量对照。

论文 §3.2.1 拿它和点积注意力比较：加性注意力用「只有一个隐藏层的前馈网络」算兼容度，
score(q, k) = vᵀ tanh(W_q q + W_k k)；点积注意力是 score(q, k) = q·k（再乘 1/√d_k 就是论文的公式 (1)）。

页面按顺序引入 snippets/attention.py 的 imports、sdpa、checks 小节和 snippets/softmax.py 的小节，
再引入本文件的小节；所以本文件的小节直接使用 _shapes、_check_mask、masked_softmax 这些名字。
additive 一节的输入检查在最后的 checks 一节（_check_additive_inputs）。
下面这行导入在所有小节之外，只在 `import snippets.additive` 时生效（页面上不显示）。

掩码约定与 scaled_dot_product_attention 相同：bool，True = 可以看；整行被遮住时该行输出与权重全为 0，
绝不是 NaN。测试：tests/ch03/。
"""

from snippets.attention import _check_mask, _shapes  # noqa: F401  (小节里按名字使用)
from snippets.softmax import masked_softmax  # noqa: F401

# --8<-- [start:imports]
import math

import torch
from torch import nn
# --8<-- [end:imports]


# --8<-- [start:additive]
def additive_scores(query, key, w_q, w_k, v_a, b_h=None):
    """兼容度函数（compatibility function）：score_ij = v_aᵀ tanh(W_q q_i + W_k k_j + b_h)。

    query (..., n_q, d_q)，key (..., n_k, d_key) → scores (..., n_q, n_k)。输入由 additive_attention 检查。
    b_h (d_h,) 是隐藏层的偏置，可以不要（Bahdanau 论文的写法没有它）。
    """
    q_h = query @ w_q  # (..., n_q, d_h)
    if b_h is not None:
        q_h = q_h + b_h  # 偏置只需加一次：加在 n_q 个查询上，比加在 n_q·n_k 对上便宜
    k_h = key @ w_k  # (..., n_k, d_h)
    # 每一对 (i, j) 都要过一次 tanh：中间张量有 n_q · n_k · d_h 个数，这是加性注意力的内存代价
    hidden = torch.tanh(q_h.unsqueeze(-2) + k_h.unsqueeze(-3))  # (..., n_q, n_k, d_h)
    return (hidden @ v_a.unsqueeze(-1)).squeeze(-1)  # (..., n_q, n_k)


def additive_attention(query, key, value, w_q, w_k, v_a, mask=None, b_h=None):
    """加性注意力：score_ij = v_aᵀ tanh(W_q q_i + W_k k_j + b_h)，weights = softmax_j(score)，out = weights · value。

    query (..., n_q, d_q)，key (..., n_k, d_key)，value (..., n_k, d_v)；d_q 与 d_key 可以不同。
    w_q (d_q, d_h)，w_k (d_key, d_h)，v_a (d_h,)，b_h (d_h,) 或 None：d_h 是隐藏层宽度，对应点积注意力的 d_k。
    mask：bool，True = 可以看，能广播到 (..., n_q, n_k)。
    返回 out (..., n_q, d_v) 和 weights (..., n_q, n_k)；整行被遮住的查询，该行全为 0。
    """
    _check_additive_inputs(query, key, value, w_q, w_k, v_a, mask, b_h)
    scores = additive_scores(query, key, w_q, w_k, v_a, b_h)  # (..., n_q, n_k)
    weights = masked_softmax(scores, mask)  # (..., n_q, n_k)，遮住处为 0，整行遮住时全为 0
    return weights @ value, weights  # (..., n_q, d_v), (..., n_q, n_k)


class AdditiveAttention(nn.Module):
    """带参数的加性注意力：W_q (d_q, d_h)、W_k (d_key, d_h)、v_a (d_h,)，bias=True 时还有 b_h (d_h,)。

    初始化：W_q、W_k ~ N(0, 1/d_in)（输入各分量方差为 1 时，W q 的各分量方差约为 1），
    v_a ~ N(0, 1/d_h)（于是初始分数的方差约为 E[tanh²]，与 d_h 无关），b_h = 0。
    """

    def __init__(self, d_q, d_key, d_h, bias=True):
        super().__init__()
        for name, value in (("d_q", d_q), ("d_key", d_key), ("d_h", d_h)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {name}={value!r}")
        self.w_q = nn.Parameter(torch.randn(d_q, d_h) / math.sqrt(d_q))
        self.w_k = nn.Parameter(torch.randn(d_key, d_h) / math.sqrt(d_key))
        self.v_a = nn.Parameter(torch.randn(d_h) / math.sqrt(d_h))
        self.b_h = nn.Parameter(torch.zeros(d_h)) if bias else None

    def forward(self, query, key, value, mask=None):
        return additive_attention(query, key, value, self.w_q, self.w_k, self.v_a, mask, self.b_h)
# --8<-- [end:additive]


# --8<-- [start:cost]
def attention_cost(kind, batch, n_q, n_k, d_q, d_key, d_h, d_v, bias=False):
    """一次注意力（不含 Q、K、V 之外的投影）的精确计数，乘加按 2 次浮点运算计。

    kind="dot"：q、k 已经是 d_h 维（d_q = d_key = d_h），分数 = q kᵀ；
    kind="additive"：先把 q、k 投影到 d_h 维，再 tanh、再乘 v_a。
    返回 dict：matmul（矩阵乘法的 FLOPs，FlopCounterMode 数的就是它）、
    elementwise（逐元素的加法与 tanh，各算 1 次；bias=True 时加上 b_h 的 batch·n_q·d_h 次加法）、
    score_elements（为反向传播存下的最大中间张量的元素个数）。
    softmax 本身两者相同，不计。
    """
    sizes = {"batch": batch, "n_q": n_q, "n_k": n_k, "d_q": d_q, "d_key": d_key, "d_h": d_h, "d_v": d_v}
    for name, value in sizes.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {name}={value!r}")
    pairs = batch * n_q * n_k
    weighted_sum = 2 * pairs * d_v  # weights @ value
    if kind == "dot":
        if not d_q == d_key == d_h:
            raise ValueError(f"dot-product attention needs d_q = d_key = d_h, got {sizes}")
        if bias:  # 点积注意力没有隐藏层，也就没有 b_h：不悄悄忽略
            raise ValueError(f"bias=True applies only to kind='additive' (dot-product attention has no b_h), "
                             f"got {sizes}")
        return {"matmul": 2 * pairs * d_h + weighted_sum, "elementwise": 0, "score_elements": pairs}
    if kind == "additive":
        projections = 2 * batch * n_q * d_q * d_h + 2 * batch * n_k * d_key * d_h
        return {"matmul": projections + 2 * pairs * d_h + weighted_sum,
                "elementwise": 2 * pairs * d_h + (batch * n_q * d_h if bias else 0),  # 广播加法 + tanh (+ 偏置)
                "score_elements": pairs * d_h}
    raise ValueError(f"kind must be 'dot' or 'additive', got {kind!r}")
# --8<-- [end:cost]


# --8<-- [start:checks]
def _check_additive_inputs(query, key, value, w_q, w_k, v_a, mask, b_h):
    """additive_attention 的输入检查：类型、dtype、各张量的形状与掩码；报错时写出全部形状。"""
    named = {"query": query, "key": key, "value": value, "w_q": w_q, "w_k": w_k, "v_a": v_a}
    if b_h is not None:
        named["b_h"] = b_h
    for name, t in named.items():
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    shapes = _shapes(**named)
    for name, t in named.items():
        if not t.is_floating_point() or t.dtype != query.dtype:
            raise TypeError(f"{name} has dtype {t.dtype}; all inputs must share query's floating dtype: {shapes}")
    for name, t in (("query", query), ("key", key), ("value", value)):
        if t.dim() < 2 or t.shape[-2] == 0 or t.shape[-1] == 0:
            raise ValueError(f"{name} must have shape (..., n, d) with n, d >= 1: {shapes}")
        if t.shape[:-2] != query.shape[:-2]:
            raise ValueError(f"{name} has batch dims {tuple(t.shape[:-2])} but query has "
                             f"{tuple(query.shape[:-2])}: {shapes}")
    if value.shape[-2] != key.shape[-2]:
        raise ValueError(f"value has n_k={value.shape[-2]} but key has n_k={key.shape[-2]}: {shapes}")
    if w_q.dim() != 2 or w_q.shape[0] != query.shape[-1]:
        raise ValueError(f"w_q must have shape (d_q={query.shape[-1]}, d_h): {shapes}")
    d_h = w_q.shape[1]
    if w_k.dim() != 2 or w_k.shape != (key.shape[-1], d_h):
        raise ValueError(f"w_k must have shape (d_key={key.shape[-1]}, d_h={d_h}): {shapes}")
    if v_a.shape != (d_h,):
        raise ValueError(f"v_a must have shape (d_h={d_h},): {shapes}")
    if b_h is not None and b_h.shape != (d_h,):
        raise ValueError(f"b_h must have shape (d_h={d_h},): {shapes}")
    n_q, n_k = query.shape[-2], key.shape[-2]
    _check_mask(mask, query.shape[:-2] + (n_q, n_k), shapes)
# --8<-- [end:checks]
