"""多头注意力（Multi-Head Attention）的另外几种写法：第 04 章。

- multi_head_loop：论文 §3.2.2 的公式逐头写成 Python 循环，是批量实现 MultiHeadAttention 的参照；
- head_contributions：W^O 按头切块，Concat(head_1, …, head_h) W^O = Σ_i head_i W^O_i；
- GroupedQueryAttention：分组查询注意力（GQA），n_kv_heads = n_heads 是 MHA，n_kv_heads = 1 是 MQA；
- attention_params、kv_cache_bytes：参数量与 KV 缓存字节数的公式。

页面先引入 snippets/attention.py 的 imports、sdpa、masks、mha、checks 小节，再引入本文件的小节；
所以本文件的小节直接使用 scaled_dot_product_attention、_check_mha_inputs 这些名字
（只在函数体里用到，定义时不需要它们）。下面这行导入在所有小节之外，只在
`import snippets.multihead` 时生效（页面上不显示）。测试：tests/ch04/。
"""

from snippets.attention import (  # noqa: F401  (小节里按名字使用)
    _check_mha_inputs,
    scaled_dot_product_attention,
)

# --8<-- [start:imports]
import torch
from torch import nn
# --8<-- [end:imports]


# --8<-- [start:loop]
def multi_head_loop(mha, query, key, value, mask=None):
    """论文公式逐头照抄：head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)，再 Concat(…) W^O。

    mha 是一个 MultiHeadAttention（用它的权重）；query (batch, n_q, d_model)，
    key、value (batch, n_k, d_model)；mask 与 MultiHeadAttention 相同：3 维 (batch, n_q, n_k) 所有头共用，
    4 维 (batch, h, n_q, n_k) 逐头。返回 out (batch, n_q, d_model) 和 weights (batch, h, n_q, n_k)。
    只为对照：一个头一次矩阵乘法，h 个头就是 h 次 Python 循环。
    """
    h, d_k = mha.num_heads, mha.d_head
    heads, weights = [], []
    for i in range(h):
        rows = slice(i * d_k, (i + 1) * d_k)  # 第 i 个头在拼接维度上占的那一段
        # nn.Linear 存的是 (输出, 输入) 的矩阵，所以论文的 W_i^Q (d_model × d_k) 是 weight[rows].T
        proj = []
        for lin, x in ((mha.w_q, query), (mha.w_k, key), (mha.w_v, value)):
            b = None if lin.bias is None else lin.bias[rows]
            proj.append(nn.functional.linear(x, lin.weight[rows], b))  # (batch, n, d_k)
        m = mask[:, i] if mask is not None and mask.dim() == 4 else mask  # 这个头的掩码
        out_i, w_i = scaled_dot_product_attention(*proj, m)  # (batch, n_q, d_k), (batch, n_q, n_k)
        heads.append(out_i)
        weights.append(w_i)
    concat = torch.cat(heads, dim=-1)  # Concat(head_1, …, head_h)：(batch, n_q, h·d_k)
    return mha.w_o(concat), torch.stack(weights, dim=1)  # (batch, n_q, d_model), (batch, h, n_q, n_k)
# --8<-- [end:loop]


# --8<-- [start:head-sum]
def head_contributions(mha, concat):
    """把 W^O 按行切成 h 块 W_i^O (d_k × d_model)：Concat(head_1, …, head_h) W^O = Σ_i head_i W_i^O。

    concat (batch, n, h·d_k) 是各头输出拼起来的张量；返回每个头各自写进输出的那一份
    (batch, h, n, d_model)。对头这一维求和、再加 W^O 的偏置，就是 mha.w_o(concat)。
    把某个头的那一份去掉（等价于把 W_i^O 置零），就是「剪掉」这个头。
    """
    batch, n, _ = concat.shape
    heads = concat.view(batch, n, mha.num_heads, mha.d_head).transpose(1, 2)  # (batch, h, n, d_k)
    # nn.Linear 的 weight 是 (d_model, h·d_k)，即 (W^O)ᵀ；按列切成 h 块，第 i 块转置后就是 W_i^O
    w_o = mha.w_o.weight.view(mha.d_model, mha.num_heads, mha.d_head).permute(1, 2, 0)  # (h, d_k, d_model)
    return heads @ w_o.unsqueeze(0)  # (batch, h, n, d_model)：第 i 个头是 head_i W_i^O
# --8<-- [end:head-sum]


# --8<-- [start:gqa]
class GroupedQueryAttention(nn.Module):
    """分组查询注意力（GQA，Ainslie et al., 2023）：n_heads 个查询头分成 n_kv_heads 组，每组共用一对 K、V 头。

    n_kv_heads = n_heads：每个查询头有自己的 K、V，就是 MultiHeadAttention（MHA）；
    n_kv_heads = 1：所有查询头共用一对 K、V，就是多查询注意力（MQA，Shazeer, 2019）。
    w_q、w_o 与 MHA 相同（d_model × d_model）；w_k、w_v 只有 d_model × (n_kv_heads·d_head)。
    不带偏置时参数量 2·d_model² + 2·d_model·(n_kv_heads·d_head)。
    forward 的参数、掩码约定和返回值与 MultiHeadAttention 相同：out (batch, n_q, d_model)，
    weights (batch, n_heads, n_q, n_k)。cache（第 02 章的 KVCache）存的是 repeat_interleave **之前**的
    n_kv_heads 个 K、V 头：k、v 各 (batch, n_kv_heads, t, d_head)，这正是 GQA 省下的缓存。
    """

    check_inputs = True

    def __init__(self, d_model, n_heads, n_kv_heads, bias=True):
        super().__init__()
        for name, v in (("d_model", d_model), ("n_heads", n_heads), ("n_kv_heads", n_kv_heads)):
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {name}={v!r}")
        if d_model % n_heads != 0:
            raise ValueError(f"d_model={d_model} is not divisible by n_heads={n_heads}")
        if n_heads % n_kv_heads != 0:
            raise ValueError(f"n_heads={n_heads} is not divisible by n_kv_heads={n_kv_heads}: "
                             f"each group of query heads must share one K/V head")
        self.d_model, self.n_heads, self.n_kv_heads = d_model, n_heads, n_kv_heads
        self.num_heads = n_heads  # 与 MultiHeadAttention 同名的属性（输入检查用到它）
        self.d_head = d_model // n_heads
        self.group = n_heads // n_kv_heads  # 每组有几个查询头
        d_kv = n_kv_heads * self.d_head
        self.w_q = nn.Linear(d_model, d_model, bias=bias)  # 拼起来的 W_1^Q … W_h^Q
        self.w_k = nn.Linear(d_model, d_kv, bias=bias)  # 只有 n_kv_heads 个 K 头
        self.w_v = nn.Linear(d_model, d_kv, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)  # W^O

    def forward(self, query, key, value, mask=None, cache=None):
        if self.check_inputs:
            # 形状、dtype、掩码的检查与 MHA 完全一样：复用第 01 章的那一份
            _check_mha_inputs(self, query, key, value, mask, cache)
        batch, n_q, _ = query.shape
        n_k = key.shape[1]
        q = self.w_q(query).view(batch, n_q, self.n_heads, self.d_head).transpose(1, 2)  # (batch, h, n_q, d_head)
        if cache is not None and cache.static and cache.k is not None:
            k, v = cache.k, cache.v  # 交叉注意力：第一次算好的 K、V，之后只读
        else:
            k = self.w_k(key).view(batch, n_k, self.n_kv_heads, self.d_head).transpose(1, 2)  # (batch, g, n_k, d_head)
            v = self.w_v(value).view(batch, n_k, self.n_kv_heads, self.d_head).transpose(1, 2)  # (batch, g, n_k, d_head)
            if cache is not None:
                k, v = cache.update(k, v)  # 缓存 g 个头，不是 h 个：(batch, g, t, d_head)
        # 第 j 组的 K、V 头给查询头 j·group … (j+1)·group − 1 共用：沿头这一维重复 group 次
        k = k.repeat_interleave(self.group, dim=1)  # (batch, h, n_k, d_head)
        v = v.repeat_interleave(self.group, dim=1)
        if mask is not None and mask.dim() == 3:
            mask = mask.unsqueeze(1)  # (batch, 1, n_q, n_k)：所有头共用
        out, weights = scaled_dot_product_attention(q, k, v, mask, self.check_inputs)
        out = out.transpose(1, 2).reshape(batch, n_q, self.d_model)  # Concat：(batch, n_q, d_model)
        return self.w_o(out), weights
# --8<-- [end:gqa]


# --8<-- [start:formulas]
def attention_params(d_model, n_heads, n_kv_heads, bias=True):
    """注意力层的参数量：W^Q、W^O 各 d_model²，W^K、W^V 各 d_model·(n_kv_heads·d_head)；带偏置再加各自的输出宽度。"""
    if d_model % n_heads != 0 or n_heads % n_kv_heads != 0:
        raise ValueError(f"need d_model % n_heads == 0 and n_heads % n_kv_heads == 0, got "
                         f"d_model={d_model}, n_heads={n_heads}, n_kv_heads={n_kv_heads}")
    d_kv = n_kv_heads * (d_model // n_heads)
    weights = 2 * d_model * d_model + 2 * d_model * d_kv
    biases = 2 * d_model + 2 * d_kv if bias else 0
    return weights + biases


def kv_cache_bytes(n_layers, seq_len, n_kv_heads, d_head, bytes_per_value=2, batch=1):
    """KV 缓存的字节数：每层、每个词元存 K 和 V 各 n_kv_heads·d_head 个数。

    2 · n_layers · batch · seq_len · n_kv_heads · d_head · bytes_per_value。
    MHA 取 n_kv_heads = n_heads，MQA 取 1，GQA 取组数 g。fp16/bf16 为 2 字节，fp32 为 4。
    """
    for name, v in (("n_layers", n_layers), ("seq_len", seq_len), ("n_kv_heads", n_kv_heads),
                    ("d_head", d_head), ("bytes_per_value", bytes_per_value), ("batch", batch)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise ValueError(f"{name} must be a non-negative int, got {name}={v!r}")
    return 2 * n_layers * batch * seq_len * n_kv_heads * d_head * bytes_per_value


def mla_cache_bytes(n_layers, seq_len, d_latent, d_rope, bytes_per_value=2, batch=1):
    """MLA（第 12 章）的缓存字节数：每层、每个词元只存潜向量 c（d_latent）和共用的 RoPE 键（d_rope）。

    n_layers · batch · seq_len · (d_latent + d_rope) · bytes_per_value；没有 K、V 两份，也没有 n_kv_heads。
    """
    for name, v in (("n_layers", n_layers), ("seq_len", seq_len), ("d_latent", d_latent), ("d_rope", d_rope),
                    ("bytes_per_value", bytes_per_value), ("batch", batch)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise ValueError(f"{name} must be a non-negative int, got {name}={v!r}")
    return n_layers * batch * seq_len * (d_latent + d_rope) * bytes_per_value
# --8<-- [end:formulas]
