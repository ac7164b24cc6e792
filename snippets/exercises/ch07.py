"""第 07 章的练习：正弦位置编码、两种配对的 RoPE、ALiBi 的斜率。参考答案：snippets/positional.py。"""

from __future__ import annotations

import torch

from snippets import positional
from snippets.exercises.core import Case, Exercise, Property, matches_reference, raises, randn, register

DERIV = "07-positional-encoding/derivation.md"
ROPE = "07-positional-encoding/derivation-rope.md"
CODE = ("07-positional-encoding/code.md", "code")
DTYPES = [torch.float64, torch.float32]


# --------------------------------------------------------------------------- sinusoidal_pe
def _ref_pe(max_len, d_model):
    return positional.sinusoidal_positional_encoding(max_len, d_model, dtype=torch.float64)


register(Exercise(
    id="ch07.sinusoidal_pe", name="sinusoidal_pe", questions=("7.2",), title="正弦位置编码",
    signature="sinusoidal_pe(max_len, d_model)",
    statement="论文 §3.5 的正弦位置编码，交错排法：PE[pos, 2i] = sin(pos·ω_i)，PE[pos, 2i+1] = cos(pos·ω_i)，"
              "ω_i = 1 / 10000^(2i/d_model)，i = 0 … d_model/2 − 1。返回 float64。",
    shapes="max_len、d_model 是正整数，d_model 为偶数 → (max_len, d_model) float64。",
    bad_input="d_model 是奇数或不是正数：ValueError，报错信息写出 d_model。",
    reference=_ref_pe, solution=CODE,
    stub='''def sinusoidal_pe(max_len, d_model):
    """PE[pos, 2i] = sin(pos·ω_i)，PE[pos, 2i+1] = cos(pos·ω_i)，ω_i = 10000^(−2i/d_model)。
    → (max_len, d_model) float64。d_model 是奇数：ValueError（写出 d_model）。"""
    raise NotImplementedError("在这里写你的实现")
''',
    properties=[
        Property("matches", "偶数维 sin、奇数维 cos，频率 ω_i = 10000^(−2i/d_model)",
                 "第 i 对频率的指数是 2i/d_model（不是 i/d_model）；偶数维放 sin、奇数维放 cos，两两交错，不是前一半 sin、后一半 cos。",
                 DERIV, "sinusoid", lambda rng, max_len, d_model: Case((max_len, d_model)), matches_reference(),
                 dims={"max_len": [1, 2, 5, 9], "d_model": [2, 4, 6, 8, 16]}),
        Property("bad-d_model", "d_model 是奇数：ValueError，并写出参数名 d_model",
                 "sin、cos 成对占两维：d_model 必须是偶数。", DERIV, "sinusoid",
                 lambda rng: Case((4, 5), note="d_model = 5"), raises("d_model")),
    ],
))


# --------------------------------------------------------------------------- rope_interleaved, rope_half
def _ref_interleaved(x, positions):
    return positional.apply_rope(x, positions)


def _ref_half(x, positions):
    return positional.apply_rope_half(x, positions)


def _make_rope(rng, batch, n, pairs, offset, dtype):
    lead = (batch,) if batch else ()
    x = randn(rng, *lead, n, 2 * pairs, dtype=dtype)
    positions = torch.arange(offset, offset + n)
    return Case((x, positions), note=f"positions 从 {offset} 开始" if offset else "")


def _make_bad_rope(rng, which):
    if which == 0:
        return Case((randn(rng, 3, 5), torch.arange(3)), note="x 的最后一维 5 是奇数")
    return Case((randn(rng, 3, 4), torch.arange(4)), note="positions 有 4 个，x 有 3 个位置")


ROPE_DIMS = {"batch": [0, 1, 2], "n": [1, 2, 3, 5], "pairs": [1, 2, 3, 4], "offset": [0, 1, 7, 100], "dtype": DTYPES}


def _rope_exercise(eid, name, title, layout, reference, hint_layout, questions):
    register(Exercise(
        id=eid, name=name, questions=questions, title=title,
        signature=f"{name}(x, positions)",
        statement=f"旋转位置编码（RoPE），{layout}：每一对维度 (a, b) 在位置 pos 上转过角度 pos·θ_i，"
                  "θ_i = 10000^(−2i/d)，i = 0 … d/2 − 1：a' = a·cos − b·sin，b' = a·sin + b·cos。"
                  "positions 给出每个位置的编号（不一定从 0 开始）。",
        shapes="x (..., n, d)，d 为偶数；positions (n,) 整数张量 → 与 x 同形状、同 dtype。",
        bad_input="x 的最后一维是奇数：ValueError（写出 x）；positions 的形状不是 (n,)：ValueError（写出 positions）。",
        reference=reference, solution=CODE,
        stub=f'''def {name}(x, positions):
    """RoPE（{layout}）：每对维度 (a, b) 转过 pos·θ_i，θ_i = 10000^(−2i/d)。
    x (..., n, d)，positions (n,) → 与 x 同形状、同 dtype。
    d 是奇数：ValueError（写出 x）；positions 形状不是 (n,)：ValueError（写出 positions）。"""
    raise NotImplementedError("在这里写你的实现")
''',
        properties=[
            Property("position-zero", "位置 0 不转：positions 全为 0 时输出等于输入",
                     "角度是 pos·θ_i：pos = 0 时 cos = 1、sin = 0。位置编号用 positions 给的，不要自己从 1 数起。",
                     ROPE, "rope", lambda rng, batch, n, pairs, dtype: Case(
                         (randn(rng, *((batch,) if batch else ()), n, 2 * pairs, dtype=dtype),
                          torch.zeros(n, dtype=torch.long)), note="positions 全为 0"),
                     matches_reference(), dims={k: v for k, v in ROPE_DIMS.items() if k != "offset"}, tries=8),
            Property("matches", f"与参考一致：{layout}、角度 pos·θ_i、逆时针旋转（随机位置、float32 与 float64）",
                     hint_layout, ROPE, "rope-layouts", _make_rope, matches_reference(), dims=ROPE_DIMS),
            Property("bad-x", "x 的最后一维是奇数：ValueError，并写出参数名 x",
                     "两两配对：d 必须是偶数。", ROPE, "rope", lambda rng: _make_bad_rope(rng, 0), raises("x")),
            Property("bad-positions", "positions 的形状不是 (n,)：ValueError，并写出参数名 positions",
                     "比较 positions.shape 与 (x.shape[-2],)。", ROPE, "rope",
                     lambda rng: _make_bad_rope(rng, 1), raises("positions")),
        ],
    ))


_rope_exercise("ch07.rope_interleaved", "rope_interleaved", "RoPE：交错配对", "交错配对（RoFormer）：第 2i 维与第 2i+1 维一对",
               _ref_interleaved,
               "交错配对：x[..., 0::2] 与 x[..., 1::2] 一对，结果也写回偶数、奇数维；θ_i 的指数是 2i/d；"
               "a' = a cos − b sin 的负号在 a 那一维。", ("7.4", "7.5"))
_rope_exercise("ch07.rope_half", "rope_half", "RoPE：半分配对", "半分配对（GPT-NeoX、LLaMA）：第 i 维与第 i + d/2 维一对",
               _ref_half,
               "半分配对：前一半与后一半一对，rotate_half(x) = cat(−x2, x1)；角度要写成 cat(angle, angle)（每个频率用两次，"
               "前一半一次、后一半一次），不是 repeat_interleave。", ("7.5",))


# --------------------------------------------------------------------------- alibi_slopes
def _ref_slopes(n_heads):
    return positional.alibi_slopes(n_heads)


register(Exercise(
    id="ch07.alibi_slopes", name="alibi_slopes", questions=("7.6",), title="ALiBi 的斜率",
    signature="alibi_slopes(n_heads)",
    statement="ALiBi 每个头一个斜率 m_h。n_heads 是 2 的幂时 m_h = 2^(−8h/n)，h = 1 … n（8 个头：1/2, 1/4, …, 1/256）。"
              "否则取 c = 2^⌊log₂ n⌋：先放 c 个头的斜率，再从 2c 个头的斜率里隔一个取一个（第 1、3、5 … 个），补足 n − c 个。"
              "返回 float64。",
    shapes="n_heads 是正整数 → (n_heads,) float64。",
    bad_input="n_heads 不是正整数：ValueError，报错信息写出 n_heads。",
    reference=_ref_slopes, solution=CODE,
    stub='''def alibi_slopes(n_heads):
    """2 的幂：m_h = 2^(−8h/n)，h = 1 … n。否则 c = 2^⌊log2 n⌋：c 个头的斜率，
    再接上 2c 个头的斜率里隔一个取一个的前 n − c 个。→ (n_heads,) float64。
    n_heads 不是正整数：ValueError（写出 n_heads）。"""
    raise NotImplementedError("在这里写你的实现")
''',
    properties=[
        Property("power-of-two", "n_heads 是 2 的幂：m_h = 2^(−8h/n)，h 从 1 起",
                 "h 从 1 数到 n（第一个头的斜率是 2^(−8/n)，不是 1）。", ROPE, "alibi",
                 lambda rng, n: Case((n,)), matches_reference(), dims={"n": [1, 2, 4, 8, 16, 32]}, tries=6),
        Property("other", "n_heads 不是 2 的幂：c 个头的斜率，再从 2c 个头的斜率里隔一个取一个",
                 "不是 2 的幂时，2^(−8h/n) 不是官方的斜率：先放 c = 2^⌊log2 n⌋ 个头的，再取 2c 个头的斜率的第 0、2、4 … 个（下标从 0 起）。",
                 ROPE, "alibi", lambda rng, n: Case((n,)), matches_reference(), dims={"n": [3, 5, 6, 7, 12, 20]},
                 tries=6),
        Property("bad-n_heads", "n_heads 不是正整数：ValueError，并写出参数名 n_heads",
                 "检查 isinstance(n_heads, int) 且 n_heads ≥ 1。", ROPE, "alibi",
                 lambda rng: Case((0,), note="n_heads = 0"), raises("n_heads")),
    ],
))
