"""第 07 章「位置编码：从正弦到 RoPE」：正弦编码与它的偏移矩阵 M_k、RoPE（两种配对）、ALiBi、
上下文扩展（PI、NTK-aware、YaRN）的频率，以及一个带 RoPE/ALiBi 的因果自注意力。测试：tests/ch07/。

页面先引入 snippets/checks.py 的 imports、checks 小节（输入检查 _check_tensor），讲注意力的页面还引入
snippets/attention.py 的小节；本文件的小节按名字使用 _check_tensor、MultiHeadAttention。下面这行导入
在所有小节之外，只在 `import snippets.positional` 时生效（页面上不显示）。
"""

from snippets.attention import MultiHeadAttention  # noqa: F401  (小节里按名字使用)
from snippets.checks import _check_tensor  # noqa: F401  (小节里按名字使用)

# --8<-- [start:imports]
import math

import torch
from torch import nn
# --8<-- [end:imports]


# --8<-- [start:sinusoid]
def sinusoidal_positional_encoding(
    max_len: int, d_model: int, dtype: torch.dtype = torch.float32, base: float = 10000.0
) -> torch.Tensor:
    """正弦位置编码（论文 §3.5），返回 (max_len, d_model)。论文的交错排法：偶数维 sin、奇数维 cos。

    PE[pos, 2i]   = sin(pos · ω_i)
    PE[pos, 2i+1] = cos(pos · ω_i)，  ω_i = 1 / base^(2i / d_model)，论文 base = 10000
    """
    if d_model <= 0 or d_model % 2 != 0:
        raise ValueError(f"d_model must be a positive even number, got d_model={d_model}")
    if max_len <= 0:
        raise ValueError(f"max_len must be positive, got max_len={max_len}")
    if base <= 1:
        raise ValueError(f"base must be > 1, got base={base}")
    pos = torch.arange(max_len, dtype=dtype).unsqueeze(1)                 # (max_len, 1)
    two_i = torch.arange(0, d_model, 2, dtype=dtype)                      # (d_model/2,)
    omega = torch.exp(-math.log(base) * two_i / d_model)                  # (d_model/2,)
    angle = pos * omega                                                   # (max_len, d_model/2)
    pe = torch.empty(max_len, d_model, dtype=dtype)
    pe[:, 0::2] = torch.sin(angle)                                        # 偶数维：sin
    pe[:, 1::2] = torch.cos(angle)                                        # 奇数维：cos
    return pe


def pe_offset_matrix(k: int, d_model: int, dtype: torch.dtype = torch.float64,
                     base: float = 10000.0) -> torch.Tensor:
    """线性矩阵 M_k，使 PE[pos + k] = M_k @ PE[pos] 对每个 pos 都成立，返回 (d_model, d_model)。

    每对维度 (2i, 2i+1) 是一个以角频率 ω_i 转动的二维向量 (sin, cos)：
        sin(ω(p+k)) =  cos(ωk)·sin(ωp) + sin(ωk)·cos(ωp)
        cos(ω(p+k)) = -sin(ωk)·sin(ωp) + cos(ωk)·cos(ωp)
    所以 M_k 是分块对角矩阵，第 i 块是 [[cos ω_i k, sin ω_i k], [-sin ω_i k, cos ω_i k]]，
    它只依赖偏移 k，不依赖 pos —— 相对位置是绝对位置编码的一个线性函数。
    """
    if d_model <= 0 or d_model % 2 != 0:
        raise ValueError(f"d_model must be a positive even number, got d_model={d_model}")
    two_i = torch.arange(0, d_model, 2, dtype=dtype)
    omega = torch.exp(-math.log(base) * two_i / d_model)                  # (d_model/2,)
    c, s = torch.cos(omega * k), torch.sin(omega * k)                     # (d_model/2,)
    m = torch.zeros(d_model, d_model, dtype=dtype)
    idx = torch.arange(0, d_model, 2)
    m[idx, idx] = c
    m[idx, idx + 1] = s
    m[idx + 1, idx] = -s
    m[idx + 1, idx + 1] = c
    return m
# --8<-- [end:sinusoid]


# --8<-- [start:rope]
def rope_frequencies(d: int, base: float = 10000.0, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """RoPE 的角频率 θ_i = base^(−2i/d)，i = 0 … d/2−1，返回 (d/2,)。与正弦编码的 ω_i 相同。"""
    if d <= 0 or d % 2 != 0:
        raise ValueError(f"d must be a positive even number, got d={d}")
    return torch.exp(-math.log(base) * torch.arange(0, d, 2, dtype=torch.float64) / d).to(dtype)


def apply_rope(x: torch.Tensor, positions: torch.Tensor | None = None, base: float = 10000.0,
               theta: torch.Tensor | None = None) -> torch.Tensor:
    """旋转位置编码（RoPE，RoFormer 的交错配对）：把每一对 (x[..., 2i], x[..., 2i+1]) 转过 pos·θ_i。

    x (..., n, d)；positions (n,)，默认 0 … n−1；theta (d/2,) 默认 rope_frequencies(d, base)
    （上下文扩展时换成缩放后的频率）。返回与 x 同形状。
        x'_{2i}   = x_{2i}·cos(pos θ_i) − x_{2i+1}·sin(pos θ_i)
        x'_{2i+1} = x_{2i}·sin(pos θ_i) + x_{2i+1}·cos(pos θ_i)
    """
    n, d, positions = _rope_inputs(x, positions)
    if theta is None:
        theta = rope_frequencies(d, base, torch.float64)
    angle = positions.to(torch.float64)[:, None] * theta.to(torch.float64)[None, :]  # (n, d/2)
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)                     # (n, d/2)
    x_even, x_odd = x[..., 0::2], x[..., 1::2]                                      # (..., n, d/2)
    out = torch.empty_like(x)
    out[..., 0::2] = x_even * cos - x_odd * sin
    out[..., 1::2] = x_even * sin + x_odd * cos
    return out


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """GPT-NeoX / Hugging Face LLaMA 的写法：前一半与后一半配对，(x1, x2) -> (−x2, x1)。x (..., d)。"""
    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], dim=-1)


def apply_rope_half(x: torch.Tensor, positions: torch.Tensor | None = None,
                    base: float = 10000.0) -> torch.Tensor:
    """半分配对的 RoPE：维度 i 与 i + d/2 组成一对，x·cos + rotate_half(x)·sin。x (..., n, d)。"""
    n, d, positions = _rope_inputs(x, positions)
    angle = positions.to(torch.float64)[:, None] * rope_frequencies(d, base, torch.float64)[None, :]
    angle = torch.cat([angle, angle], dim=-1)                                       # (n, d)：cat(freqs, freqs)
    return x * angle.cos().to(x.dtype) + rotate_half(x) * angle.sin().to(x.dtype)


def _rope_inputs(x: torch.Tensor, positions: torch.Tensor | None) -> tuple[int, int, torch.Tensor]:
    """两种 RoPE 共用的检查：x (..., n, d) 且 d 为偶数；positions (n,)，默认 0 … n−1。"""
    _check_tensor("x", x, "(..., n, d)", (None,) * max(getattr(x, "ndim", 0), 2))
    n, d = x.shape[-2], x.shape[-1]
    if d % 2 != 0:
        raise ValueError(f"the last dimension of x must be even (pairs of dimensions), got x {tuple(x.shape)}")
    if positions is None:
        positions = torch.arange(n, device=x.device)
    if positions.shape != (n,):
        raise ValueError(f"positions must have shape (n,) = ({n},), got positions {tuple(positions.shape)} "
                         f"for x {tuple(x.shape)}")
    return n, d, positions


def interleaved_to_half(d: int) -> torch.Tensor:
    """维度置换 P：半分排法的第 j 维取交错排法的第 P[j] 维，P = [0, 2, 4, …, 1, 3, 5, …]。"""
    return torch.cat([torch.arange(0, d, 2), torch.arange(1, d, 2)])
# --8<-- [end:rope]


# --8<-- [start:alibi]
def alibi_slopes(n_heads: int) -> torch.Tensor:
    """ALiBi 每个头的斜率，返回 (n_heads,)，与 ALiBi 官方代码的 get_slopes 相同。

    n 是 2 的幂：m_h = 2^(−8h/n)，h = 1 … n（8 个头：1/2, 1/4, …, 1/256）。
    否则取 c = 2^⌊log2 n⌋：先放 c 个头的斜率，再从 2c 个头的斜率里隔一个取一个，补足 n − c 个。
    """
    if not isinstance(n_heads, int) or n_heads < 1:
        raise ValueError(f"n_heads must be a positive int, got n_heads={n_heads!r}")

    def power_of_two(n: int) -> list[float]:
        start = 2.0 ** (-8.0 / n)                                       # 2^(−2^−(log2 n − 3)) = 2^(−8/n)
        return [start ** h for h in range(1, n + 1)]

    if n_heads & (n_heads - 1) == 0:
        return torch.tensor(power_of_two(n_heads), dtype=torch.float64)
    c = 2 ** int(math.floor(math.log2(n_heads)))
    extra = alibi_slopes(2 * c)[0::2][: n_heads - c]                    # 官方代码在这里递归
    return torch.cat([torch.tensor(power_of_two(c), dtype=torch.float64), extra])


def alibi_bias(n_heads: int, n: int) -> torch.Tensor:
    """ALiBi 加在注意力分数上的偏置，返回 (n_heads, n, n)：第 (h, i, j) 项 = −m_h·(i − j)，j ≤ i。

    j > i 的项（未来位置）置 0，留给因果掩码去遮；偏置只进 softmax 之前的分数，不碰 V。
    """
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive int, got n={n!r}")
    i = torch.arange(n)[:, None]                                        # (n, 1) 查询位置
    j = torch.arange(n)[None, :]                                        # (1, n) 键位置
    distance = (i - j).clamp(min=0).to(torch.float64)                   # (n, n)，上三角为 0
    return -alibi_slopes(n_heads)[:, None, None] * distance             # (n_heads, n, n)
# --8<-- [end:alibi]


# --8<-- [start:context-extension]
def scaled_rope_frequencies(d: int, base: float, method: str, factor: float, original_len: int = 4096,
                            alpha: float = 1.0, beta: float = 32.0) -> torch.Tensor:
    """上下文扩展后的 RoPE 角频率 θ'_i，返回 (d/2,)（float64）。factor = s = 新长度 / 原长度。

    "pi"   位置插值：θ'_i = θ_i / s（等价于把位置 m 换成 m/s）
    "ntk"  NTK-aware：不动位置，换底数 base' = base · s^(d/(d−2))
    "yarn" YaRN 的 NTK-by-parts：r_i = L/λ_i 是第 i 对在原长度 L 内转过的圈数，
           γ = clamp((r − α)/(β − α), 0, 1)，θ'_i = (1 − γ)·θ_i/s + γ·θ_i
    """
    if factor < 1:
        raise ValueError(f"factor must be >= 1, got factor={factor}")
    theta = rope_frequencies(d, base, torch.float64)                    # (d/2,)
    if method == "pi":
        return theta / factor
    if method == "ntk":
        return rope_frequencies(d, base * factor ** (d / (d - 2)), torch.float64)
    if method == "yarn":
        rotations = original_len * theta / (2 * math.pi)                # r_i = L / λ_i，λ_i = 2π/θ_i
        gamma = ((rotations - alpha) / (beta - alpha)).clamp(0.0, 1.0)  # 转得多（高频）-> 1：不动
        return (1 - gamma) * theta / factor + gamma * theta
    raise ValueError(f"method must be 'pi', 'ntk' or 'yarn', got method={method!r}")


def yarn_mscale(factor: float) -> float:
    """YaRN 乘在 cos、sin 上的系数 0.1·ln s + 1（s ≤ 1 时为 1）；q·k 因此乘它的平方。"""
    return 1.0 if factor <= 1 else 0.1 * math.log(factor) + 1.0
# --8<-- [end:context-extension]


# --8<-- [start:attention]
class PositionalSelfAttention(MultiHeadAttention):
    """因果多头自注意力，位置信息放在注意力里面：position = "rope"（旋转 q、k）、"alibi"（给分数加偏置）
    或 "none"（不加，绝对位置编码已经加在输入上，或者 NoPE）。沿用 MultiHeadAttention 的 w_q、w_k、w_v、w_o。

    forward(query, key, value, mask=None)：自注意力，query、key、value 是同一个 (batch, n, d_model)；
    mask 忽略（因果掩码在这里生成）。返回 out (batch, n, d_model) 与 weights (batch, h, n, n)。
    """

    def __init__(self, d_model: int, num_heads: int, position: str = "none", base: float = 10000.0):
        super().__init__(d_model, num_heads)
        if position not in ("none", "rope", "alibi"):
            raise ValueError(f"position must be 'none', 'rope' or 'alibi', got position={position!r}")
        self.position, self.base = position, base

    def forward(self, query, key, value, mask=None, cache=None):
        batch, n, _ = query.shape
        q = self._split_heads(self.w_q(query))                          # (batch, h, n, d_head)
        k = self._split_heads(self.w_k(key))
        v = self._split_heads(self.w_v(value))                          # V 从不旋转、不加偏置
        if self.position == "rope":
            q, k = apply_rope(q, base=self.base), apply_rope(k, base=self.base)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)       # (batch, h, n, n)
        if self.position == "alibi":
            scores = scores + alibi_bias(self.num_heads, n).to(scores.dtype)  # (h, n, n) 广播到 batch
        causal = torch.ones(n, n, dtype=torch.bool, device=query.device).tril()
        weights = torch.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1)
        out = (weights @ v).transpose(1, 2).reshape(batch, n, self.d_model)
        return self.w_o(out), weights
# --8<-- [end:attention]
