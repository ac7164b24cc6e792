"""第 13 章：稀疏注意力。滑动窗口的掩码、分块计算与滚动 KV 缓存，注意力汇点（attention sink），
多层之后的感受野，以及 MoBA 的块选择。掩码约定与 snippets/attention.py 相同：True = 可以看。
softmax 注意力本身调用第 03 章的 scaled_dot_product_attention：页面先引入 attention.py 的
imports、sdpa、checks 三节；所以下面的导入写在各节之外。测试：tests/ch13/。
"""

# --8<-- [start:imports]
import torch
# --8<-- [end:imports]

from snippets.attention import _check_qkv, scaled_dot_product_attention  # noqa: E402,F401  (页面先引入那几节)


# --8<-- [start:window]
def sliding_window_mask(n, window, sinks=0, device=None):
    """(n, n) 的 bool 掩码：0 ≤ i − j < window 时 True；sinks > 0 时前 sinks 个位置（j ≤ i）也可以看。
    device：掩码建在哪个设备上（默认 CPU；与 q 一起用时传 q.device）。"""
    _check_window(n, window, sinks)
    i = torch.arange(n, device=device)[:, None]  # (n, 1)
    j = torch.arange(n, device=device)[None, :]  # (1, n)
    band = (i - j >= 0) & (i - j < window)
    return band | ((j < sinks) & (j <= i))


def receptive_field(layers, window):
    """L 层窗口为 w 的注意力叠起来，最后一个位置能「看到」的位置数：L·(w − 1) + 1（序列足够长时）。"""
    return layers * (window - 1) + 1


def sliding_window_attention(q, k, v, window):
    """分块算滑动窗口注意力：查询块 [i, i + w) 只和键 [i − w + 1, i + w) 算分数。

    计算 O(n·w·d)、同时存在的分数 O(w²)，而不是 O(n²)；结果与带状掩码下的全注意力相同。
    q、k (..., n, d_k)，v (..., n, d_v)。
    """
    _check_qkv(q, k, v)  # 第 01 章的检查：形状、dtype，空序列（n = 0）报错
    n = q.shape[-2]
    _check_window(n, window, 0)
    out = []
    for i in range(0, n, window):
        lo, hi = max(0, i - window + 1), min(n, i + window)
        rows = torch.arange(i, hi, device=q.device)[:, None]  # 本块的查询位置
        cols = torch.arange(lo, hi, device=q.device)[None, :]  # 可能用到的键位置
        mask = (rows - cols >= 0) & (rows - cols < window)  # (bq, bk)
        o, _ = scaled_dot_product_attention(q[..., i:hi, :], k[..., lo:hi, :], v[..., lo:hi, :], mask)
        out.append(o)
    return torch.cat(out, dim=-2)
# --8<-- [end:window]


# --8<-- [start:rolling-cache]
def rolling_cache_decode(q, k, v, window, sinks=0):
    """逐词元解码，KV 缓存只留最近 window 个词元（和最早的 sinks 个汇点），像 Mistral 的滚动缓冲区。

    每步把新的 k_t、v_t 放进缓存，超出 window 的最旧一项被覆盖；缓存大小 ≤ sinks + window，与 n 无关。
    输出与 sliding_window_mask(n, window, sinks) 下的全注意力相同。q、k (..., n, d_k)，v (..., n, d_v)。
    """
    _check_qkv(q, k, v)
    n = q.shape[-2]
    _check_window(n, window, sinks)
    sink_k, sink_v = k[..., :0, :], v[..., :0, :]  # 汇点：一旦进入就不再移出
    ring_k = k.new_zeros(k.shape[:-2] + (window, k.shape[-1]))  # (..., w, d_k) 环形缓冲区
    ring_v = v.new_zeros(v.shape[:-2] + (window, v.shape[-1]))
    out = []
    for t in range(n):
        if t < sinks:
            sink_k, sink_v = k[..., :t + 1, :], v[..., :t + 1, :]
        ring_k[..., t % window, :], ring_v[..., t % window, :] = k[..., t, :], v[..., t, :]  # 覆盖最旧的
        # 槽 s 里是位置 p = t − ((t − s) mod w) 的词元；还没写过的槽（s > t）与已经作为汇点的词元（p < sinks）不看
        keep = [s for s in range(min(t + 1, window)) if t - (t - s) % window >= sinks]
        slots = torch.tensor(keep, dtype=torch.long, device=k.device)
        keys = torch.cat([sink_k, ring_k.index_select(-2, slots)], dim=-2)
        vals = torch.cat([sink_v, ring_v.index_select(-2, slots)], dim=-2)
        o, _ = scaled_dot_product_attention(q[..., t:t + 1, :], keys, vals)  # 一个查询看整个缓存
        out.append(o)
    return torch.cat(out, dim=-2)
# --8<-- [end:rolling-cache]


# --8<-- [start:moba]
def moba_mask(q, k, block_size, top_k):
    """MoBA 的块选择，返回 (..., n, n) 的 bool 掩码。

    键按 block_size 分块；查询 t 对每个已经结束的过去块打分 q_t · mean(K_块)，取分数最高的 top_k − 1 块，
    再加上自己所在的块（块内按因果掩码）：一共 top_k 块。未来的块永远不选。
    """
    n = q.shape[-2]
    _check_moba(n, block_size, top_k)
    n_blocks = -(-n // block_size)
    pad = n_blocks * block_size - n
    kp = torch.nn.functional.pad(k, (0, 0, 0, pad))  # (..., n_blocks·B, d_k)
    means = kp.unflatten(-2, (n_blocks, block_size)).mean(dim=-2)  # (..., n_blocks, d_k)
    gate = q @ means.transpose(-2, -1)  # (..., n, n_blocks)
    own = torch.arange(n, device=q.device) // block_size  # 每个查询所在的块
    past = torch.arange(n_blocks, device=q.device)[None, :] < own[:, None]  # (n, n_blocks)：已结束的过去块
    gate = gate.masked_fill(~past, float("-inf"))
    chosen = torch.zeros_like(gate, dtype=torch.bool)
    if top_k > 1:
        idx = gate.topk(min(top_k - 1, n_blocks), dim=-1).indices
        chosen = chosen.scatter(-1, idx, True) & past  # 分数为 -inf 的（未来块）不选
    chosen = chosen | (torch.arange(n_blocks, device=q.device)[None, :] == own[:, None])  # 自己的块总在
    key_block = torch.arange(n, device=q.device) // block_size
    mask = chosen[..., key_block]  # (..., n, n)：键所在的块被选中
    causal = torch.ones(n, n, dtype=torch.bool, device=q.device).tril()
    return mask & causal


def moba_attention(q, k, v, block_size, top_k):
    """MoBA：只在选中的块上做 softmax 注意力。top_k ≥ 块数时就是因果的全注意力。"""
    out, _ = scaled_dot_product_attention(q, k, v, moba_mask(q, k, block_size, top_k))
    return out
# --8<-- [end:moba]


# --8<-- [start:checks]
def _check_window(n, window, sinks):
    """window ≥ 1、sinks ≥ 0 的整数；报错时写出 n。"""
    for name, val, least in (("window", window, 1), ("sinks", sinks, 0)):
        if not isinstance(val, int) or isinstance(val, bool) or val < least:
            raise ValueError(f"{name} must be an int ≥ {least}, got {val!r} (n = {n})")


def _check_moba(n, block_size, top_k):
    for name, val in (("block_size", block_size), ("top_k", top_k)):
        if not isinstance(val, int) or isinstance(val, bool) or val < 1:
            raise ValueError(f"{name} must be an int ≥ 1, got {val!r} (n = {n})")
# --8<-- [end:checks]
