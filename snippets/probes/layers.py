"""探针用的层（probe layers）：批大小显式、无偏置、只用显式的批量矩阵乘法。

为什么不用 ``nn.MultiheadAttention`` / ``nn.LSTM`` / CPU 上的 4-D SDPA？
``torch.utils.flop_counter.FlopCounterMode`` 对 ``aten.mv``、CPU 的 4-D SDPA（flash 内核）、
oneDNN 的 ``nn.LSTM`` 都记 0 次浮点运算，``need_weights=False`` 的 MHA 只记投影。
所以这里每一层都用 ``@``（``mm``/``bmm``）写出来，计数器才能看见每一次乘加。

每个层是一个 :class:`ProbeLayer`：``fn(*inputs)`` 是前向，``params`` 是权重，
``make_inputs(batch, n)`` 造输入。形状一律 ``(batch, n, d)``。

闭式 FLOPs（batch 1，一次乘加记 2 次 FLOP）见 :mod:`snippets.probes.flops`。
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import torch
import torch.nn.functional as F

__all__ = [
    "ProbeLayer",
    "make_layer",
    "LAYER_KINDS",
    "naive_attention",
    "restricted_window_mask",
]


@dataclass
class ProbeLayer:
    """一个可计数、可计时的层。

    - ``name``：层的名字（``attention``、``rnn`` ……）。
    - ``fn``：前向函数 ``fn(*inputs) -> (batch, n, d)``。
    - ``params``：所有权重（叶子张量）。
    - ``n_inputs``：``fn`` 接收几个 ``(batch, n, d)`` 输入（注意力核心是 3 个：q、k、v）。
    - ``d``、``dtype``、``device``：造输入用。
    """

    name: str
    fn: Callable[..., torch.Tensor]
    params: list[torch.Tensor]
    d: int
    n_inputs: int = 1
    dtype: torch.dtype = torch.float32
    device: torch.device | str = "cpu"
    meta: dict = field(default_factory=dict)

    def make_inputs(
        self, batch: int, n: int, *, requires_grad: bool = False, generator=None
    ) -> tuple[torch.Tensor, ...]:
        xs = []
        for _ in range(self.n_inputs):
            x = torch.randn(batch, n, self.d, generator=generator, dtype=self.dtype)  # (batch, n, d)
            x = x.to(self.device).requires_grad_(requires_grad)
            xs.append(x)
        return tuple(xs)

    def __call__(self, *inputs: torch.Tensor) -> torch.Tensor:
        return self.fn(*inputs)

    def requires_grad_(self, flag: bool = True) -> "ProbeLayer":
        for p in self.params:
            p.requires_grad_(flag)
        return self


def _weight(shape, *, fan_in, generator, dtype, device) -> torch.Tensor:
    # 均匀分布 U(-1/sqrt(fan_in), 1/sqrt(fan_in))，和 PyTorch 线性层的默认初始化同阶
    bound = 1.0 / math.sqrt(fan_in)
    w = (torch.rand(*shape, generator=generator, dtype=dtype) * 2 - 1) * bound
    return w.to(device)


def naive_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """朴素注意力：显式写出 n×n 的分数矩阵和 softmax 矩阵。

    q, k, v: ``(..., n, d)``。``scores`` 与 ``weights`` 在 ``weights @ v`` 分配输出时同时存活，
    所以峰值是 ``2·n²·b + n·d·b`` 字节（b = 每个元素的字节数；fp32 时 8n² + 4nd），
    推导见 :mod:`snippets.probes.memory`。
    """
    d = q.shape[-1]
    scores = q @ k.transpose(-2, -1) / math.sqrt(d)  # (..., n, n)
    weights = torch.softmax(scores, dim=-1)  # (..., n, n)
    return weights @ v  # (..., n, d)


def restricted_window_mask(n: int, radius: int, device=None) -> torch.Tensor:
    """窗口 ``2r+1`` 中落在序列外（补零处）的位置：``(n, 2r+1)`` 布尔张量，True 表示屏蔽。"""
    i = torch.arange(n, device=device).unsqueeze(1)  # (n, 1)
    off = torch.arange(2 * radius + 1, device=device).unsqueeze(0) - radius  # (1, 2r+1)
    j = i + off  # (n, 2r+1) 被看的位置
    return (j < 0) | (j >= n)


def make_layer(
    kind: str,
    d: int,
    *,
    heads: int = 1,
    radius: int = 4,
    kernel: int = 3,
    dilation: int = 1,
    forget_bias: float = 0.0,
    seed: int = 0,
    dtype: torch.dtype = torch.float32,
    device: torch.device | str = "cpu",
    requires_grad: bool = False,
) -> ProbeLayer:
    """造一个探针层。``kind`` 取 :data:`LAYER_KINDS` 之一。

    - ``attention``：单层自注意力，带 Q/K/V/O 投影，``heads`` 个头（d 必须能被整除）。
    - ``attention_core``：只有 ``softmax(q kᵀ/√d) v``，输入是 q、k、v 三个张量。
    - ``restricted``：每个位置只看半径 ``radius`` 内的 ``2r+1`` 个位置（``unfold`` 实现）。
    - ``rnn``：Elman RNN，``h_t = tanh(x_t W_x + h_{t-1} W_h)``，逐位置手写循环。
    - ``lstm``：手写 LSTM 单元（门的顺序 i, f, g, o），遗忘门可加常数偏置 ``forget_bias``。
    - ``gru``：手写 GRU 单元（门的顺序 r, z, n）。
    - ``conv``：因果 Conv1d，核宽 ``kernel``，膨胀 ``dilation``，左侧补零保持长度 n。
    - ``sdpa``：``F.scaled_dot_product_attention``（4-D，单头），带 Q/K/V/O 投影；
      CPU 上计数器对它记 0（flash 内核），只用于计时和内存。
    """
    if kind not in LAYER_KINDS:
        raise ValueError(f"kind={kind!r} 不是已知的层，可选 {LAYER_KINDS}")
    if d <= 0:
        raise ValueError(f"d={d} 必须为正")
    g = torch.Generator().manual_seed(seed)
    kw = dict(generator=g, dtype=dtype, device=device)
    meta: dict = {}

    if kind in ("attention", "sdpa", "restricted"):
        if d % heads:
            raise ValueError(f"d={d} 不能被 heads={heads} 整除")
        Wq, Wk, Wv, Wo = (_weight((d, d), fan_in=d, **kw) for _ in range(4))
        params = [Wq, Wk, Wv, Wo]
        dh = d // heads

        if kind == "attention":
            meta["heads"] = heads

            def fn(x):  # x: (B, n, d)
                B, n, _ = x.shape
                q = (x @ Wq).view(B, n, heads, dh).transpose(1, 2)  # (B, h, n, dh)
                k = (x @ Wk).view(B, n, heads, dh).transpose(1, 2)  # (B, h, n, dh)
                v = (x @ Wv).view(B, n, heads, dh).transpose(1, 2)  # (B, h, n, dh)
                s = q @ k.transpose(-2, -1) / math.sqrt(dh)  # (B, h, n, n)
                p = torch.softmax(s, dim=-1)  # (B, h, n, n)
                o = (p @ v).transpose(1, 2).reshape(B, n, d)  # (B, n, d)
                return o @ Wo  # (B, n, d)

        elif kind == "sdpa":
            meta["heads"] = heads

            def fn(x):  # x: (B, n, d)
                B, n, _ = x.shape
                q = (x @ Wq).view(B, n, heads, dh).transpose(1, 2)  # (B, h, n, dh)
                k = (x @ Wk).view(B, n, heads, dh).transpose(1, 2)
                v = (x @ Wv).view(B, n, heads, dh).transpose(1, 2)
                o = F.scaled_dot_product_attention(q, k, v)  # (B, h, n, dh)
                return o.transpose(1, 2).reshape(B, n, d) @ Wo  # (B, n, d)

        else:  # restricted
            r = int(radius)
            if r < 0:
                raise ValueError(f"radius={r} 不能为负")
            w = 2 * r + 1
            meta.update(radius=r, window=w)

            def fn(x):  # x: (B, n, d)
                B, n, _ = x.shape
                q = x @ Wq  # (B, n, d)
                k = F.pad(x @ Wk, (0, 0, r, r))  # (B, n+2r, d)
                v = F.pad(x @ Wv, (0, 0, r, r))  # (B, n+2r, d)
                kw_ = k.unfold(1, w, 1)  # (B, n, d, w)  位置 i 的窗口 [i-r, i+r]
                vw_ = v.unfold(1, w, 1)  # (B, n, d, w)
                s = (q.unsqueeze(-2) @ kw_) / math.sqrt(d)  # (B, n, 1, w)
                mask = restricted_window_mask(n, r, device=x.device)  # (n, w)
                s = s.masked_fill(mask.unsqueeze(-2), float("-inf"))
                p = torch.softmax(s, dim=-1)  # (B, n, 1, w)
                o = (p @ vw_.transpose(-2, -1)).squeeze(-2)  # (B, n, d)
                return o @ Wo  # (B, n, d)

        layer = ProbeLayer(kind, fn, params, d, 1, dtype, device, meta)

    elif kind == "attention_core":

        def fn(q, k, v):  # 每个 (B, n, d)
            s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (B, n, n)
            return torch.softmax(s, dim=-1) @ v  # (B, n, d)

        layer = ProbeLayer(kind, fn, [], d, 3, dtype, device, meta)

    elif kind == "rnn":
        Wx, Wh = _weight((d, d), fan_in=d, **kw), _weight((d, d), fan_in=d, **kw)

        def fn(x):  # x: (B, n, d)
            B, n, _ = x.shape
            h = x.new_zeros(B, d)  # (B, d) 初始状态 h_0 = 0，不需要梯度
            hs = []
            for t in range(n):
                h = torch.tanh(x[:, t] @ Wx + h @ Wh)  # (B, d)
                hs.append(h)
            return torch.stack(hs, dim=1)  # (B, n, d)

        layer = ProbeLayer(kind, fn, [Wx, Wh], d, 1, dtype, device, meta)

    elif kind == "lstm":
        Wx, Wh = _weight((d, 4 * d), fan_in=d, **kw), _weight((d, 4 * d), fan_in=d, **kw)
        bf = float(forget_bias)
        meta["forget_bias"] = bf

        def fn(x):  # x: (B, n, d)
            B, n, _ = x.shape
            h = x.new_zeros(B, d)  # (B, d)
            c = x.new_zeros(B, d)  # (B, d)
            hs = []
            for t in range(n):
                z = x[:, t] @ Wx + h @ Wh  # (B, 4d)
                i, f, gg, o = z.chunk(4, dim=-1)  # 各 (B, d)
                if bf:
                    f = f + bf
                c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(gg)
                h = torch.sigmoid(o) * torch.tanh(c)
                hs.append(h)
            return torch.stack(hs, dim=1)  # (B, n, d)

        layer = ProbeLayer(kind, fn, [Wx, Wh], d, 1, dtype, device, meta)

    elif kind == "gru":
        Wx, Wh = _weight((d, 3 * d), fan_in=d, **kw), _weight((d, 3 * d), fan_in=d, **kw)

        def fn(x):  # x: (B, n, d)
            B, n, _ = x.shape
            h = x.new_zeros(B, d)  # (B, d)
            hs = []
            for t in range(n):
                gx = x[:, t] @ Wx  # (B, 3d)
                gh = h @ Wh  # (B, 3d)
                xr, xz, xn = gx.chunk(3, dim=-1)
                hr, hz, hn = gh.chunk(3, dim=-1)
                r = torch.sigmoid(xr + hr)
                z = torch.sigmoid(xz + hz)
                cand = torch.tanh(xn + r * hn)
                h = (1 - z) * cand + z * h
                hs.append(h)
            return torch.stack(hs, dim=1)  # (B, n, d)

        layer = ProbeLayer(kind, fn, [Wx, Wh], d, 1, dtype, device, meta)

    else:  # conv
        k_, dil = int(kernel), int(dilation)
        if k_ < 1 or dil < 1:
            raise ValueError(f"kernel={k_} 与 dilation={dil} 必须 ≥ 1")
        W = _weight((d, d, k_), fan_in=d * k_, **kw)  # (out, in, k)
        meta.update(kernel=k_, dilation=dil)

        def fn(x):  # x: (B, n, d)
            xt = F.pad(x.transpose(1, 2), ((k_ - 1) * dil, 0))  # (B, d, n + (k-1)·dil) 因果：只在左边补零
            return F.conv1d(xt, W, dilation=dil).transpose(1, 2)  # (B, n, d)

        layer = ProbeLayer(kind, fn, [W], d, 1, dtype, device, meta)

    layer.requires_grad_(requires_grad)
    return layer


LAYER_KINDS = ("attention", "attention_core", "restricted", "rnn", "lstm", "gru", "conv", "sdpa")
