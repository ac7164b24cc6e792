"""第 05 章的练习：LayerNorm、RMSNorm、残差连接的两种放法（Post-LN 与 Pre-LN）。
参考答案：snippets/norms.py、snippets/transformer.py（add_and_norm）。"""

from __future__ import annotations

import torch
from torch import nn

from snippets import norms, transformer
from snippets.exercises.core import Case, Exercise, Property, Text, matches_reference, raises, randn, register

NORM = "05-ffn-residual-norm/derivation-norm.md"
CODE = ("05-ffn-residual-norm/code.md", "code")
DTYPES = [torch.float64, torch.float32]


def _check_gain(x, gain, name="gain"):
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        raise TypeError(f"x must be a floating-point tensor, got {getattr(x, 'dtype', type(x).__name__)}")
    if gain.dim() != 1 or gain.shape[0] != x.shape[-1]:
        raise ValueError(f"{name} must have shape (d,) with d = x.shape[-1] = {x.shape[-1]}, got {name} {tuple(gain.shape)}")


# --------------------------------------------------------------------------- layer_norm
def _ref_layer_norm(x, gain, bias, eps=1e-5):
    _check_gain(x, gain)
    _check_gain(x, bias, "bias")
    ln = norms.LayerNorm(x.shape[-1], eps).to(x.dtype)
    with torch.no_grad():
        ln.gain.copy_(gain)
        ln.bias.copy_(bias)
        return ln(x)


def _rows(rng, batch, n, d, dtype, scale, offset):
    shape = (batch, n, d) if batch else (n, d)
    return randn(rng, *shape, dtype=dtype, scale=scale) + offset


def _make_ln(rng, batch, n, d, dtype, scale=2.0, offset=3.0, eps=1e-5):
    return Case((_rows(rng, batch, n, d, dtype, scale, offset), randn(rng, d, dtype=dtype) + 1, randn(rng, d, dtype=dtype)),
                {"eps": eps})


LN_DIMS = {"batch": [0, 1, 2], "n": [1, 2, 3], "d": [2, 3, 4, 8], "dtype": DTYPES}

register(Exercise(
    id="ch05.layer_norm", questions=("5.3",), name="layer_norm", title="层归一化（LayerNorm）",
    signature="layer_norm(x, gain, bias, eps=1e-5)",
    statement="对每个位置的 d 个特征各自归一化：LN(x) = γ ⊙ (x − μ) / √(σ² + ε) + β，μ、σ² 是这一行 d 个数的均值与"
              "有偏方差（除以 d）。ε 在根号里面。只用同一个位置自己的数，不跨位置、不跨样本。",
    shapes="x (..., d) 浮点张量，gain (d,)，bias (d,) → (..., d)。",
    bad_input="gain 或 bias 的形状不是 (d,)：ValueError，报错信息写出出错的参数名（gain 或 bias）。",
    reference=_ref_layer_norm, solution=CODE,
    stub='''def layer_norm(x, gain, bias, eps=1e-5):
    """γ ⊙ (x − μ) / √(σ² + ε) + β，沿最后一维；σ² 是有偏方差。x (..., d)，gain、bias (d,) → (..., d)。
    gain 或 bias 形状不是 (d,)：ValueError（写出参数名）。"""
    raise NotImplementedError("在这里写你的实现")
''',
    properties=[
        Property("matches", "与 γ ⊙ (x − μ)/√(σ² + ε) + β 一致（随机形状、均值不为 0）",
                 "沿最后一维（keepdim=True）求均值与方差；方差是有偏的（除以 d，unbiased=False）；别忘了 γ 与 β。",
                 NORM, "layernorm", _make_ln, matches_reference(), dims=LN_DIMS),
        Property("small-variance", "方差很小的行（量级 1e-3）：ε 在根号里面",
                 "是 √(σ² + ε)，不是 √σ² + ε：方差与 ε 同一量级时两者差很多。", NORM, "layernorm",
                 lambda rng, **d: _make_ln(rng, scale=1e-3, offset=0.5, **d), matches_reference(), dims=LN_DIMS),
        Property("bad-gain", "gain 的形状不是 (d,)：ValueError，并写出参数名 gain",
                 "比较 gain.shape 与 (x.shape[-1],)。", NORM, "layernorm",
                 lambda rng: Case((randn(rng, 2, 4), torch.ones(3, dtype=torch.float64), torch.zeros(4, dtype=torch.float64)),
                                  note="x 宽 4，gain 宽 3"), raises("gain")),
    ],
))


# --------------------------------------------------------------------------- rms_norm
def _ref_rms_norm(x, gain, eps=1e-6):
    _check_gain(x, gain)
    rms = norms.RMSNorm(x.shape[-1], eps).to(x.dtype)
    with torch.no_grad():
        rms.gain.copy_(gain)
        return rms(x)


def _make_rms(rng, batch, n, d, dtype, scale=2.0, offset=3.0):
    return Case((_rows(rng, batch, n, d, dtype, scale, offset), randn(rng, d, dtype=dtype) + 1))


register(Exercise(
    id="ch05.rms_norm", questions=("5.5",), name="rms_norm", title="均方根归一化（RMSNorm）",
    signature="rms_norm(x, gain, eps=1e-6)",
    statement="RMSNorm(x) = g ⊙ x / √(mean(x²) + ε)，沿最后一维。与 LayerNorm 不同：不减均值，没有偏置 β。",
    shapes="x (..., d) 浮点张量，gain (d,) → (..., d)。",
    bad_input="gain 的形状不是 (d,)：ValueError，报错信息写出 gain。",
    reference=_ref_rms_norm, solution=CODE,
    stub='''def rms_norm(x, gain, eps=1e-6):
    """g ⊙ x / √(mean(x²) + ε)，沿最后一维；不减均值。x (..., d)，gain (d,) → (..., d)。
    gain 形状不是 (d,)：ValueError（写出 gain）。"""
    raise NotImplementedError("在这里写你的实现")
''',
    properties=[
        Property("matches", "与 g ⊙ x/√(mean(x²) + ε) 一致（均值不为 0 的输入）",
                 "RMSNorm 不减均值：除以的是均方根 √mean(x²)，不是标准差。", NORM, "rmsnorm",
                 _make_rms, matches_reference(), dims=LN_DIMS),
        Property("small-scale", "很小的输入（量级 1e-4）：ε 在根号里面",
                 "是 √(mean(x²) + ε)，不是 √mean(x²) + ε。", NORM, "rmsnorm",
                 lambda rng, **d: _make_rms(rng, scale=1e-4, offset=0.0, **d), matches_reference(), dims=LN_DIMS),
        Property("bad-gain", "gain 的形状不是 (d,)：ValueError，并写出参数名 gain",
                 "比较 gain.shape 与 (x.shape[-1],)。", NORM, "rmsnorm",
                 lambda rng: Case((randn(rng, 2, 4), torch.ones(5, dtype=torch.float64)), note="x 宽 4，gain 宽 5"),
                 raises("gain")),
    ],
))


# --------------------------------------------------------------------------- residual_block
def _ref_residual(x, sublayer, norm, norm_first):
    if not isinstance(norm_first, bool):
        raise TypeError(f"norm_first must be a bool, got {type(norm_first).__name__}")
    with torch.no_grad():
        return transformer.add_and_norm(x, sublayer, norm, nn.Identity(), norm_first)


class _Sublayer(nn.Module):
    """一个看得出放在哪里的子层：tanh(x W + c)。"""

    def __init__(self, d, rng, dtype):
        super().__init__()
        self.linear = nn.Linear(d, d).to(dtype)
        with torch.no_grad():
            self.linear.weight.copy_(randn(rng, d, d, dtype=dtype, scale=0.8))
            self.linear.bias.copy_(randn(rng, d, dtype=dtype) + 1.0)

    def forward(self, x):
        return torch.tanh(self.linear(x))


def _make_residual(rng, batch, n, d, dtype, norm_first):
    norm = nn.LayerNorm(d).to(dtype)
    with torch.no_grad():
        norm.weight.copy_(randn(rng, d, dtype=dtype) + 1)
        norm.bias.copy_(randn(rng, d, dtype=dtype))
    x = randn(rng, batch, n, d, dtype=dtype, scale=2.0) + 1.0
    sub = _Sublayer(d, rng, dtype)
    return Case((x, sub, norm, norm_first),
                show={"x": x, "sublayer": Text(f"tanh(Linear({d}, {d}))，随机权重"), "norm": Text(f"nn.LayerNorm({d})，随机 γ、β"),
                      "norm_first": norm_first})


RES_DIMS = {"batch": [1, 2], "n": [1, 2, 3], "d": [2, 3, 5], "dtype": DTYPES}

register(Exercise(
    id="ch05.residual_block", questions=("5.7",), name="residual_block", title="残差连接：Post-LN 与 Pre-LN",
    signature="residual_block(x, sublayer, norm, norm_first)",
    statement="把一个子层包上残差连接与层归一化，两种放法：norm_first=False 是论文的 Post-LN，LayerNorm(x + Sublayer(x))；"
              "norm_first=True 是 Pre-LN，x + Sublayer(LayerNorm(x))。sublayer、norm 都是可调用的模块。",
    shapes="x (batch, n, d)；sublayer、norm：(…, d) → (…, d)；norm_first 是 bool → (batch, n, d)。",
    bad_input="norm_first 不是 bool（例如字符串 pre）：TypeError，报错信息写出 norm_first。",
    reference=_ref_residual, solution=("02-architecture/code.md", "code"),
    stub='''def residual_block(x, sublayer, norm, norm_first):
    """norm_first=False（Post-LN）：norm(x + sublayer(x))；True（Pre-LN）：x + sublayer(norm(x))。
    x (batch, n, d) → (batch, n, d)。norm_first 不是 bool：TypeError（写出 norm_first）。"""
    raise NotImplementedError("在这里写你的实现")
''',
    properties=[
        Property("post-ln", "norm_first=False：LayerNorm(x + Sublayer(x))",
                 "Post-LN 把残差加完之后再归一化：输出的每一行都被 LayerNorm 过。", NORM, "post-vs-pre",
                 lambda rng, **d: _make_residual(rng, norm_first=False, **d), matches_reference(), dims=RES_DIMS),
        Property("pre-ln", "norm_first=True：x + Sublayer(LayerNorm(x))",
                 "Pre-LN 只归一化子层的输入，残差这条路上的 x 原样加回去（恒等路径）。", NORM, "post-vs-pre",
                 lambda rng, **d: _make_residual(rng, norm_first=True, **d), matches_reference(), dims=RES_DIMS),
        Property("bad-norm_first", "norm_first 不是 bool：TypeError，并写出参数名 norm_first",
                 "非空字符串（pre、post）都为真：不检查就会悄悄当成 True。", NORM, "post-vs-pre",
                 lambda rng: _make_residual(rng, 1, 2, 3, torch.float64, "post"), raises("norm_first")),
    ],
))
