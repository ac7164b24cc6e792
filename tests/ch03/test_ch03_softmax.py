"""Claims of chapter 03 「缩放点积注意力」 about softmax itself: the variance of q·k and the three
scalings, the softmax Jacobian, saturation, entropy and temperature, the stable softmax and its
overflow thresholds. Everything runs on the CPU in float64 unless a claim is about a low-precision dtype.
"""

from __future__ import annotations

import math
import re

import pytest
import torch

from snippets.attention import scaled_dot_product_attention
from snippets.softmax import (
    attention_logits,
    exp_overflow_threshold,
    naive_softmax,
    softmax_entropy,
    softmax_jacobian,
    softmax_max_weight,
    softmax_vjp,
    stable_log_softmax,
    stable_softmax,
)
from tests.support.pages import assert_states, chapter, plain

CH03 = chapter("03")
DERIVATION = CH03 + "derivation.md"

F64 = torch.float64
Z99 = 2.576  # 99 % 双侧正态分位数


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def mc_variance(x: torch.Tensor) -> tuple[float, float]:
    """Sample variance and its standard error (from the sample fourth moment)."""
    n = x.numel()
    c = x - x.mean()
    var = c.pow(2).mean().item()
    se = math.sqrt(max((c.pow(4).mean().item() - var**2) / n, 0.0))
    return var, se


# ---------------------------------------------------------------------------- variance and scaling
@pytest.mark.claim("ch03-var-dk", paper="§3.2.1 脚注 4",
                   text="分量独立、均值 0、方差 1 时 Var(q·k) 落在 d_k 的 99% 置信区间内（高斯与 ±1 两种分布都成立）；除以 √d_k 后方差落在 1 的置信区间内")
def test_dot_product_variance_is_dk_for_any_unit_variance_components():
    samples = 40_000
    for d_k in (16, 64, 256):
        for dist in ("gauss", "rademacher"):
            g = gen(d_k)
            if dist == "gauss":
                q = torch.randn(samples, 1, d_k, generator=g, dtype=F64)
                k = torch.randn(samples, 1, d_k, generator=g, dtype=F64)
            else:
                q = torch.randint(0, 2, (samples, 1, d_k), generator=g).to(F64) * 2 - 1
                k = torch.randint(0, 2, (samples, 1, d_k), generator=g).to(F64) * 2 - 1
            raw, se_raw = mc_variance(attention_logits(q, k, "none"))
            assert abs(raw - d_k) < Z99 * se_raw + 1e-9, (d_k, dist, raw, se_raw)
            scaled, se_scaled = mc_variance(attention_logits(q, k, "sqrt"))
            assert abs(scaled - 1.0) < Z99 * se_scaled, (d_k, dist, scaled, se_scaled)
            assert se_raw / d_k < 0.02  # the interval is narrow enough to mean something


@pytest.mark.claim("ch03-scale-rules", paper="§3.2.1",
                   text="初始化时三种缩放下 logits 的方差：1/√d_k 给出 1，1/d_k 给出 1/d_k，不缩放给出 d_k（相对误差 < 5%）；d_k = 64 时标准差分别约为 1、0.125、8，与页面所写相同")
def test_three_scalings_give_variance_one_over_dk_and_dk():
    for d_k in (16, 64, 256):
        g = gen(100 + d_k)
        q = torch.randn(20_000, 1, d_k, generator=g, dtype=F64)
        k = torch.randn(20_000, 1, d_k, generator=g, dtype=F64)
        expect = {"sqrt": 1.0, "linear": 1.0 / d_k, "none": float(d_k)}
        for rule, target in expect.items():
            var = attention_logits(q, k, rule).var().item()
            assert abs(var / target - 1) < 0.05, (d_k, rule, var, target)
            if d_k == 64:  # 页面上写的三个标准差，与测得的标准差相差 < 5%
                prefix = {"none": "d_k=64时logits的标准差是", "linear": "d_k=64时只有", "sqrt": "logits的标准差为"}
                found = re.search(re.escape(prefix[rule]) + r"([0-9.]+)", plain(DERIVATION))
                assert found, f"{DERIVATION} does not state the {rule} std after {prefix[rule]!r}"
                assert abs(float(found.group(1).rstrip(".")) / math.sqrt(var) - 1) < 0.05, (rule, found.group(1), var)


@pytest.mark.claim("ch03-aligned-growth", paper="§3.2.1",
                   text="q、k 各分量相关系数为 ρ 时，1/√d_k 缩放的 logits 均值随 ρ√d_k 增长；q·k 的方差是 d_k(1 + ρ²)，所以 q·k/d_k 集中在 ρ 附近，而 q·k 的分布宽度仍按 √d_k 增长")
def test_correlated_q_k_mean_grows_with_sqrt_dk_under_sqrt_scaling():
    rho = 0.5
    for d_k in (16, 64, 256):
        g = gen(200 + d_k)
        q = torch.randn(20_000, 1, d_k, generator=g, dtype=F64)
        k = rho * q + math.sqrt(1 - rho**2) * torch.randn(20_000, 1, d_k, generator=g, dtype=F64)
        mean_sqrt = attention_logits(q, k, "sqrt").mean().item()
        assert abs(mean_sqrt - rho * math.sqrt(d_k)) < 0.05 * rho * math.sqrt(d_k)
        var_raw = attention_logits(q, k, "none").var().item()  # 不是 ρ²d_k：独立部分的涨落还在
        assert abs(var_raw / (d_k * (1 + rho**2)) - 1) < 0.05, (d_k, var_raw)
    assert_states(DERIVATION, "Var(q\\cdotk)=d_k(1+\\rho^2)")


@pytest.mark.claim("ch03-unscaled-max-weight", paper="§3.2.1 脚注 4",
                   text="不缩放时一行 64 个 logits 的标准差是 √d_k：d_k = 64 时 softmax 的最大权重平均约 0.79，d_k = 256 时约 0.90（后者才接近独热）")
def test_max_weight_of_unscaled_logits():
    written = {}
    for d_k in (64, 256):
        z = math.sqrt(d_k) * torch.randn(100_000, 64, generator=gen(300 + d_k), dtype=F64)
        written[d_k] = f"{softmax_max_weight(z).mean().item():.2f}"
    assert written == {64: "0.79", 256: "0.90"}, written
    assert_states(DERIVATION, f"最大权重平均约{written[64]}", f"d_k=256时约{written[256]}")


@pytest.mark.claim("ch03-scale-is-optimisation", paper="§3.2.1",
                   text="把 1/√d_k 乘进 W^Q 得到同一个函数（函数族不变）；但同一个 Adam、同一个学习率走一步，并进去的写法让 logits 的变化约大 √d_k 倍（d_k = 16、64、256，误差 < 2%）")
def test_scale_can_be_folded_into_w_q_but_changes_adam_steps():
    for d_k in (16, 64, 256):
        g = gen(400 + d_k)
        x, y = torch.randn(8, 32, generator=g, dtype=F64), torch.randn(8, 32, generator=g, dtype=F64)
        w_q, w_k = torch.randn(32, d_k, generator=g, dtype=F64), torch.randn(32, d_k, generator=g, dtype=F64)
        target = torch.randn(8, 8, generator=g, dtype=F64)
        w_scaled = w_q.clone().requires_grad_()  # s = (x W) (y W_k)ᵀ / √d_k
        w_folded = (w_q / math.sqrt(d_k)).requires_grad_()  # s = (x W') (y W_k)ᵀ，W' = W / √d_k
        logits = {"scaled": lambda: attention_logits(x @ w_scaled, y @ w_k, "sqrt"),
                  "folded": lambda: attention_logits(x @ w_folded, y @ w_k, "none")}
        before = {name: f().detach() for name, f in logits.items()}
        assert (before["scaled"] - before["folded"]).abs().max().item() < 1e-9  # 同一个函数
        for name, w in (("scaled", w_scaled), ("folded", w_folded)):
            opt = torch.optim.Adam([w], lr=1e-3)
            loss = (stable_softmax(logits[name]()) * target).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
        delta = {name: (f().detach() - before[name]).norm().item() for name, f in logits.items()}
        assert abs(delta["folded"] / delta["scaled"] / math.sqrt(d_k) - 1) < 0.02, (d_k, delta)


# ---------------------------------------------------------------------------- the Jacobian
@pytest.mark.claim("ch03-jacobian-autograd", paper="§3.2.1",
                   text="softmax_jacobian 给出的 diag(p) − p pᵀ 与 torch.autograd.functional.jacobian 在 float64 下相差 < 1e-12（含批维度）")
def test_softmax_jacobian_equals_autograd(device):
    z = 3 * torch.randn(2, 3, 7, generator=gen(1), dtype=F64).to(device)
    mine = softmax_jacobian(z)  # (2, 3, 7, 7)
    assert mine.shape == (2, 3, 7, 7)
    for b in range(2):
        for r in range(3):
            ref = torch.autograd.functional.jacobian(lambda v: torch.softmax(v, dim=-1), z[b, r])
            assert (mine[b, r] - ref).abs().max().item() < 1e-12


@pytest.mark.claim("ch03-jacobian-structure", paper="§3.2.1",
                   text="J 对称、J·1 = 0、半正定；p 在单纯形内部时秩恰为 n − 1")
def test_jacobian_symmetric_null_vector_psd_rank():
    for n in (2, 5, 16, 64):
        z = 2 * torch.randn(10, n, generator=gen(n), dtype=F64)
        J = softmax_jacobian(z)
        # 对称：在读者的 stable_softmax 上用自动求导算雅可比（不经 diag(p) − p pᵀ 这个公式，那个公式按构造就对称）
        for row in z[:3]:
            auto = torch.autograd.functional.jacobian(stable_softmax, row)
            assert (auto - auto.T).abs().max().item() < 1e-15
        assert (J @ torch.ones(n, dtype=F64)).abs().max().item() < 1e-15
        eig = torch.linalg.eigvalsh(J)  # (10, n), ascending
        assert eig.min().item() > -1e-15
        assert torch.linalg.matrix_rank(J).tolist() == [n - 1] * 10


@pytest.mark.claim("ch03-jacobian-norm", paper="§3.2.1",
                   text="‖J‖₂ ≤ 2·maxᵢ pᵢ(1 − pᵢ) ≤ 1/2；两个并列最大、其余趋于 0 时趋近 1/2")
def test_jacobian_spectral_norm_bounds():
    z = 4 * torch.randn(2000, 12, generator=gen(3), dtype=F64)
    p = stable_softmax(z)
    norm = torch.linalg.matrix_norm(softmax_jacobian(z), ord=2)  # (2000,)
    bound = 2 * (p * (1 - p)).amax(dim=-1)
    assert (norm <= bound + 1e-12).all() and (bound <= 0.5 + 1e-15).all()
    tie = torch.tensor([30.0, 30.0] + [0.0] * 10, dtype=F64)  # p ≈ (1/2, 1/2, ε, …)
    assert abs(torch.linalg.matrix_norm(softmax_jacobian(tie), ord=2).item() - 0.5) < 1e-9


@pytest.mark.claim("ch03-softmax-vjp", paper="§3.2.1",
                   text="softmax 的反向传播 p ⊙ (g − ⟨p, g⟩) 与 J·g、与自动求导在 float64 下相差 < 1e-12，不构造 n×n 的 J；注意力里 ⟨p_i, dO_i Vᵀ⟩ 恰等于 ⟨dO_i, O_i⟩（FlashAttention-2 反向用的行和）")
def test_softmax_vjp_equals_jacobian_product_and_autograd():
    z = (3 * torch.randn(4, 5, 33, generator=gen(31), dtype=F64)).requires_grad_()
    g = torch.randn(4, 5, 33, generator=gen(32), dtype=F64)
    p = stable_softmax(z)
    (p * g).sum().backward()
    mine = softmax_vjp(p.detach(), g)
    via_j = (softmax_jacobian(z.detach()) @ g.unsqueeze(-1)).squeeze(-1)
    assert (mine - z.grad).abs().max().item() < 1e-12 and (mine - via_j).abs().max().item() < 1e-12
    # 注意力：O = P V，dP = dO Vᵀ，⟨p_i, dP_i⟩ = dO_i · O_i，所以反向只需 O 和 dO，不必存 P
    v = torch.randn(4, 33, 8, generator=gen(33), dtype=F64)
    d_out = torch.randn(4, 5, 8, generator=gen(34), dtype=F64)
    P = p.detach()
    out = P @ v
    d_p = d_out @ v.transpose(-2, -1)
    assert ((P * d_p).sum(-1) - (d_out * out).sum(-1)).abs().max().item() < 1e-12


@pytest.mark.claim("ch03-saturation-bound", paper="§3.2.1",
                   text="最大 logit 比其余都大至少 Δ 时 ‖J‖₂ ≤ 2(n − 1)e^{−Δ}；n = 64、Δ = 10 时低于 5.8·10⁻³；所有间隔恰为 Δ 时界约为实际范数的 2 倍")
def test_saturated_jacobian_is_bounded_by_the_gap():
    n, gap = 64, 10.0
    bound = 2 * (n - 1) * math.exp(-gap)
    assert bound < 5.8e-3
    rest = -gap - 5 * torch.rand(500, n - 1, generator=gen(4), dtype=F64)  # 其余 logit 都 ≤ −Δ
    z = torch.cat([torch.zeros(500, 1, dtype=F64), rest], dim=-1)
    norm = torch.linalg.matrix_norm(softmax_jacobian(z), ord=2)
    assert (norm <= bound).all()
    equal_gap = torch.cat([torch.zeros(1, dtype=F64), torch.full((n - 1,), -gap, dtype=F64)])
    tight = torch.linalg.matrix_norm(softmax_jacobian(equal_gap), ord=2).item()
    assert 1.9 < bound / tight < 2.1  # 所有间隔都是 Δ 时，界约为实际范数的 2 倍（页面：「约 2 倍」）


@pytest.mark.claim("ch03-saturated-gradient", paper="§3.2.1",
                   text="注意力里，分数标准差从 1 变成 16（d_k = 256 不缩放）时，传回分数的梯度范数的中位数缩小到 1/10 以下")
def test_gradient_to_scores_vanishes_when_attention_saturates():
    n, d_v, rows = 64, 16, 400
    g = gen(5)
    base = torch.randn(rows, n, generator=g, dtype=F64)
    v = torch.randn(rows, n, d_v, generator=g, dtype=F64)
    upstream = torch.randn(rows, d_v, generator=g, dtype=F64)  # ∂L/∂out，与尺度无关

    def grad_norms(sigma):
        s = (sigma * base).requires_grad_()
        p = stable_softmax(s)  # (rows, n)
        out = (p.unsqueeze(-2) @ v).squeeze(-2)  # (rows, d_v)
        (out * upstream).sum().backward()
        return s.grad.norm(dim=-1)

    small, large = grad_norms(1.0).median().item(), grad_norms(16.0).median().item()
    assert large < 0.1 * small, (small, large)


@pytest.mark.claim("ch03-logsoftmax-gradient", paper="§3.2.1",
                   text="交叉熵（log-softmax）对 logits 的梯度是 p − e_y：即使 softmax 饱和在错误的类上，梯度范数也 ≥ 1 − p_y，不会消失")
def test_log_softmax_gradient_does_not_vanish_when_wrong():
    z = torch.tensor([40.0, 0.0, -3.0, 1.0], dtype=F64, requires_grad=True)  # 饱和在第 0 类
    y = 2
    (-stable_log_softmax(z)[y]).backward()
    p = stable_softmax(z.detach())
    assert torch.allclose(z.grad, p - torch.nn.functional.one_hot(torch.tensor(y), 4).to(F64), atol=1e-15)
    assert z.grad.norm().item() >= 1 - p[y].item() > 0.999
    assert torch.linalg.matrix_norm(softmax_jacobian(z.detach()), ord=2).item() < 1e-15  # 而 J 几乎为 0


# ---------------------------------------------------------------------------- entropy and temperature
@pytest.mark.claim("ch03-entropy-temperature", paper="§3.2.1",
                   text="H(softmax(βz)) 随 β 单调不增，且 dH/dβ = −β·Var_p(z)；最大权重单调不减；β → 0 时 H → log n，β 很大时 H → 0")
def test_entropy_falls_and_max_weight_rises_with_scale():
    z = torch.randn(50, 32, generator=gen(6), dtype=F64)
    betas = torch.linspace(0, 20, 81, dtype=F64)
    H = torch.stack([softmax_entropy(z, b.item()) for b in betas])  # (81, 50)
    M = torch.stack([softmax_max_weight(z, b.item()) for b in betas])
    assert (H[1:] <= H[:-1] + 1e-12).all() and (M[1:] >= M[:-1] - 1e-12).all()
    assert torch.allclose(H[0], torch.full((50,), math.log(32), dtype=F64), atol=1e-12)
    assert (softmax_entropy(z, 1e4) < 1e-6).all()
    for beta in (0.5, 1.0, 3.0):
        b = torch.tensor(beta, dtype=F64, requires_grad=True)
        softmax_entropy(z[0], b).backward()
        p = stable_softmax(beta * z[0])
        var_p = (p * z[0] ** 2).sum() - (p * z[0]).sum() ** 2
        assert abs(b.grad.item() - (-beta * var_p.item())) < 1e-12


@pytest.mark.claim("ch03-entropy-length", paper="§3.2.1",
                   text="logits 方差固定为 1 时，注意力的熵随键数 n 增长，约为 log n − 1/2（n = 64、1024、16384 时误差 < 0.05）：缩放因子只与 d_k 有关，序列变长时注意力照样变散")
def test_entropy_grows_with_the_number_of_keys():
    prev = -1.0
    for n in (64, 1024, 16384):
        z = torch.randn(256, n, generator=gen(40 + n), dtype=F64)  # 方差 1：缩放后的 logits
        H = softmax_entropy(z).mean().item()
        assert abs(H - (math.log(n) - 0.5)) < 0.05, (n, H)
        assert H > prev + 2.0  # n 每乘 16，熵多出约 log 16 ≈ 2.77
        prev = H
    assert_states(DERIVATION.replace("derivation.md", "derivation-softmax.md"), "H\\approx\\logn-\\tfrac12")


# ---------------------------------------------------------------------------- stable softmax, overflow
@pytest.mark.claim("ch03-stable-softmax", paper="§3.2.1",
                   text="减去最大值的 softmax 与 log-softmax 在 float64 下与 torch.softmax / torch.log_softmax 相差 < 1e-12")
def test_stable_softmax_equals_torch(device):
    z = 10 * torch.randn(6, 5, 33, generator=gen(7), dtype=F64).to(device)
    assert (stable_softmax(z) - torch.softmax(z, dim=-1)).abs().max().item() < 1e-12
    assert (stable_log_softmax(z) - torch.log_softmax(z, dim=-1)).abs().max().item() < 1e-12


@pytest.mark.claim("ch03-overflow-thresholds", paper="§3.2.1",
                   text="exp 的上溢阈值 log(finfo.max)：fp16 约 11.09，bf16 与 fp32 约 88.72；阈值之下 exp 有限，之上为 inf")
def test_exp_overflow_thresholds_per_dtype():
    expected = {torch.float16: 11.09, torch.bfloat16: 88.72, torch.float32: 88.72}
    for dtype, approx in expected.items():
        t = exp_overflow_threshold(dtype)
        assert abs(t - approx) < 0.01
        below = torch.exp(torch.tensor(t - 0.05, dtype=dtype))
        above = torch.exp(torch.tensor(t + 0.05, dtype=dtype))
        assert torch.isfinite(below) and torch.isinf(above), dtype


@pytest.mark.claim("ch03-fp16-softmax", paper="§3.2.1",
                   text="fp16 里 logits 超过 11.09 时朴素 softmax 在溢出的位置得到 NaN、其余位置悄悄变成 0（(12, 3, −1, 11.5) → (NaN, 0, 0, NaN)），减最大值的 softmax 仍有限，且与 float64 的结果相差 < 1e-3")
def test_stable_softmax_survives_fp16_where_naive_overflows():
    z64 = torch.tensor([[12.0, 3.0, -1.0, 11.5], [60.0, 59.0, 0.0, -60.0]], dtype=F64)
    z16 = z64.to(torch.float16)
    naive = naive_softmax(z16)
    assert torch.isnan(naive[0, [0, 3]]).all() and torch.equal(naive[0, [1, 2]], torch.zeros(2, dtype=torch.float16))
    p16 = stable_softmax(z16)
    assert torch.isfinite(p16).all()
    assert (p16.to(F64) - torch.softmax(z64, dim=-1)).abs().max().item() < 1e-3


# ---------------------------------------------------------------------------- misconceptions
@pytest.mark.claim("ch03-wrong-jacobian", paper="§3.2.1",
                   text="把 softmax 当逐元素函数的「只有对角线 p_i(1 − p_i)」和「p_i(1 − p_j)」两种写法与自动求导不符，diag(p) − p pᵀ 才相符")
def test_popular_wrong_jacobians_disagree_with_autograd():
    z = torch.randn(6, generator=gen(8), dtype=F64)
    ref = torch.autograd.functional.jacobian(lambda v: torch.softmax(v, dim=-1), z)
    p = stable_softmax(z)
    diag_only = torch.diag(p * (1 - p))
    outer_wrong = p.unsqueeze(-1) * (1 - p).unsqueeze(-2)
    assert (softmax_jacobian(z) - ref).abs().max().item() < 1e-12
    assert (diag_only - ref).abs().max().item() > 1e-2
    assert (outer_wrong - ref).abs().max().item() > 1e-2
    # 错的雅可比矩阵给出错的梯度：J·1 ≠ 0，平移所有 logits 也会「改变」输出
    assert (diag_only @ torch.ones(6, dtype=F64)).abs().max().item() > 1e-2


@pytest.mark.claim("ch03-wrong-axis", paper="§3.2.3",
                   text="在查询轴上做 softmax（dim=-2）时每行之和不再是 1，而且带因果掩码也会泄露未来：改最后一个查询，第一个位置的输出随之改变")
def test_softmax_over_the_query_axis_breaks_rows_and_causality():
    n, d = 6, 8
    g = gen(9)
    q, k, v = (torch.randn(1, n, d, generator=g, dtype=F64) for _ in range(3))
    mask = torch.ones(n, n, dtype=torch.bool).tril()

    def wrong_axis(q):
        s = (q @ k.transpose(-2, -1) / math.sqrt(d)).masked_fill(~mask, float("-inf"))
        w = torch.softmax(s, dim=-2)  # 错：在查询轴上归一化
        return w @ v, w

    q2 = q.clone()
    q2[0, -1] += 5.0  # 只改最后一个位置的查询
    out_w, w = wrong_axis(q)
    out_w2, _ = wrong_axis(q2)
    assert (w.sum(-1) - 1).abs().max().item() > 0.1
    assert (out_w[0, 0] - out_w2[0, 0]).abs().max().item() > 1e-3  # 位置 0 看到了未来
    out, _ = scaled_dot_product_attention(q, k, v, mask)
    out2, _ = scaled_dot_product_attention(q2, k, v, mask)
    assert torch.equal(out[0, :-1], out2[0, :-1])  # 正确的轴：前面的位置一比特都不变
