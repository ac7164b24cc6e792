"""第 07 章「位置编码：从正弦到 RoPE」：正弦编码与它的偏移矩阵 M_k、RoPE（两种配对）、ALiBi、
上下文扩展（PI、NTK-aware、YaRN、Llama 3.1）的频率，以及一个带 RoPE/ALiBi 的因果自注意力。测试：tests/ch07/。

页面先引入 snippets/checks.py 的 imports、checks 小节（输入检查 _check_tensor），讲注意力的页面还引入
snippets/attention.py 的小节（含 checks）；本文件的小节按名字使用 _check_tensor、MultiHeadAttention、
_check_mha_inputs、_shapes。下面两行导入在所有小节之外，只在 `import snippets.positional` 时生效（页面上不显示）。
"""

from snippets.attention import MultiHeadAttention, _check_mha_inputs, _shapes  # noqa: F401  (小节里按名字使用)
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
    # 角度一律在 float64 里算，最后才转成 dtype：bf16 连位置 300 都存不准（存成 300 附近的 2 的倍数）
    pos = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)         # (max_len, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)              # (d_model/2,)
    omega = torch.exp(-math.log(base) * two_i / d_model)                  # (d_model/2,)
    angle = pos * omega                                                   # (max_len, d_model/2)
    pe = torch.empty(max_len, d_model, dtype=dtype)
    pe[:, 0::2] = torch.sin(angle)                                        # 偶数维：sin（赋值时转成 dtype）
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
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)              # 角度在 float64 里算
    omega = torch.exp(-math.log(base) * two_i / d_model)                  # (d_model/2,)
    c, s = torch.cos(omega * k).to(dtype), torch.sin(omega * k).to(dtype)  # (d_model/2,)
    m = torch.zeros(d_model, d_model, dtype=dtype)
    idx = torch.arange(0, d_model, 2)
    m[idx, idx] = c
    m[idx, idx + 1] = s
    m[idx + 1, idx] = -s
    m[idx + 1, idx + 1] = c
    return m
# --8<-- [end:sinusoid]


# --8<-- [start:rope]
def rope_frequencies(d: int, base: float = 10000.0, dtype: torch.dtype = torch.float32,
                     device: torch.device | str | None = None) -> torch.Tensor:
    """RoPE 的角频率 θ_i = base^(−2i/d)，i = 0 … d/2−1，返回 (d/2,)。与正弦编码的 ω_i 相同。
    device：放在哪个设备上（None = CPU）。"""
    if d <= 0 or d % 2 != 0:
        raise ValueError(f"d must be a positive even number, got d={d}")
    two_i = torch.arange(0, d, 2, dtype=torch.float64, device=device)     # (d/2,)
    return torch.exp(-math.log(base) * two_i / d).to(dtype)


def apply_rope(x: torch.Tensor, positions: torch.Tensor | None = None, base: float = 10000.0,
               theta: torch.Tensor | None = None) -> torch.Tensor:
    """旋转位置编码（RoPE，RoFormer 的交错配对）：把每一对 (x[..., 2i], x[..., 2i+1]) 转过 pos·θ_i。

    x (..., n, d)；positions (n,)，默认 0 … n−1；theta (d/2,) 默认 rope_frequencies(d, base)
    （上下文扩展时换成缩放后的频率）。返回与 x 同形状、同 dtype、同设备。
        x'_{2i}   = x_{2i}·cos(pos θ_i) − x_{2i+1}·sin(pos θ_i)
        x'_{2i+1} = x_{2i}·sin(pos θ_i) + x_{2i+1}·cos(pos θ_i)
    """
    angle = _rope_angles(x, positions, base, theta)                                 # (n, d/2)，float64
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


def apply_rope_half(x: torch.Tensor, positions: torch.Tensor | None = None, base: float = 10000.0,
                    theta: torch.Tensor | None = None) -> torch.Tensor:
    """半分配对的 RoPE：维度 i 与 i + d/2 组成一对，x·cos + rotate_half(x)·sin。x (..., n, d)。"""
    angle = _rope_angles(x, positions, base, theta)                                 # (n, d/2)，float64
    angle = torch.cat([angle, angle], dim=-1)                                       # (n, d)：cat(freqs, freqs)
    return x * angle.cos().to(x.dtype) + rotate_half(x) * angle.sin().to(x.dtype)


def _rope_angles(x: torch.Tensor, positions: torch.Tensor | None, base: float,
                 theta: torch.Tensor | None) -> torch.Tensor:
    """两种 RoPE 共用：检查 x (..., n, d)、positions (n,)、theta (d/2,)，返回角度 pos·θ_i (n, d/2)。

    角度一律在 float64 里、在 x 所在的设备上算，不管 x 是什么 dtype：bf16 连位置 5000 都存不准
    （存成 4992），float32 在位置 10⁶ 处也差约 0.05 弧度。只有最后的 cos、sin 转回 x 的 dtype。
    """
    _check_tensor("x", x, "(..., n, d)", (None,) * max(getattr(x, "ndim", 0), 2))
    n, d = x.shape[-2], x.shape[-1]
    if d % 2 != 0:
        raise ValueError(f"the last dimension of x must be even (pairs of dimensions), got x {tuple(x.shape)}")
    if positions is None:
        positions = torch.arange(n, device=x.device)
    if positions.shape != (n,):
        raise ValueError(f"positions must have shape (n,) = ({n},), got positions {tuple(positions.shape)} "
                         f"for x {tuple(x.shape)}")
    if theta is None:
        theta = rope_frequencies(d, base, torch.float64, x.device)
    elif base != 10000.0:  # 给了 theta 就不再读 base：两个都给时报错，不悄悄忽略 base
        raise ValueError(f"base={base} is not read when theta is given (theta already holds the frequencies): "
                         f"pass one of them, x {tuple(x.shape)}")
    if theta.shape != (d // 2,):
        raise ValueError(f"theta must have shape (d/2,) = ({d // 2},), got theta {tuple(theta.shape)} "
                         f"for x {tuple(x.shape)}")
    positions = positions.to(device=x.device, dtype=torch.float64)                  # (n,)
    theta = theta.to(device=x.device, dtype=torch.float64)                          # (d/2,)
    return positions[:, None] * theta[None, :]                                      # (n, d/2)


def interleaved_to_half(d: int) -> torch.Tensor:
    """维度置换 P：半分排法的第 j 维取交错排法的第 P[j] 维，P = [0, 2, 4, …, 1, 3, 5, …]。"""
    return torch.cat([torch.arange(0, d, 2), torch.arange(1, d, 2)])
# --8<-- [end:rope]


# --8<-- [start:alibi]
def alibi_slopes(n_heads: int, device: torch.device | str | None = None) -> torch.Tensor:
    """ALiBi 每个头的斜率，返回 (n_heads,)（float64，放在 device 上，None = CPU），与 ALiBi 官方代码的
    get_slopes 相同。

    n 是 2 的幂：m_h = 2^(−8h/n)，h = 1 … n（8 个头：1/2, 1/4, …, 1/256）。
    否则取 c = 2^⌊log2 n⌋：先放 c 个头的斜率，再从 2c 个头的斜率里隔一个取一个，补足 n − c 个。
    """
    if not isinstance(n_heads, int) or n_heads < 1:
        raise ValueError(f"n_heads must be a positive int, got n_heads={n_heads!r}")

    def power_of_two(n: int) -> torch.Tensor:
        start = 2.0 ** (-8.0 / n)                                       # 2^(−2^−(log2 n − 3)) = 2^(−8/n)
        return torch.tensor([start ** h for h in range(1, n + 1)], dtype=torch.float64, device=device)

    if n_heads & (n_heads - 1) == 0:
        return power_of_two(n_heads)
    c = 2 ** int(math.floor(math.log2(n_heads)))
    extra = alibi_slopes(2 * c, device)[0::2][: n_heads - c]            # 官方代码在这里递归
    return torch.cat([power_of_two(c), extra])


def alibi_bias(n_heads: int, n: int, device: torch.device | str | None = None) -> torch.Tensor:
    """ALiBi 加在注意力分数上的偏置，返回 (n_heads, n, n)（float64，放在 device 上，None = CPU）：
    第 (h, i, j) 项 = −m_h·(i − j)，j ≤ i。

    j > i 的项（未来位置）置 0，留给因果掩码去遮；偏置只进 softmax 之前的分数，不碰 V。
    """
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive int, got n={n!r}")
    i = torch.arange(n, device=device)[:, None]                         # (n, 1) 查询位置
    j = torch.arange(n, device=device)[None, :]                         # (1, n) 键位置
    distance = (i - j).clamp(min=0).to(torch.float64)                   # (n, n)，上三角为 0
    return -alibi_slopes(n_heads, device)[:, None, None] * distance     # (n_heads, n, n)
# --8<-- [end:alibi]


# --8<-- [start:context-extension]
def scaled_rope_frequencies(d: int, base: float, method: str, factor: float, original_len: int | None = None,
                            alpha: float | None = None, beta: float | None = None, *, ramp: str | None = None,
                            low_freq_factor: float | None = None, high_freq_factor: float | None = None,
                            device: torch.device | str | None = None) -> torch.Tensor:
    """上下文扩展后的 RoPE 角频率 θ'_i，返回 (d/2,)（float64，放在 device 上）。factor = s = 新长度 / 原长度，
    original_len = L 是原来的训练长度（默认 4096）。每种方法只读自己的参数，给了别的方法的参数就报错：

    "pi"     位置插值：θ'_i = θ_i / s（等价于把位置 m 换成 m/s）；只读 factor
    "ntk"    NTK-aware：不动位置，换底数 base' = base · s^(d/(d−2))；只读 factor
    "yarn"   YaRN 的 NTK-by-parts：θ'_i = (1 − γ_i)·θ_i/s + γ_i·θ_i，γ 从 0（除以 s）升到 1（不动）。
             r_i = L/λ_i 是第 i 对在原长度 L 内转过的圈数；读 original_len、alpha（默认 1）、beta（默认 32）、ramp。
             ramp 选 γ 怎样上升：
             "rotations"（论文的公式，默认）γ = clamp((r − α)/(β − α), 0, 1)，在圈数 r 上线性；
             "index"（官方代码、Hugging Face、vLLM）先求 r = β、r = α 落在第几对：
             i(r) = d·ln(L/(2π r)) / (2·ln base)，取 low = ⌊i(β)⌋、high = ⌈i(α)⌉，
             γ = 1 − clamp((i − low)/(high − low), 0, 1)，在维度对的编号 i 上线性。
    "llama3" Llama 3.1（Hugging Face 的 rope_type="llama3"）：波长 λ_i < L/high_freq_factor 的不动，
             λ_i > L/low_freq_factor 的除以 s，中间 γ = (L/λ_i − low)/(high − low)。L/λ_i 就是 r_i，
             所以这是论文的 YaRN 斜坡，α = low_freq_factor（默认 1）、β = high_freq_factor（默认 4）（不乘温度系数）。
    """
    original_len, alpha, beta, ramp = _check_scaling_args(
        method, factor, original_len=original_len, alpha=alpha, beta=beta, ramp=ramp,
        low_freq_factor=low_freq_factor, high_freq_factor=high_freq_factor)
    theta = rope_frequencies(d, base, torch.float64, device)            # (d/2,)
    if method == "pi":
        return theta / factor
    if method == "ntk":
        return rope_frequencies(d, base * factor ** (d / (d - 2)), torch.float64, device)
    if ramp == "rotations":                                             # llama3：α = low、β = high
        rotations = original_len * theta / (2 * math.pi)                # r_i = L / λ_i，λ_i = 2π/θ_i
        gamma = ((rotations - alpha) / (beta - alpha)).clamp(0.0, 1.0)  # 转得多（高频）-> 1：不动
    else:
        def pair_index(r: float) -> float:                              # 在原长度里转 r 圈的是第几对
            return d * math.log(original_len / (2 * math.pi * r)) / (2 * math.log(base))
        low = max(math.floor(pair_index(beta)), 0)                      # 编号 ≤ low：转得多，不动
        high = min(math.ceil(pair_index(alpha)), d - 1)                 # 编号 ≥ high：转不满，除以 s
        i = torch.arange(d // 2, dtype=torch.float64, device=device)    # (d/2,)
        gamma = 1 - ((i - low) / max(high - low, 1e-3)).clamp(0.0, 1.0)  # high = low 时同官方代码加 0.001
    return (1 - gamma) * theta / factor + gamma * theta


def yarn_mscale(factor: float) -> float:
    """YaRN 乘在 cos、sin 上的系数 0.1·ln s + 1（s ≤ 1 时为 1）；q·k 因此乘它的平方。"""
    return 1.0 if factor <= 1 else 0.1 * math.log(factor) + 1.0
# --8<-- [end:context-extension]


# --8<-- [start:attention]
class PositionalSelfAttention(MultiHeadAttention):
    """因果多头自注意力，位置信息放在注意力里面：position = "rope"（旋转 q、k）、"alibi"（给分数加偏置）
    或 "none"（不加，绝对位置编码已经加在输入上，或者 NoPE）。沿用 MultiHeadAttention 的 w_q、w_k、w_v、w_o。

    forward(query, key, value, mask=None, cache=None)：自注意力，query、key、value 是同一个
    (batch, n, d_model)。因果掩码在这里生成；mask 与 MultiHeadAttention 的相同（bool，True = 可以看，
    能广播到 (batch, n, t) 或 (batch, h, n, t)），与因果掩码取「且」。cache：增量解码时传入这个模块的
    KVCache（static=False）；已缓存 t₀ 个位置时，新来的 n 个位置是 t₀ … t₀+n−1，RoPE 按它们旋转，
    ALiBi 按到它们的距离加偏置，t = t₀ + n。整行被遮住的查询：该行输出与权重全为 0。
    返回 out (batch, n, d_model) 与 weights (batch, h, n, t)。
    """

    def __init__(self, d_model: int, num_heads: int, position: str = "none", base: float = 10000.0):
        super().__init__(d_model, num_heads)
        if position not in ("none", "rope", "alibi"):
            raise ValueError(f"position must be 'none', 'rope' or 'alibi', got position={position!r}")
        if position != "rope" and base != 10000.0:  # 只有 RoPE 读 base
            raise ValueError(f"base={base} is read only by position='rope', got position={position!r}")
        self.position, self.base = position, base

    def forward(self, query, key, value, mask=None, cache=None):
        if cache is not None and cache.static:                          # 交叉注意力的缓存：这里只有自注意力
            raise NotImplementedError("cache must be a self-attention KVCache (static=False), got a static cache")
        if self.check_inputs:
            _check_positional_inputs(self, query, key, value, mask, cache)
        batch, n, _ = query.shape
        past = 0 if cache is None else cache.length                     # 缓存里已有的位置数 t₀
        t = past + n                                                    # 键的总数
        q = self._split_heads(self.w_q(query))                          # (batch, h, n, d_k)
        k = self._split_heads(self.w_k(key))
        v = self._split_heads(self.w_v(value))                          # V 从不旋转、不加偏置
        if self.position == "rope":
            positions = torch.arange(past, t, device=query.device)      # 新位置 t₀ … t−1
            q, k = apply_rope(q, positions, self.base), apply_rope(k, positions, self.base)
        if cache is not None:
            k, v = cache.update(k, v)                                   # 缓存的是旋转过的 k：(batch, h, t, d_k)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)          # (batch, h, n, t)
        if self.position == "alibi":                                    # 完整 (h, t, t) 偏置的最后 n 行
            scores = scores + alibi_bias(self.num_heads, t, query.device)[:, past:].to(scores.dtype)
        allowed = torch.ones(t, t, dtype=torch.bool, device=query.device).tril()[past:]  # (n, t) 因果
        if mask is not None:                                            # 3 维掩码插入「头」这一维
            allowed = allowed & (mask.unsqueeze(1) if mask.dim() == 3 else mask)
        weights = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)
        weights = weights.masked_fill(~allowed, 0.0)                    # 整行被遮住：NaN → 0
        out = (weights @ v).transpose(1, 2).reshape(batch, n, self.d_model)
        return self.w_o(out), weights
# --8<-- [end:attention]


# --8<-- [start:checks]
def _check_positional_inputs(attn, query, key, value, mask, cache):
    """PositionalSelfAttention 的输入检查：MultiHeadAttention 的那些（形状、dtype、掩码、缓存），再加一条：
    这是自注意力，key、value 与 query 一样长。"""
    _check_mha_inputs(attn, query, key, value, mask, cache)
    if key.shape[1] != query.shape[1]:
        raise ValueError(f"key must have as many positions as query (self-attention): "
                         f"{_shapes(query=query, key=key, value=value)}")
# 每种上下文扩展方法读哪些参数（不在这里的参数给了就报错，不静默忽略）及其默认值
SCALING_ARGS = {
    "pi": {},
    "ntk": {},
    "yarn": {"original_len": 4096, "alpha": 1.0, "beta": 32.0, "ramp": "rotations"},
    "llama3": {"original_len": 4096, "low_freq_factor": 1.0, "high_freq_factor": 4.0},
}


def _check_scaling_args(method, factor, **given):
    """返回 (original_len, alpha, beta, ramp)：llama3 的 low/high_freq_factor 作为 alpha、beta，斜坡在圈数上。"""
    if method not in SCALING_ARGS:
        raise ValueError(f"method must be 'pi', 'ntk', 'yarn' or 'llama3', got method={method!r}")
    if factor < 1:
        raise ValueError(f"factor must be >= 1, got factor={factor}")
    extra = sorted(k for k, v in given.items() if v is not None and k not in SCALING_ARGS[method])
    if extra:
        shown = ", ".join(f"{k}={given[k]!r}" for k in extra)
        reads = ", ".join(SCALING_ARGS[method]) or "only factor"
        raise ValueError(f"{shown} applies only to other methods: method={method!r} reads {reads}")
    args = {k: (given[k] if given[k] is not None else default) for k, default in SCALING_ARGS[method].items()}
    if method == "llama3":
        args = {"original_len": args["original_len"], "alpha": args["low_freq_factor"],
                "beta": args["high_freq_factor"], "ramp": "rotations"}
    if method in ("pi", "ntk"):
        return None, None, None, None
    if args["ramp"] not in ("rotations", "index"):
        raise ValueError(f"ramp must be 'rotations' or 'index', got ramp={args['ramp']!r}")
    if not args["original_len"] >= 1:
        raise ValueError(f"original_len must be >= 1, got original_len={args['original_len']}")
    if not 0 < args["alpha"] < args["beta"]:
        raise ValueError(f"the ramp needs 0 < alpha < beta (llama3: 0 < low_freq_factor < high_freq_factor), "
                         f"got {args['alpha']} and {args['beta']} for method={method!r}")
    return args["original_len"], args["alpha"], args["beta"], args["ramp"]
# --8<-- [end:checks]
