"""第 07 章练习的答案（见 answers_ch01.py 的说明）。"""

import math

import torch


def _check_d(d_model):
    if d_model <= 0 or d_model % 2:
        raise ValueError(f"d_model={d_model} must be positive and even")


def _pe(max_len, d_model, exponent="2i", layout="interleaved", swap=False):
    _check_d(d_model)
    pos = torch.arange(max_len, dtype=torch.float64)[:, None]
    i = torch.arange(d_model // 2, dtype=torch.float64)
    omega = 10000.0 ** (-(2 * i if exponent == "2i" else i) / d_model)
    s, c = torch.sin(pos * omega), torch.cos(pos * omega)
    if swap:
        s, c = c, s
    if layout == "halves":
        return torch.cat([s, c], dim=-1)
    return torch.stack([s, c], dim=-1).reshape(max_len, d_model)


def pe_exponent_i(max_len, d_model):
    return _pe(max_len, d_model, exponent="i")


def pe_halves(max_len, d_model):
    return _pe(max_len, d_model, layout="halves")


def pe_sin_cos_swapped(max_len, d_model):
    return _pe(max_len, d_model, swap=True)


def pe_no_check(max_len, d_model):
    pos = torch.arange(max_len, dtype=torch.float64)[:, None]
    omega = 10000.0 ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    pe = torch.zeros(max_len, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(pos * omega)
    pe[:, 1::2] = torch.cos(pos * omega)[:, : d_model // 2]
    return pe


def pe_loops(max_len, d_model):
    if not isinstance(d_model, int) or d_model < 2 or d_model % 2:
        raise ValueError(f"d_model must be even, got d_model={d_model}")
    pe = torch.empty(max_len, d_model, dtype=torch.float64)
    for pos in range(max_len):
        for i in range(d_model // 2):
            angle = pos / math.pow(10000, 2 * i / d_model)
            pe[pos, 2 * i], pe[pos, 2 * i + 1] = math.sin(angle), math.cos(angle)
    return pe


def _check_rope(x, positions):
    if x.shape[-1] % 2:
        raise ValueError(f"x has an odd last dim: x {tuple(x.shape)}")
    if positions.shape != (x.shape[-2],):
        raise ValueError(f"positions {tuple(positions.shape)} must be ({x.shape[-2]},)")


def _angles(x, positions, shift=0, exponent="2i"):
    d = x.shape[-1]
    i = torch.arange(d // 2, dtype=torch.float64)
    theta = 10000.0 ** (-(2 * i if exponent == "2i" else i) / d)
    return (positions.double() + shift)[:, None] * theta


def _interleaved(x, positions, sign=1, shift=0, exponent="2i", check=True):
    if check:
        _check_rope(x, positions)
    a = _angles(x, positions, shift, exponent)
    cos, sin = a.cos().to(x.dtype), (sign * a.sin()).to(x.dtype)
    e, o = x[..., 0::2], x[..., 1::2]
    return torch.stack([e * cos - o * sin, e * sin + o * cos], dim=-1).flatten(-2)


def _half(x, positions, sign=1, dup="cat", check=True):
    if check:
        _check_rope(x, positions)
    a = _angles(x, positions)
    a = torch.cat([a, a], -1) if dup == "cat" else a.repeat_interleave(2, -1)
    h = x.shape[-1] // 2
    rot = torch.cat([-x[..., h:], x[..., :h]], -1)
    return x * a.cos().to(x.dtype) + sign * rot * a.sin().to(x.dtype)


def inter_as_half(x, positions):
    return _half(x, positions)


def inter_clockwise(x, positions):
    return _interleaved(x, positions, sign=-1)


def inter_positions_from_one(x, positions):
    return _interleaved(x, positions, shift=1)


def inter_exponent_i(x, positions):
    return _interleaved(x, positions, exponent="i")


def inter_no_check(x, positions):
    return _interleaved(x, positions, check=False)


def inter_complex(x, positions):
    """写法不同：把每对维度看成一个复数，乘 e^{i·pos·θ}。"""
    _check_rope(x, positions)
    z = torch.view_as_complex(x.double().reshape(*x.shape[:-1], -1, 2).contiguous())
    a = _angles(x, positions)
    out = torch.view_as_real(z * torch.polar(torch.ones_like(a), a)).flatten(-2)
    return out.to(x.dtype)


def half_as_interleaved(x, positions):
    return _interleaved(x, positions)


def half_repeat_interleave(x, positions):
    return _half(x, positions, dup="repeat")


def half_clockwise(x, positions):
    return _half(x, positions, sign=-1)


def half_positions_from_one(x, positions):
    _check_rope(x, positions)
    return _half(x, positions + 1)


def half_no_check(x, positions):
    return _half(x, positions, check=False) if x.shape[-1] % 2 == 0 else x


def half_by_permutation(x, positions):
    """写法不同：把维度置换成交错排法、用交错的 RoPE、再置换回来。"""
    _check_rope(x, positions)
    d = x.shape[-1]
    perm = torch.cat([torch.arange(0, d, 2), torch.arange(1, d, 2)])  # 半分的第 j 维 = 交错的第 perm[j] 维
    inv = torch.argsort(perm)
    return _interleaved(x[..., inv], positions)[..., perm]


def _slopes_official(n):
    def pow2(m):
        start = 2 ** (-8 / m)
        return [start ** h for h in range(1, m + 1)]

    if n & (n - 1) == 0:
        return pow2(n)
    c = 2 ** int(math.floor(math.log2(n)))
    return pow2(c) + _slopes_official(2 * c)[0::2][: n - c]


def _check_heads(n_heads):
    if not isinstance(n_heads, int) or n_heads < 1:
        raise ValueError(f"n_heads must be a positive int, got n_heads={n_heads}")


def slopes_formula_everywhere(n_heads):
    _check_heads(n_heads)
    return torch.tensor([2 ** (-8 * h / n_heads) for h in range(1, n_heads + 1)], dtype=torch.float64)


def slopes_from_zero(n_heads):
    _check_heads(n_heads)
    return torch.tensor([2 ** (-8 * h / n_heads) for h in range(n_heads)], dtype=torch.float64)


def slopes_wrong_extra(n_heads):
    _check_heads(n_heads)
    out = _slopes_official(n_heads)
    if n_heads & (n_heads - 1):
        c = 2 ** int(math.floor(math.log2(n_heads)))
        out = out[:c] + _slopes_official(2 * c)[1::2][: n_heads - c]  # 取了奇数下标
    return torch.tensor(out, dtype=torch.float64)


def slopes_no_check(n_heads):
    return torch.tensor(_slopes_official(n_heads) if n_heads > 0 else [], dtype=torch.float64)


def slopes_closed_form(n_heads):
    """写法不同：不递归；补上的那些正是 2c 个头公式里的奇数 h（1, 3, 5, …）。"""
    _check_heads(n_heads)
    c = 2 ** int(math.floor(math.log2(n_heads)))
    main = [2.0 ** (-8.0 * h / c) for h in range(1, c + 1)]
    extra = [2.0 ** (-8.0 * h / (2 * c)) for h in range(1, 2 * (n_heads - c), 2)]
    return torch.tensor(main + extra, dtype=torch.float64)


WRONG = {
    "ch07.sinusoidal_pe": [("matches", pe_exponent_i), ("matches", pe_halves), ("matches", pe_sin_cos_swapped),
                           ("bad-d_model", pe_no_check)],
    "ch07.rope_interleaved": [("matches", inter_as_half), ("matches", inter_clockwise),
                              ("position-zero", inter_positions_from_one), ("matches", inter_exponent_i),
                              ("bad-x", inter_no_check)],
    "ch07.rope_half": [("matches", half_as_interleaved), ("matches", half_repeat_interleave), ("matches", half_clockwise),
                       ("position-zero", half_positions_from_one), ("bad-x", half_no_check)],
    "ch07.alibi_slopes": [("other", slopes_formula_everywhere), ("power-of-two", slopes_from_zero),
                          ("other", slopes_wrong_extra), ("bad-n_heads", slopes_no_check)],
}
RIGHT = {"ch07.sinusoidal_pe": [pe_loops], "ch07.rope_interleaved": [inter_complex],
         "ch07.rope_half": [half_by_permutation], "ch07.alibi_slopes": [slopes_closed_form]}
