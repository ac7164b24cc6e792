"""第 08 章的练习：学习率公式、标签平滑的损失、Adam 的一步。参考答案：snippets/training.py。"""

from __future__ import annotations

import torch

from snippets import training
from snippets.exercises.core import Case, Exercise, Property, matches_reference, raises, randn, register

DERIV = "08-training/derivation.md"
OPT = "08-training/derivation-optimizer.md"
CODE = ("08-training/code.md", "code")


# --------------------------------------------------------------------------- noam_lr
def _ref_lr(step, d_model=512, warmup=4000):
    return training.noam_lr(step, d_model, warmup)


def _make_lr(rng, where, d_model, warmup):
    step = {"first": 1, "before": max(1, warmup // 3), "peak": warmup, "after": 3 * warmup + 7}[where]
    return Case((step,), {"d_model": d_model, "warmup": warmup})


register(Exercise(
    id="ch08.noam_lr", name="noam_lr", questions=("8.1",), title="学习率公式",
    signature="noam_lr(step, d_model=512, warmup=4000)",
    statement="论文公式 (3)：lrate = d_model^−0.5 · min(step^−0.5, step · warmup^−1.5)。step 从 1 数起："
              "step ≤ warmup 时线性上升，之后按 1/√step 衰减，峰值在 step = warmup。返回 float。",
    shapes="step、d_model、warmup 是正整数 → float。",
    bad_input="step < 1（论文从 1 数起；step = 0 时 step^−0.5 无定义）：ValueError，报错信息写出 step。",
    reference=_ref_lr, solution=CODE,
    stub='''def noam_lr(step, d_model=512, warmup=4000):
    """d_model^−0.5 · min(step^−0.5, step · warmup^−1.5)，step 从 1 起。→ float。
    step < 1：ValueError（写出 step）。"""
    raise NotImplementedError("在这里写你的实现")
''',
    properties=[
        Property("warmup", "预热阶段（step ≤ warmup）：线性上升 d_model^−0.5 · step · warmup^−1.5，峰值在 step = warmup",
                 "两项取 min：预热时 step·warmup^−1.5 更小；别漏了前面的 d_model^−0.5，指数是 −1.5 不是 −0.5。",
                 DERIV, "schedule", _make_lr, matches_reference(rtol=1e-9),
                 dims={"where": ["first", "before", "peak"], "d_model": [512, 64, 1024], "warmup": [4000, 10, 100]}),
        Property("decay", "预热之后：按 d_model^−0.5 · step^−0.5 衰减",
                 "预热之后 step^−0.5 更小：min 而不是 max。", DERIV, "schedule",
                 _make_lr, matches_reference(rtol=1e-9),
                 dims={"where": ["after"], "d_model": [512, 64, 1024], "warmup": [4000, 10, 100]}, tries=6),
        Property("bad-step", "step = 0：ValueError，并写出参数名 step",
                 "论文的 step 从 1 数起：step = 0 时 0^−0.5 是除以零。", DERIV, "schedule",
                 lambda rng: Case((0,), note="step = 0"), raises("step")),
    ],
))


# --------------------------------------------------------------------------- label_smoothed_nll
def _ref_ls(logits, target, eps=0.1, ignore_index=-100):
    return training.label_smoothed_nll(logits, target, eps, ignore_index)


def _make_ls(rng, n, k, eps, pad, dtype):
    logits = randn(rng, n, k, dtype=dtype, scale=2.0)
    target = torch.randint(k, (n,), generator=rng)
    if pad:
        target[-pad:] = -100  # 最后 pad 个位置是填充
    return Case((logits, target), {"eps": eps}, note=f"最后 {pad} 个位置是填充（-100）" if pad else "")


LS_DIMS = {"n": [1, 2, 3, 5], "k": [2, 3, 5, 8], "eps": [0.1, 0.0, 0.3], "dtype": [torch.float64, torch.float32]}

register(Exercise(
    id="ch08.label_smoothed_nll", name="label_smoothed_nll", questions=("8.6",), title="标签平滑的交叉熵",
    signature="label_smoothed_nll(logits, target, eps=0.1, ignore_index=-100)",
    statement="标签平滑（论文 §5.4，ε_ls = 0.1）：目标分布 q = (1 − ε)·onehot(y) + ε/K，K 个类都分到 ε/K"
              "（与 PyTorch 的 label_smoothing 相同）。损失 −Σ_k q_k log p_k = (1 − ε)(−log p_y) + ε·(−(1/K) Σ_k log p_k)，"
              "对没有被忽略的位置取平均：target == ignore_index 的位置（填充）既不计入损失，也不计入分母。",
    shapes="logits (N, K) 浮点张量，target (N,) 整数张量 → 标量张量。",
    bad_input="target 不是整数张量：TypeError（写出 target）；eps 不在 [0, 1)：ValueError（写出 eps）。",
    reference=_ref_ls, solution=CODE,
    stub='''def label_smoothed_nll(logits, target, eps=0.1, ignore_index=-100):
    """(1 − ε)(−log p_y) + ε·(−mean_k log p_k)，对 target != ignore_index 的位置取平均。
    logits (N, K)，target (N,) 整数 → 标量。target 不是整数：TypeError；eps 不在 [0, 1)：ValueError。"""
    raise NotImplementedError("在这里写你的实现")
''',
    properties=[
        Property("no-padding", "没有填充：(1 − ε)(−log p_y) + ε·(−(1/K) Σ_k log p_k) 的平均",
                 "ε 均分给全部 K 个类（包括目标类），不是只分给另外 K − 1 个；log p 用 log_softmax 算，别先 softmax 再 log。",
                 DERIV, "ls-conventions", lambda rng, **d: _make_ls(rng, pad=0, **d), matches_reference(), dims=LS_DIMS),
        Property("padding", "有填充：填充位置不计入损失，也不计入分母",
                 "先用 keep = target != ignore_index 选出真实位置，平滑项也只在这些位置上算；平均时除以真实位置的个数。",
                 DERIV, "label-smoothing", lambda rng, n, **d: _make_ls(rng, n=n + 1, pad=1, **d), matches_reference(),
                 dims=LS_DIMS),
        Property("bad-target", "target 是浮点张量：TypeError，并写出参数名 target",
                 "检查 target 的 dtype 是整数。", DERIV, "label-smoothing",
                 lambda rng: Case((randn(rng, 2, 3), torch.tensor([0.0, 1.0])), note="target 是浮点张量"),
                 raises("target")),
        Property("bad-eps", "eps = 1：ValueError，并写出参数名 eps",
                 "ε 必须在 [0, 1)：ε = 1 时目标完全均匀，不再有标签。", DERIV, "label-smoothing",
                 lambda rng: Case((randn(rng, 2, 3), torch.tensor([0, 1])), {"eps": 1.0}, note="eps = 1"), raises("eps")),
    ],
))


# --------------------------------------------------------------------------- adam_update
def _ref_adam(param, grad, m, v, t, lr, betas=(0.9, 0.98), eps=1e-9):
    if isinstance(t, bool) or not isinstance(t, int) or t < 1:
        raise ValueError(f"t must be an int >= 1 (the step number, counted from 1), got t={t!r}")
    p = param.clone()
    state = {"t": t - 1, "m": [m.clone()], "v": [v.clone()]}
    training.adam_step([p], [grad], state, lr, betas, eps)
    return p, state["m"][0], state["v"][0]


def _make_adam(rng, size, t, scale, dtype):
    param, grad = randn(rng, size, dtype=dtype), randn(rng, size, dtype=dtype, scale=scale)
    if t == 1:
        m, v = torch.zeros(size, dtype=dtype), torch.zeros(size, dtype=dtype)
    else:
        m, v = randn(rng, size, dtype=dtype, scale=0.1 * scale), randn(rng, size, dtype=dtype, scale=scale).pow(2) * 0.1
    return Case((param, grad, m, v, t, 1e-2), note="第一步：m = v = 0" if t == 1 else f"第 {t} 步")


ADAM_DIMS = {"size": [1, 2, 3, 5], "t": [2, 5, 100], "scale": [1.0, 1e3], "dtype": [torch.float64, torch.float32]}

register(Exercise(
    id="ch08.adam_update", name="adam_update", questions=("8.4",), title="Adam 的一步",
    signature="adam_update(param, grad, m, v, t, lr, betas=(0.9, 0.98), eps=1e-9)",
    statement="Adam 的第 t 步（t 从 1 数起；论文 β₁ = 0.9，β₂ = 0.98，ε = 10⁻⁹）：m ← β₁m + (1 − β₁)g，v ← β₂v + (1 − β₂)g²，"
              "m̂ = m/(1 − β₁ᵗ)，v̂ = v/(1 − β₂ᵗ)，θ ← θ − lr·m̂/(√v̂ + ε)。返回新的 (param, m, v)，不修改传入的张量。",
    shapes="param、grad、m、v 同形状的浮点张量；t 正整数；lr 浮点数 → (param, m, v)，各与 param 同形状。",
    bad_input="t < 1：ValueError，报错信息写出 t。",
    reference=_ref_adam, solution=CODE,
    stub='''def adam_update(param, grad, m, v, t, lr, betas=(0.9, 0.98), eps=1e-9):
    """m ← β₁m + (1 − β₁)g，v ← β₂v + (1 − β₂)g²，m̂ = m/(1 − β₁ᵗ)，v̂ = v/(1 − β₂ᵗ)，
    θ ← θ − lr·m̂/(√v̂ + ε)。返回新的 (param, m, v)。t < 1：ValueError（写出 t）。"""
    raise NotImplementedError("在这里写你的实现")
''',
    properties=[
        Property("first-step", "第一步（m = v = 0）：偏差校正后每个参数移动约 lr·sign(g)",
                 "m、v 从 0 出发，第 1 步的 m = (1 − β₁)g 偏小：除以 1 − β₁ᵗ、1 − β₂ᵗ 校正，t 从 1 数起。",
                 OPT, "bias-correction", lambda rng, **d: _make_adam(rng, t=1, **d), matches_reference(),
                 dims={"size": [1, 2, 3, 5], "scale": [1.0, 1e3], "dtype": [torch.float64, torch.float32]}),
        Property("later-steps", "之后的步：两个矩的滑动平均与更新都对",
                 "v 累积的是 g²（逐元素平方），不是 g 或 |g|；偏差校正用的是这一步的 t。", OPT, "adam",
                 _make_adam, matches_reference(), dims=ADAM_DIMS),
        Property("small-v", "梯度很小（量级 1e-4，√v̂ 与 ε 相差不到几个数量级）：ε 加在 √v̂ 外面",
                 "是 √v̂ + ε，不是 √(v̂ + ε)：v̂ 很小时两者差得多。", OPT, "epsilon",
                 lambda rng, **d: _make_adam(rng, scale=1e-4, **d), matches_reference(),
                 dims={"size": [1, 2, 3], "t": [1, 2, 5, 100], "dtype": [torch.float64]}, tries=6),
        Property("bad-t", "t = 0：ValueError，并写出参数名 t",
                 "t 从 1 数起：t = 0 时 1 − β₁⁰ = 0，偏差校正除以零。", OPT, "bias-correction",
                 lambda rng: Case((torch.zeros(2), torch.ones(2), torch.zeros(2), torch.zeros(2), 0, 1e-2), note="t = 0"),
                 raises("t")),
    ],
))
