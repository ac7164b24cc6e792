"""注意力（Attention）：论文 §3.2 的公式 (1)、掩码、多头注意力与它的 KV 缓存，§4 的受限注意力，
以及 FlashAttention 的在线 softmax。

页面按节引用本文件（写法见 CONVENTIONS.md）：先是算法各节，输入检查放在最后的 checks 节；
各节按文件顺序拼接后可在全新解释器里独立运行。测试：tests/ch01/test_ch01_attention.py、
tests/ch01/test_ch01_bad_input.py；KV 缓存在 tests/ch02/。

统一约定：
- mask 一律是 bool 张量，True = 可以看（may attend），False = 遮住；
- 某个查询的整行都被遮住时，该行输出与权重全为 0，绝不是 NaN；
- 形状不对、dtype 不对时抛 ValueError / TypeError，消息里写出参数名与形状，绝不悄悄广播。

节之间的依赖（页面引用时要带上）：每节都要 imports；sdpa、mha、restricted、online-softmax 要 checks
（检查函数 _shapes、_check_qkv、_check_mask、_check_mha_inputs），mha 还要 sdpa；
masks、kv-cache 只要 imports（mha 的 forward 按 cache 参数读写 KVCache）。
"""

# --8<-- [start:imports]
import math

import torch
import torch.nn.functional as F
from torch import nn
# --8<-- [end:imports]


# --8<-- [start:sdpa]
def scaled_dot_product_attention(q, k, v, mask=None, check_inputs=True):
    """论文公式 (1)：Attention(Q, K, V) = softmax(Q Kᵀ / √d_k) V。

    q (..., n_q, d_k)，k (..., n_k, d_k)，v (..., n_k, d_v)；
    mask：bool，True = 可以看，能广播到 (..., n_q, n_k)。
    返回 out (..., n_q, d_v) 和 weights (..., n_q, n_k)。
    整行被遮住的查询：该行 out 和 weights 全为 0。
    check_inputs=False 跳过输入检查（复杂度探针计时用：n 很小时，检查本身的开销会扭曲墙钟时间）。
    """
    if check_inputs:
        _check_qkv(q, k, v)
    d_k = q.shape[-1]
    # 每个查询和每个键做点积，再除以 √d_k，让分数的方差回到 1 左右
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)  # (..., n_q, n_k)
    if mask is not None:
        if check_inputs:
            _check_mask(mask, scores.shape, _shapes(q=q, k=k, v=v))
        # 不许看的位置填 -inf：exp(-inf) = 0，它在 softmax 里的权重就是 0
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)  # (..., n_q, n_k)，每行和为 1
    if mask is not None:
        # 整行都是 -inf 时 softmax 得 0/0 = NaN；约定这种行的权重全为 0
        weights = weights.masked_fill(~mask, 0.0)
    out = weights @ v  # (..., n_q, d_v)：按权重对 v 加权求和
    return out, weights
# --8<-- [end:sdpa]


# --8<-- [start:masks]
VALUE_CHECKS = True  # 读数值的检查（如 lengths 的范围）；meta 张量没有数值，契约测试在 meta 上把它关掉


def causal_mask(n, device=None):
    """因果掩码，形状 (n, n)：位置 i 只能看 j ≤ i，即对角线及其下方为 True。"""
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"n must be an int, got {type(n).__name__}")
    if n < 1:
        raise ValueError(f"n must be >= 1, got n={n}: causal mask ({n}, {n}) would be empty")
    return torch.ones(n, n, dtype=torch.bool, device=device).tril()  # (n, n)


def padding_mask(lengths, n):
    """填充掩码，形状 (batch, 1, n)：第 b 条序列的前 lengths[b] 个位置为 True（真实 token）。

    中间那一维是 1，在 n_q 上广播，所以它能直接：
    - 传给 scaled_dot_product_attention（3 维分数 (batch, n_q, n)）；
    - 传给 MultiHeadAttention（它自己补上"头"那一维）；
    - 与 causal_mask(n) 取 &，得到解码器用的 (batch, n, n)。
    若要对 4 维分数 (batch, h, n_q, n) 直接使用，先 .unsqueeze(1) 得 (batch, 1, 1, n)。
    """
    lengths = torch.as_tensor(lengths)
    if lengths.is_floating_point() or lengths.is_complex() or lengths.dtype == torch.bool:
        raise TypeError(f"lengths must hold integers, got {lengths.dtype}: lengths {tuple(lengths.shape)}")
    if lengths.dim() != 1:
        raise ValueError(f"lengths must have shape (batch,), got lengths {tuple(lengths.shape)}")
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be an int >= 1, got n={n!r}: lengths {tuple(lengths.shape)}")
    if VALUE_CHECKS and ((lengths < 0) | (lengths > n)).any():
        raise ValueError(f"lengths must lie in [0, n={n}], got {lengths.tolist()}: lengths {tuple(lengths.shape)}")
    positions = torch.arange(n, device=lengths.device)  # (n,)
    return positions < lengths[:, None, None]  # (batch, 1, n)
# --8<-- [end:masks]


# --8<-- [start:mha]
class MultiHeadAttention(nn.Module):
    """论文 §3.2.2：MultiHead(Q, K, V) = Concat(head_1, …, head_h) W^O，
    head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)。

    h 个头的 W_i^Q（d_model × d_head）并排拼成一个 d_model × d_model 的 w_q，
    w_k、w_v 同理；每个头的宽度 d_head = d_model / h。d_k（可选，表 3 (B)）只把查询、键的头宽改成 d_k，
    值的头宽仍是 d_head：w_q、w_k 变成 d_model × (h·d_k)。
    forward(query (batch, n_q, d_model), key (batch, n_k, d_model), value (batch, n_k, d_model), mask)
    返回 out (batch, n_q, d_model) 和每个头的 weights (batch, h, n_q, n_k)。
    n_q 可以不等于 n_k（交叉注意力）。mask：bool，True = 可以看，能广播到
    (batch, n_q, n_k)（所有头共用，如 causal_mask、padding_mask）或 4 维 (batch, h, n_q, n_k)（逐头）。
    cache：增量解码时传入这个模块的 KVCache（见 kv-cache 一节），forward 自己读写它；None 时不缓存。
    把实例的 check_inputs 设为 False 可跳过输入检查（复杂度探针计时用）。
    """

    check_inputs = True

    def __init__(self, d_model, num_heads, bias=True, d_k=None):
        super().__init__()
        if not isinstance(d_model, int) or not isinstance(num_heads, int) or d_model < 1 or num_heads < 1:
            raise ValueError(f"d_model and num_heads must be positive ints, got d_model={d_model!r}, "
                             f"num_heads={num_heads!r}")
        if d_model % num_heads != 0:
            raise ValueError(f"d_model={d_model} is not divisible by num_heads={num_heads}")
        if d_k is not None and (not isinstance(d_k, int) or d_k < 1):
            raise ValueError(f"d_k must be a positive int or None, got d_k={d_k!r} (d_model={d_model}, "
                             f"num_heads={num_heads})")
        self.d_model, self.num_heads = d_model, num_heads
        self.d_head = d_model // num_heads                    # 值的头宽 d_v
        self.d_k = self.d_head if d_k is None else d_k        # 查询、键的头宽
        self.w_q = nn.Linear(d_model, num_heads * self.d_k, bias=bias)  # 拼起来的 W_1^Q … W_h^Q
        self.w_k = nn.Linear(d_model, num_heads * self.d_k, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)  # W^O

    def _split_heads(self, x):
        batch, n, _ = x.shape  # (batch, n, d_model)
        return x.view(batch, n, self.num_heads, -1).transpose(1, 2)  # (batch, h, n, d_k 或 d_head)

    def forward(self, query, key, value, mask=None, cache=None):
        if self.check_inputs:
            _check_mha_inputs(self, query, key, value, mask, cache)
        batch, n_q, _ = query.shape
        q = self._split_heads(self.w_q(query))  # (batch, h, n_q, d_k)
        if cache is not None and cache.static and cache.k is not None:
            k, v = cache.k, cache.v  # 交叉注意力：K、V 第一次就从 key、value 算好了，之后只读
        else:
            k = self._split_heads(self.w_k(key))  # (batch, h, n_k, d_k)
            v = self._split_heads(self.w_v(value))  # (batch, h, n_k, d_head)
            if cache is not None:
                k, v = cache.update(k, v)  # 接在缓存的旧位置后面：(batch, h, t, d_head)
        if mask is not None and mask.dim() == 3:
            mask = mask.unsqueeze(1)  # (batch, 1, n_q, n_k)：插入"头"这一维，所有头共用；2 维及以下自动广播
        # h 个头一起算：每个头在自己的 d_head 维子空间里做公式 (1)
        out, weights = scaled_dot_product_attention(q, k, v, mask, self.check_inputs)  # (batch, h, n_q, d_head), (batch, h, n_q, n_k)
        # Concat(head_1, …, head_h)：把头重新并排成 d_model 维
        out = out.transpose(1, 2).reshape(batch, n_q, self.d_model)  # (batch, n_q, d_model)
        return self.w_o(out), weights
# --8<-- [end:mha]


# --8<-- [start:kv-cache]
class KVCache:
    """一个注意力模块在增量解码时的 K、V 缓存：传给 MultiHeadAttention.forward 的 cache 参数。

    static=False（解码器自注意力）：每次 forward 把新位置的 K、V 接在后面，k、v 各 (batch, h, t, d_head)；
    static=True（交叉注意力）：第一次 forward 从 key、value 算出 K、V，之后只读，k、v 各 (batch, h, n, d_head)。
    """

    def __init__(self, static=False):
        self.static = static
        self.k = self.v = None  # 还没有缓存任何位置

    @property
    def length(self):
        """已缓存的位置数 t。"""
        return 0 if self.k is None else self.k.shape[-2]

    def update(self, k, v):
        """接上新位置的 k、v (batch, h, t_new, d_head)，返回到目前为止的全部 K、V (batch, h, t, d_head)。"""
        if self.k is None:
            self.k, self.v = k, v
        else:  # 为了清晰用 torch.cat，每步复制整块缓存；生产实现会预先分配到最大长度，或分页管理
            self.k = torch.cat([self.k, k], dim=-2)
            self.v = torch.cat([self.v, v], dim=-2)
        return self.k, self.v

    def nbytes(self):
        """缓存占的字节数（K 与 V 两块）。"""
        return 0 if self.k is None else self.k.nbytes + self.v.nbytes
# --8<-- [end:kv-cache]


# --8<-- [start:restricted]
def restricted_attention(q, k, v, r, mask=None, check_inputs=True):
    """论文 §4 的受限自注意力（restricted self-attention）：查询 i 只看 |i − j| ≤ r 的键 j。

    这里的 r 是**半径**：每个查询的窗口有 2r + 1 个位置（序列两端更少）。
    论文 §4 的 r 是"以输出位置为中心的邻域**大小**"：大小为 r_paper 的邻域对应这里的
    半径 r = ⌊r_paper / 2⌋（r_paper 为奇数时窗口恰好 r_paper = 2r + 1 个位置）。
    大 O 不受影响：每层 O(r·n·d)，最大路径 O(n/r)。

    q (..., n, d_k)，k (..., n, d_k)，v (..., n, d_v)：自注意力，三者长度相同。
    mask：可选，bool，只遮键（如 padding_mask 的输出），能广播到 (..., 1, n)，True = 真实 token。
    返回 out (..., n, d_v) 和窗口内的权重 weights (..., n, 2r + 1)：
    weights[..., i, w] 是查询 i 给键 j = i − r + w 的权重（窗口越界处为 0）。
    只算窗口里的分数，从不生成 n × n 矩阵。整行被遮住时 out 与 weights 全为 0。
    check_inputs=False 跳过输入检查（复杂度探针计时用）。
    """
    n, d_k = q.shape[-2], q.shape[-1]
    if check_inputs:
        _check_qkv(q, k, v)
        if not isinstance(r, int) or isinstance(r, bool):
            raise TypeError(f"r must be an int (the radius), got {type(r).__name__}: {_shapes(q=q, k=k, v=v)}")
        if r < 0:
            raise ValueError(f"r must be >= 0 (the radius), got r={r}: {_shapes(q=q, k=k, v=v)}")
        if k.shape[-2] != n:
            raise ValueError(f"k has n={k.shape[-2]} but q has n={n}; restricted attention is "
                             f"self-attention over one sequence: {_shapes(q=q, k=k, v=v)}")
        _check_mask(mask, q.shape[:-2] + (1, n), _shapes(q=q, k=k, v=v))
    width = 2 * r + 1
    # 在序列两端各补 r 个 0，补齐后第 i … i+2r 行正好是查询 i 的窗口
    k_win = F.pad(k, (0, 0, r, r)).unfold(-2, width, 1)  # (..., n, d_k, 2r+1)
    v_win = F.pad(v, (0, 0, r, r)).unfold(-2, width, 1)  # (..., n, d_v, 2r+1)
    scores = torch.einsum("...id,...idw->...iw", q, k_win) / math.sqrt(d_k)  # (..., n, 2r+1)
    # 窗口第 w 格对应原位置 j = i − r + w；补出来的格子（j < 0 或 j ≥ n）不许看
    j = torch.arange(n, device=q.device)[:, None] - r + torch.arange(width, device=q.device)  # (n, 2r+1)
    allowed = (j >= 0) & (j < n)  # (n, 2r+1)
    if mask is not None:
        key_mask = mask.expand(q.shape[:-2] + (1, n))[..., 0, :]  # (..., n)，expand 只是视图
        key_ok = F.pad(key_mask, (r, r), value=False).unfold(-1, width, 1)  # (..., n, 2r+1)
        allowed = allowed & key_ok
    scores = scores.masked_fill(~allowed, float("-inf"))
    weights = torch.softmax(scores, dim=-1).masked_fill(~allowed, 0.0)  # 整行被遮住：NaN → 0
    out = torch.einsum("...iw,...idw->...id", weights, v_win)  # (..., n, d_v)
    return out, weights
# --8<-- [end:restricted]


# --8<-- [start:online-softmax]
def online_softmax_update(m, l, acc, s, v_blk):
    """在线 softmax 的一步：把一块分数 s (..., bq, bk) 和它对应的 v_blk (..., bk, d_v) 并入 (m, l, acc)。

    m (..., bq, 1) 行最大值，l (..., bq, 1) 指数和，acc (..., bq, d_v) 未归一化输出；返回新的 (m, l, acc)。
    """
    m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))  # (..., bq, 1)
    # 一行到目前全被遮住时 m_new = -inf；拿 0 当参考点，避免 (-inf) − (-inf) = NaN
    ref = m_new.masked_fill(m_new == float("-inf"), 0.0)
    p = torch.exp(s - ref)  # (..., bq, bk)，被遮住处 exp(-inf) = 0
    scale = torch.exp(m - ref)  # 旧统计量的校正因子 exp(m − m')；第一块时为 0
    l = scale * l + p.sum(dim=-1, keepdim=True)
    acc = scale * acc + p @ v_blk
    return m_new, l, acc


def online_softmax_attention(q, k, v, block=128, mask=None):
    """FlashAttention 的思路：逐块扫过 K、V，用"在线 softmax"得到与公式 (1) 完全相同的结果。

    对每个查询块，维护三样东西：到目前为止的行最大值 m、指数和 l、未归一化的输出 acc。
    来了一块新分数 s，新最大值 m' = max(m, max s)，旧的 l、acc 乘上 exp(m − m') 校正，
    再加上这一块的贡献；最后 out = acc / l。
    查询也分块，所以同时存在的分数只有 block × block 个：除输出外，峰值内存 O(block² + block·d)，
    从不生成 n × n 矩阵（计算量仍是 O(n²·d)）。

    q (..., n_q, d_k)，k (..., n_k, d_k)，v (..., n_k, d_v)；block：块大小（正整数，可以不整除 n）。
    mask：可选，bool，True = 可以看，能广播到 (..., n_q, n_k)，按块切片使用。
    只返回 out (..., n_q, d_v)，与 q 同 dtype：权重从不存下来。整行被遮住时该行输出为 0。
    m、l、acc 至少用 float32 累加（bf16/fp16 的输入也一样），只有写回 out 时才转回 q 的 dtype。
    """
    _check_qkv(q, k, v)
    if not isinstance(block, int) or isinstance(block, bool):
        raise TypeError(f"block must be an int, got {type(block).__name__}: {_shapes(q=q, k=k, v=v)}")
    if block <= 0:
        raise ValueError(f"block must be >= 1, got block={block}: {_shapes(q=q, k=k, v=v)}")
    n_q, n_k, d_k = q.shape[-2], k.shape[-2], q.shape[-1]
    _check_mask(mask, q.shape[:-2] + (n_q, n_k), _shapes(q=q, k=k, v=v))
    if mask is not None:
        mask = mask.expand(q.shape[:-2] + (n_q, n_k))  # 只是视图，不占 n_q × n_k 的新内存
    acc_dtype = torch.promote_types(q.dtype, torch.float32)  # 累加的精度：至少 float32
    out = q.new_empty(q.shape[:-1] + v.shape[-1:])  # (..., n_q, d_v)
    for i in range(0, n_q, block):
        q_blk = q[..., i:i + block, :].to(acc_dtype) / math.sqrt(d_k)  # (..., bq, d_k)
        m = q_blk.new_full(q_blk.shape[:-1] + (1,), float("-inf"))  # (..., bq, 1) 行最大值
        l = q_blk.new_zeros(q_blk.shape[:-1] + (1,))  # (..., bq, 1) 指数和
        acc = q_blk.new_zeros(q_blk.shape[:-1] + v.shape[-1:])  # (..., bq, d_v) 未归一化输出
        for j in range(0, n_k, block):
            s = q_blk @ k[..., j:j + block, :].to(acc_dtype).transpose(-2, -1)  # (..., bq, bk)
            if mask is not None:
                s = s.masked_fill(~mask[..., i:i + block, j:j + block], float("-inf"))
            m, l, acc = online_softmax_update(m, l, acc, s, v[..., j:j + block, :].to(acc_dtype))
        # out = acc / l；整行被遮住时 acc = l = 0，约定输出 0
        out[..., i:i + block, :] = acc / l.masked_fill(l == 0, 1.0)
    return out
# --8<-- [end:online-softmax]


# --8<-- [start:checks]
def _shapes(**tensors):
    """把若干张量的形状写成 "q (2, 5, 16), k (2, 7, 8)"，用在报错信息里。"""
    return ", ".join(f"{name} {tuple(t.shape)}" for name, t in tensors.items())


def _check_qkv(q, k, v):
    """q (..., n_q, d_k)、k (..., n_k, d_k)、v (..., n_k, d_v)：逐项检查，报错时写出形状。"""
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    shapes = _shapes(q=q, k=k, v=v)
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not t.is_floating_point():
            raise TypeError(f"{name} must be a floating-point tensor, got {t.dtype}: {shapes}")
        if t.dtype != q.dtype:
            raise TypeError(f"{name} has dtype {t.dtype} but q has {q.dtype}: {shapes}")
        if t.dim() < 2:
            raise ValueError(f"{name} must have shape (..., n, d), got {t.dim()} dims: {shapes}")
        if t.shape[:-2] != q.shape[:-2]:
            raise ValueError(f"{name} has batch dims {tuple(t.shape[:-2])} "
                             f"but q has {tuple(q.shape[:-2])}: {shapes}")
        if t.shape[-2] == 0 or t.shape[-1] == 0:
            raise ValueError(f"{name} is empty (n = 0 or d = 0): {shapes}")
    if k.shape[-1] != q.shape[-1]:
        raise ValueError(f"k has d_k={k.shape[-1]} but q has d_k={q.shape[-1]}: {shapes}")
    if v.shape[-2] != k.shape[-2]:
        raise ValueError(f"v has n_k={v.shape[-2]} but k has n_k={k.shape[-2]}: {shapes}")


def _check_mask(mask, target, shapes):
    """mask 必须是 bool，并且能广播到 target（比如分数矩阵的形状 (..., n_q, n_k)）。"""
    if mask is None:
        return
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
        got = mask.dtype if isinstance(mask, torch.Tensor) else type(mask).__name__
        where = f"mask {tuple(mask.shape)}, " if isinstance(mask, torch.Tensor) else ""
        raise TypeError(f"mask must be a bool tensor (True = may attend), got {got}: {where}{shapes}")
    try:
        ok = torch.broadcast_shapes(mask.shape, target) == target
    except RuntimeError:
        ok = False
    if not ok:
        raise ValueError(f"mask {tuple(mask.shape)} cannot broadcast to {tuple(target)}: {shapes}")


def _check_mha_inputs(mha, query, key, value, mask, cache=None):
    """MultiHeadAttention（及同样接口的 GroupedQueryAttention）的输入检查：形状、dtype、掩码、缓存。"""
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    shapes = _shapes(query=query, key=key, value=value)
    dtype = mha.w_q.weight.dtype
    for name, t in (("query", query), ("key", key), ("value", value)):
        if t.dtype != dtype:
            raise TypeError(f"{name} has dtype {t.dtype} but the weights have {dtype}: {shapes}")
        if t.dim() != 3 or t.shape[-1] != mha.d_model:
            raise ValueError(f"{name} must have shape (batch, n, d_model={mha.d_model}): {shapes}")
        if t.shape[0] != query.shape[0]:
            raise ValueError(f"{name} has batch {t.shape[0]} but query has {query.shape[0]}: {shapes}")
        if t.shape[1] == 0:
            raise ValueError(f"{name} is an empty sequence (n = 0): {shapes}")
    if value.shape[1] != key.shape[1]:
        raise ValueError(f"value has n_k={value.shape[1]} but key has n_k={key.shape[1]}: {shapes}")
    batch, n_q = query.shape[0], query.shape[1]
    if cache is not None and cache.k is not None:
        where = f"cache.k {tuple(cache.k.shape)}, {shapes}"
        if cache.k.shape[0] != batch:
            raise ValueError(f"cache holds batch {cache.k.shape[0]} but query has {batch}: {where}")
        if cache.static and cache.k.shape[-2] != key.shape[1]:
            raise ValueError(f"cache holds n_k={cache.k.shape[-2]} but key has n_k={key.shape[1]}: {where}")
    # 自注意力的缓存：新位置的键接在缓存的 t 个旧位置后面，掩码的最后一维是 t + n_k
    n_k = key.shape[1] + (cache.length if cache is not None and not cache.static else 0)
    per_head = isinstance(mask, torch.Tensor) and mask.dim() == 4
    target = (batch, mha.num_heads, n_q, n_k) if per_head else (batch, n_q, n_k)
    _check_mask(mask, torch.Size(target), shapes)
# --8<-- [end:checks]
