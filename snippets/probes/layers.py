"""探针测的层：页面上的读者代码，外加三种页面不展示的层。

- ``attention``：``MultiHeadAttention(d, heads, bias=False)``（snippets/attention.py:mha）；
- ``attention_core``：``scaled_dot_product_attention(q, k, v)``（公式 (1)，输入是 q、k、v）；
- ``restricted``：``restricted_attention``，Q/K/V/O 投影借用一个单头 ``MultiHeadAttention`` 的权重；
- ``rnn``、``lstm``：``RNNLayer``、``LSTMLayer``（逐步的 Python 循环，与页面一致）；
- 只在探针里的层：``gru``（手写单元，门的顺序 r, z, n）、``conv``（因果 Conv1d）、
  ``sdpa``（``F.scaled_dot_product_attention``，4-D 融合内核，投影同 ``attention``）。

读者代码的输入检查在这里关掉（``check_inputs = False``）：n 很小时，Python 层面的检查会占掉
可观的墙钟时间；计数（FLOPs、路径、关键路径）不受影响。所有层都去掉偏置，好和闭式对照
（:mod:`snippets.probes.facts`）。每个层是一个 :class:`ProbeLayer`：``fn(*inputs)`` 是前向，
``params`` 是权重，``make_inputs(batch, n)`` 造 ``(batch, n, d)`` 的输入。
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn

from snippets.attention import MultiHeadAttention, restricted_attention, scaled_dot_product_attention
from snippets.lstm import LSTMLayer
from snippets.rnn import RNNLayer

LAYER_KINDS = ("attention", "attention_core", "restricted", "rnn", "lstm", "gru", "conv", "sdpa")


@dataclass
class ProbeLayer:
    """一个可计数、可计时的层：``fn(*inputs) -> (batch, n, d)``，``params`` 是全部权重。"""

    name: str
    fn: Callable[..., torch.Tensor]
    params: list[torch.Tensor]
    d: int
    n_inputs: int = 1
    dtype: torch.dtype = torch.float32
    device: torch.device | str = "cpu"
    module: nn.Module | None = None  # 读者代码的模块（有的话），同步轮次等需要它
    meta: dict = field(default_factory=dict)

    def make_inputs(self, batch: int, n: int, *, requires_grad: bool = False, generator=None):
        return tuple(torch.randn(batch, n, self.d, generator=generator, dtype=self.dtype)
                     .to(self.device).requires_grad_(requires_grad) for _ in range(self.n_inputs))

    def __call__(self, *inputs: torch.Tensor) -> torch.Tensor:
        return self.fn(*inputs)


class GRUCell(nn.Module):
    """只在探针里的 GRU 单元（没有页面展示它）：r, z, n 三个门，无偏置。"""

    def __init__(self, d: int):
        super().__init__()
        bound = 1 / math.sqrt(d)
        self.w_ih = nn.Parameter(torch.empty(3 * d, d).uniform_(-bound, bound))  # (3d, d)
        self.w_hh = nn.Parameter(torch.empty(3 * d, d).uniform_(-bound, bound))  # (3d, d)

    def forward(self, x):  # x: (batch, n, d) -> (batch, n, d)
        h, hs = x.new_zeros(x.shape[0], x.shape[2]), []
        for t in range(x.shape[1]):
            xr, xz, xn = (x[:, t] @ self.w_ih.T).chunk(3, dim=-1)
            hr, hz, hn = (h @ self.w_hh.T).chunk(3, dim=-1)
            r, z = torch.sigmoid(xr + hr), torch.sigmoid(xz + hz)
            h = (1 - z) * torch.tanh(xn + r * hn) + z * h
            hs.append(h)
        return torch.stack(hs, dim=1)


class CausalConv(nn.Module):
    """只在探针里的因果卷积：左侧补 (k−1)·dilation 个零，长度不变。"""

    def __init__(self, d: int, kernel: int, dilation: int):
        super().__init__()
        if kernel < 1 or dilation < 1:
            raise ValueError(f"kernel={kernel} and dilation={dilation} must be >= 1")
        self.pad = (kernel - 1) * dilation
        self.conv = nn.Conv1d(d, d, kernel, dilation=dilation, bias=False)

    def forward(self, x):  # x: (batch, n, d)
        return self.conv(F.pad(x.transpose(1, 2), (self.pad, 0))).transpose(1, 2)


def _no_checks(module: nn.Module) -> nn.Module:
    for m in module.modules():
        if hasattr(m, "check_inputs"):
            m.check_inputs = False
    return module


def make_layer(kind: str, d: int, *, heads: int = 1, radius: int = 4, kernel: int = 3, dilation: int = 1,
               forget_bias: float | None = None, seed: int = 0, dtype: torch.dtype = torch.float32,
               device: torch.device | str = "cpu", requires_grad: bool = False) -> ProbeLayer:
    """造一个探针层（权重由 ``seed`` 决定）。``kind`` 取 :data:`LAYER_KINDS` 之一。"""
    if kind not in LAYER_KINDS:
        raise ValueError(f"kind={kind!r} is not a probe layer; choose from {LAYER_KINDS}")
    if d <= 0:
        raise ValueError(f"d={d} must be positive")
    torch.manual_seed(seed)
    n_inputs, meta = 1, {}
    if kind in ("attention", "sdpa", "restricted"):
        module = MultiHeadAttention(d, 1 if kind == "restricted" else heads, bias=False)
        meta["heads"] = module.num_heads
    elif kind == "rnn":
        module = RNNLayer(d, d)
    elif kind == "lstm":
        module = LSTMLayer(d, d, forget_bias=forget_bias)
    elif kind == "gru":
        module = GRUCell(d)
    elif kind == "conv":
        module = CausalConv(d, int(kernel), int(dilation))
        meta.update(kernel=int(kernel), dilation=int(dilation))
    else:  # attention_core：没有权重
        module = None
        n_inputs = 3
    if module is not None:  # 循环层的偏置 b 保留：计数器不数加法，闭式不受影响
        module = _no_checks(module.to(device=device, dtype=dtype)).requires_grad_(requires_grad)

    if kind == "attention":
        def fn(x):  # (B, n, d)
            return module(x, x, x)[0]
    elif kind == "sdpa":
        def fn(x):  # (B, n, d)：投影与拆头同 MultiHeadAttention，核心换成 PyTorch 的融合内核
            q, k, v = (module._split_heads(w(x)) for w in (module.w_q, module.w_k, module.w_v))  # (B, h, n, d_head)
            out = F.scaled_dot_product_attention(q, k, v)  # (B, h, n, d_head)
            return module.w_o(out.transpose(1, 2).reshape(x.shape))
    elif kind == "restricted":
        r = int(radius)
        meta.update(radius=r, window=2 * r + 1)

        def fn(x):  # (B, n, d)
            out, _ = restricted_attention(module.w_q(x), module.w_k(x), module.w_v(x), r, check_inputs=False)
            return module.w_o(out)
    elif kind == "rnn":
        def fn(x):
            return module(x)
    elif kind == "lstm":
        meta["forget_bias"] = forget_bias

        def fn(x):
            return module(x)[0]
    elif kind in ("gru", "conv"):
        fn = module
    else:
        def fn(q, k, v):  # 各 (B, n, d)
            return scaled_dot_product_attention(q, k, v, check_inputs=False)[0]

    params = list(module.parameters()) if module is not None else []
    return ProbeLayer(kind, fn, params, d, n_inputs, dtype, device, module, meta)
