"""第 12 章：推理服务里的 KV 缓存管理。

- 分页 KV 缓存（PagedAttention 的块表，Kwon et al. 2023，arXiv 2309.06180）：与第 02 章的 KVCache 接口相同，
  批里每个序列一张块表，可以直接交给读者的解码器；
- KV 缓存的 int8 量化（按词元对称量化）与它的误差上界；
- 在一条模拟的请求序列上：连续预留与分页的显存浪费，静态批处理与连续批处理的吞吐与延迟。

注意：真正的 PagedAttention 内核按块表直接从各块读 K、V；这里为了清楚，update 把块拼回连续张量再交给
公式 (1)，数值相同，但没有省掉那次复制。测试：tests/ch12/。
"""

# --8<-- [start:imports]
import math

import torch
# --8<-- [end:imports]


# --8<-- [start:paged]
class BlockPool:
    """所有请求共用的物理块：k、v 各 (n_blocks, h, block_size, d_head)，外加一个空闲块列表。"""

    def __init__(self, n_blocks, block_size, n_heads, d_head, dtype=torch.float32, device=None):
        _check_positive(n_blocks=n_blocks, block_size=block_size, n_heads=n_heads, d_head=d_head)
        self.block_size = block_size
        self.k = torch.zeros(n_blocks, n_heads, block_size, d_head, dtype=dtype, device=device)
        self.v = torch.zeros_like(self.k)
        self.free = list(range(n_blocks))  # 空闲的物理块号

    def allocate(self):
        if not self.free:
            raise RuntimeError(f"out of KV blocks: all {self.k.shape[0]} blocks are in use")
        return self.free.pop(0)


class PagedKVCache:
    """一个注意力模块的分页缓存，批里每个序列一张块表。接口与 KVCache 相同：static、k、length、update、nbytes。

    block_tables[r][b] = 第 r 个序列的第 b 个逻辑块所在的物理块号；
    第 t 个词元在逻辑块 t // block_size 的第 t % block_size 格。
    """

    static = False
    k = None  # MultiHeadAttention 只在 static=True 时读 cache.k

    def __init__(self, pool):
        self.pool, self.block_tables, self.length = pool, [], 0

    def update(self, k, v):
        """接上新位置的 k、v (batch, h, t_new, d_head)，返回到目前为止的全部 K、V (batch, h, t, d_head)。

        为了清楚，这里每一步都按块表把各块拼回一份连续的 K、V 再交给公式 (1)：每步复制整段缓存。
        真正的分页注意力内核不做这次复制，而是在算注意力时按块表直接从池子里的各块读 K、V。
        """
        _check_paged(self, k, v)
        if not self.block_tables:  # 第一次调用：批里每个序列一张空块表
            self.block_tables = [[] for _ in range(k.shape[0])]
        size = self.pool.block_size
        for s in range(k.shape[-2]):  # 逐个词元写进它所在的块；块满了才向池子要新块
            if self.length % size == 0:
                for table in self.block_tables:
                    table.append(self.pool.allocate())
            blocks = torch.tensor([table[-1] for table in self.block_tables], device=k.device)  # (batch,)
            slot = self.length % size
            self.pool.k[blocks, :, slot] = k[:, :, s]  # (batch, h, d_head)：每个序列写进自己的块
            self.pool.v[blocks, :, slot] = v[:, :, s]
            self.length += 1
        table = torch.tensor(self.block_tables, device=k.device)  # (batch, 块数)
        batch, h, d = k.shape[0], k.shape[1], k.shape[-1]
        keys = self.pool.k[table].transpose(1, 2).reshape(batch, h, -1, d)[:, :, :self.length]  # (batch, h, t, d_head)
        values = self.pool.v[table].transpose(1, 2).reshape(batch, h, -1, d)[:, :, :self.length]
        return keys, values

    def release(self):
        """请求结束：把它的块还给池子。"""
        for table in self.block_tables:
            self.pool.free.extend(table)
        self.block_tables, self.length = [], 0

    def nbytes(self):
        """占用的字节数：按整块计（最后一块可能没填满）。"""
        return 2 * sum(len(table) for table in self.block_tables) * self.pool.k[0].nbytes
# --8<-- [end:paged]


# --8<-- [start:quant]
def quantize_int8(x, dim=-1):
    """对称 int8 量化：沿 dim 的每一组共用一个缩放 s = max|x| / 127，q = round(x / s) ∈ [−127, 127]。

    KV 缓存里取 dim = -1（每个词元、每个头一组，d_head 个数）。返回 (q int8, s 与 x 同 dtype、dim 处为 1)。
    """
    scale = x.abs().amax(dim=dim, keepdim=True) / 127.0
    scale = scale.masked_fill(scale == 0, 1.0)  # 全零的一组：任意缩放都精确
    q = torch.round(x / scale).clamp(-127, 127).to(torch.int8)
    return q, scale


def dequantize_int8(q, scale):
    """反量化 x̂ = q · s；逐元素误差 |x − x̂| ≤ s / 2。"""
    return q.to(scale.dtype) * scale
# --8<-- [end:quant]


# --8<-- [start:simulate]
def make_trace(n_requests, seed=0, prompt=(16, 512), output=(16, 512), mean_gap=2.0):
    """模拟的请求序列：每个请求 (到达的步, 提示长度, 输出长度)，长度在区间里对数均匀，到达间隔服从指数分布。"""
    g = torch.Generator().manual_seed(seed)

    def loguniform(lo, hi):
        return int(round(math.exp(math.log(lo) + torch.rand((), generator=g).item() * math.log(hi / lo))))

    t, trace = 0.0, []
    for _ in range(n_requests):
        t += -mean_gap * math.log(1.0 - torch.rand((), generator=g).item())
        trace.append((int(t), loguniform(*prompt), loguniform(*output)))
    return trace


def kv_waste(lengths, max_len, block_size):
    """一批同时在跑的请求（当前长度 lengths）：连续预留与分页各占多少个词元位置、浪费的比例。

    连续预留：每个请求按 max_len 预留一整段；分页：每个请求占 ⌈len / block_size⌉ 个块。
    """
    _check_positive(max_len=max_len, block_size=block_size)
    if len(lengths) == 0 or any(isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= max_len
                                for n in lengths):
        raise ValueError(f"lengths must hold at least one int in [1, max_len={max_len}], got lengths={list(lengths)}")
    used = sum(lengths)
    contiguous = len(lengths) * max_len
    paged = sum(math.ceil(n / block_size) * block_size for n in lengths)
    return {"used": used, "contiguous": contiguous, "paged": paged,
            "contiguous_waste": 1 - used / contiguous, "paged_waste": 1 - used / paged}


def simulate_batching(trace, policy, max_batch=16, record_lengths=False):
    """按步模拟解码：每步 = 一次前向，给批里每个请求各生成一个词（提示的预填充算作第一步）。

    "static"：批满或队列空时才组一批，整批跑到最长的请求结束，才接新请求；
    "continuous"：每一步结束后，完成的请求离开，排队的请求立刻补进空位（迭代级调度，Orca）。
    返回总步数、生成的词数、每步平均词数（吞吐）、平均与 p90 延迟（步，从到达到最后一个词）；
    record_lengths=True 时再返回每一步批里各请求的当前长度（提示 + 已生成），给 kv_waste 用。
    """
    if policy not in ("static", "continuous"):
        raise ValueError(f"policy must be 'static' or 'continuous', got policy={policy!r}")
    _check_positive(max_batch=max_batch)  # max_batch = 0 时谁也进不了批，下面的循环永远不结束
    if not trace or any(out_len < 1 for _, _, out_len in trace):
        raise ValueError(f"trace must hold at least one request, each with an output length >= 1, "
                         f"got {len(trace)} requests")
    pending = sorted(trace)  # (到达, 提示, 输出)
    running, latency, lengths, step, tokens, busy = [], [], [], 0, 0, 0
    while pending or running:
        may_join = policy == "continuous" or not running
        while may_join and pending and pending[0][0] <= step and len(running) < max_batch:
            arrival, prompt, out_len = pending.pop(0)
            running.append([arrival, out_len, prompt])  # [到达的步, 还要生成的词数, 当前长度]
        if not running:  # 没有请求在跑：空转到下一个请求到达
            step = pending[0][0]
            continue
        step += 1
        busy += 1
        for r in running:
            if r[1] > 0:  # 静态批里已经完成的请求仍占着位置，只是不再产出
                r[1] -= 1
                r[2] += 1
                tokens += 1
                if r[1] == 0:
                    latency.append(step - r[0])  # 最后一个词在这一步出来
        if record_lengths:
            lengths.append([r[2] for r in running])
        if policy == "continuous" or all(r[1] == 0 for r in running):
            running = [r for r in running if r[1] > 0]
    latency.sort()
    out = {"steps": step, "busy_steps": busy, "tokens": tokens, "tokens_per_step": tokens / busy,
           "mean_latency": sum(latency) / len(latency), "p90_latency": latency[int(0.9 * (len(latency) - 1))]}
    if record_lengths:
        out["lengths"] = lengths
    return out
# --8<-- [end:simulate]


# --8<-- [start:checks]
def _check_paged(cache, k, v):
    pool = cache.pool.k  # (n_blocks, h, block_size, d_head)
    for name, t in (("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    shapes = f"k {tuple(k.shape)}, v {tuple(v.shape)}, pool blocks {tuple(pool.shape)}"
    for name, t in (("k", k), ("v", v)):
        if t.dtype != pool.dtype:  # 不悄悄转换精度
            raise ValueError(f"{name} has dtype {t.dtype} but the block pool holds {pool.dtype}: {shapes}")
        if t.device != pool.device:
            raise ValueError(f"{name} is on {t.device} but the block pool is on {pool.device}: {shapes}")
        if t.dim() != 4 or t.shape[1] != pool.shape[1] or t.shape[-1] != pool.shape[-1]:
            raise ValueError(f"{name} must have shape (batch, h={pool.shape[1]}, t_new, d_head={pool.shape[-1]}): "
                             f"{shapes}")
    if k.shape != v.shape:
        raise ValueError(f"k and v must have the same shape: {shapes}")
    if k.shape[0] == 0 or k.shape[-2] == 0:
        raise ValueError(f"k has batch = 0 or t_new = 0: {shapes}")
    if cache.block_tables and k.shape[0] != len(cache.block_tables):
        raise ValueError(f"k has batch {k.shape[0]} but the cache holds {len(cache.block_tables)} sequences: {shapes}")


def _check_positive(**sizes):
    for name, x in sizes.items():
        if not isinstance(x, int) or isinstance(x, bool) or x <= 0:
            raise ValueError(f"{name} must be a positive int, got {name}={x!r} ({sizes})")
# --8<-- [end:checks]
