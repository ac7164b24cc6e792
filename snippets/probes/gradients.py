"""梯度随距离的衰减：‖∂L/∂x_{T−k}‖ 随 k 的变化（float64），测的是页面上的 RNN、LSTM 与多头注意力。

设定：序列长 T，宽 d，输入 x ~ N(0, 1)（单位尺度），损失 L = u·h_T（u 为随机单位向量；
注意力层则是 L = u·y_T）。对每个 k（0 表示最后一个位置），记 g_k = ‖∂L/∂x_{T−k}‖，
在 k ∈ [1, k_max] 上拟合 log₁₀ g_k = a + s·k，斜率 s 的单位是**每步多少个数量级**
（decades per step）。

- 线性 RNN ``h_t = W h_{t−1} + x_t``，W = ρQ（Q 正交）：∂L/∂x_{T−k} = (W^k)ᵀ u，
  所以 g_k = ρ^k 精确成立，斜率**恰为 log₁₀ρ**（ρ = 0.9 / 1.0 / 1.1）。它就是 tanh RNN 在 h = 0
  处的线性化：用页面上的 ``bptt_jacobian``，把所有 h_i 取 0（tanh'(0) = 1）。
- tanh RNN：页面上的 ``RNNLayer``，W_hh = ρQ、W_xh = I、b = 0，即 ``h_t = tanh(W h_{t−1} + x_t)``；
  tanh 饱和使梯度即使在 ρ = 1.1 时也衰减。
- LSTM：页面上的 ``LSTMLayer``（PyTorch 默认尺度的均匀初始化），遗忘门偏置 0、1、5：
  偏置越大，遗忘门越接近 1，衰减越慢。
- 单层自注意力（``MultiHeadAttention``，单头，无偏置）：g_k 与 k 基本无关（斜率 ≈ 0）；
  但 ‖∂L/∂x₁‖/‖∂L/∂x_T‖ 远小于 1，路径短不等于梯度大。
"""

from __future__ import annotations

import math

import torch

from snippets.rnn import bptt_jacobian

from .fit import semilog10_fit
from .layers import make_layer

DTYPE = torch.float64


def orthogonal(d: int, generator) -> torch.Tensor:
    """随机正交矩阵 Q（QR 分解，符号规范化），(d, d)。"""
    q, r = torch.linalg.qr(torch.randn(d, d, generator=generator, dtype=DTYPE))
    return q * torch.sign(torch.diagonal(r)).unsqueeze(0)


def grad_norms(model: str, T: int, d: int, *, rho: float = 1.0, forget_bias: float = 0.0,
               seed: int = 0) -> list[float]:
    """返回 [g_0, g_1, …, g_{T−1}]，g_k = ‖∂L/∂x_{T−k}‖。"""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(1, T, d, generator=g, dtype=DTYPE).requires_grad_(True)  # (1, T, d)
    u = torch.randn(d, generator=g, dtype=DTYPE)
    u = u / u.norm()
    if model == "linear_rnn":
        # ∂h_T/∂x_{T−k} = ∂h_T/∂h_{T−k}（线性 RNN 里 ∂h_t/∂x_t = I）；h_i = 0 时 bptt_jacobian = W^k
        w = rho * orthogonal(d, g)
        hs = torch.zeros(T, d, dtype=DTYPE)
        return [float((bptt_jacobian(hs, w, T - 1 - k, T - 1).T @ u).norm()) for k in range(T)]
    if model == "tanh_rnn":
        layer = make_layer("rnn", d, seed=seed, dtype=DTYPE)
        cell = layer.module.cell
        with torch.no_grad():
            cell.w_hh.copy_(rho * orthogonal(d, g))
            cell.w_xh.copy_(torch.eye(d, dtype=DTYPE))
            cell.b.zero_()
        out = layer(x)[0, -1]  # h_T
    elif model == "lstm":
        out = make_layer("lstm", d, forget_bias=forget_bias, seed=seed, dtype=DTYPE)(x)[0, -1]  # h_T
    elif model == "attention":
        out = make_layer("attention", d, seed=seed, dtype=DTYPE)(x)[0, -1]  # y_T
    else:
        raise ValueError(f"model={model!r} is unknown")
    (gx,) = torch.autograd.grad((out * u).sum(), x)
    norms = gx[0].norm(dim=-1)  # (T,)  位置 t 的范数
    return [float(v) for v in norms.flip(0)]  # 下标 k = T−1−t


CONFIGS = (
    ("linear RNN ρ=0.9", "linear_rnn", {"rho": 0.9}, math.log10(0.9)),
    ("linear RNN ρ=1.0", "linear_rnn", {"rho": 1.0}, 0.0),
    ("linear RNN ρ=1.1", "linear_rnn", {"rho": 1.1}, math.log10(1.1)),
    ("tanh RNN ρ=0.9", "tanh_rnn", {"rho": 0.9}, None),
    ("tanh RNN ρ=1.0", "tanh_rnn", {"rho": 1.0}, None),
    ("tanh RNN ρ=1.1", "tanh_rnn", {"rho": 1.1}, None),
    ("LSTM b_f=0", "lstm", {"forget_bias": 0.0}, None),
    ("LSTM b_f=1", "lstm", {"forget_bias": 1.0}, None),
    ("LSTM b_f=5", "lstm", {"forget_bias": 5.0}, None),
    ("attention", "attention", {}, None),
)


def run(*, T: int = 200, d: int = 32, k_max: int = 150, seeds=(0,), progress=None) -> dict:
    rows = []
    k_max = min(k_max, T - 1)
    ks = list(range(1, k_max + 1))
    for label, model, kw, theory in CONFIGS:
        per_seed = []
        for seed in seeds:
            norms = grad_norms(model, T, d, seed=seed, **kw)
            fit = semilog10_fit(ks, [norms[k] for k in ks])
            entry = {"seed": seed, **fit}
            if seed == seeds[0]:  # 只为第一个种子保存整条曲线（画图用），其余只存拟合
                entry["norms"] = norms
            per_seed.append(entry)
        slopes = [p["slope"] for p in per_seed if p["slope"] is not None]
        row = {"label": label, "model": model, **kw, "theory_slope": theory,
               "slope": per_seed[0]["slope"], "residual_rms": per_seed[0]["residual_rms"],
               "slope_min": min(slopes) if slopes else None, "slope_max": max(slopes) if slopes else None,
               "per_seed": per_seed}
        if model == "attention":
            n0 = per_seed[0]["norms"]
            row["ratio_first_to_last"] = n0[T - 1] / n0[0]  # ‖∂L/∂x₁‖ / ‖∂L/∂x_T‖
        rows.append(row)
        if progress:
            progress(1)
    return {"T": T, "d": d, "k_fit": [1, k_max], "dtype": "float64", "seeds": list(seeds),
            "loss": "L = u . h_T (u random unit vector); attention: L = u . y_T",
            "slope_unit": "decades per step (log10 per step)", "rows": rows}
