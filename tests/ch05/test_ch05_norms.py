"""Claims of chapter 05 about layer normalisation, RMSNorm, their Jacobians and invariances,
and why BatchNorm does not fit token sequences. Reader code: snippets/norms.py.
"""

from __future__ import annotations

import pytest
import torch

from snippets.norms import (
    LayerNorm,
    RMSNorm,
    batchnorm_over_tokens,
    layernorm_jacobian,
    rmsnorm_jacobian,
)

from tests.support.reference import rand

F64 = torch.float64



def with_random_affine(module, seed=1):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype))
    return module


# ---------------------------------------------------------------------------- equal to PyTorch
@pytest.mark.claim("ch05-ln-equals-torch", paper="§3.1",
                   text="从零写的 LayerNorm（带增益 γ 与偏置 β）与 nn.LayerNorm 在 float64 下相差 < 1e-12")
def test_layernorm_equals_torch():
    d = 24
    mine = with_random_affine(LayerNorm(d, eps=1e-5).to(F64))
    ref = torch.nn.LayerNorm(d, eps=1e-5).to(F64)
    with torch.no_grad():
        ref.weight.copy_(mine.gain)
        ref.bias.copy_(mine.bias)
    x = 3.0 * rand(4, 7, d, seed=2) + 0.5
    assert (mine(x) - ref(x)).abs().max().item() < 1e-12
    with pytest.raises(ValueError, match="last dimension d=24"):
        mine(rand(2, 5))


@pytest.mark.claim("ch05-rms-equals-torch", paper="§3.1",
                   text="从零写的 RMSNorm（带增益 g）与 nn.RMSNorm 在 float64 下相差 < 1e-12")
def test_rmsnorm_equals_torch():
    d = 24
    mine = with_random_affine(RMSNorm(d, eps=1e-6).to(F64))
    ref = torch.nn.RMSNorm(d, eps=1e-6).to(F64)
    with torch.no_grad():
        ref.weight.copy_(mine.gain)
    x = 3.0 * rand(4, 7, d, seed=3) + 0.5
    assert (mine(x) - ref(x)).abs().max().item() < 1e-12
    assert not hasattr(mine, "bias")                            # 没有 β


# ---------------------------------------------------------------------------- invariances
@pytest.mark.claim("ch05-ln-invariance", paper="§3.1",
                   text="LayerNorm 对每一行的平移和正的缩放都不变：LN(a·u + c·1) = LN(u)（ε = 0 时精确，a > 0）")
def test_layernorm_shift_and_scale_invariance():
    d = 16
    ln = with_random_affine(LayerNorm(d, eps=0.0).to(F64))
    u = rand(5, d, seed=4)
    for a, c in ((7.0, -3.0), (0.01, 100.0), (250.0, 0.0)):
        assert (ln(a * u + c) - ln(u)).abs().max().item() < 1e-9
    # 负的缩放会翻转 û：LN(−u) − β = −(LN(u) − β)
    assert (ln(-u) - ln.bias + (ln(u) - ln.bias)).abs().max().item() < 1e-12
    # 有 ε 时只是近似：很小的输入被 ε「托住」
    ln_eps = LayerNorm(d, eps=1e-5).to(F64)
    assert (ln_eps(1e-3 * u) - ln_eps(u)).abs().max().item() > 1e-2


@pytest.mark.claim("ch05-rms-invariance", paper="§3.1",
                   text="RMSNorm 只对缩放不变：RMSNorm(a·x) = RMSNorm(x)，但加一个常数向量 c·1 会改变输出")
def test_rmsnorm_is_scale_but_not_shift_invariant():
    d = 16
    rms = with_random_affine(RMSNorm(d, eps=0.0).to(F64))
    x = rand(5, d, seed=5)
    assert (rms(9.0 * x) - rms(x)).abs().max().item() < 1e-12
    assert (rms(x + 2.0) - rms(x)).abs().max().item() > 0.1
    ln = LayerNorm(d, eps=0.0).to(F64)
    assert (ln(x + 2.0) - ln(x)).abs().max().item() < 1e-12   # 对照：LayerNorm 不受平移影响


@pytest.mark.claim("ch05-deepnorm-equivalence", paper="§3.1",
                   text="LayerNorm 的缩放不变性推出 LN(α·x + G) = LN(x + G/α)：DeepNorm 放大残差等于把子层输出缩小 α 倍")
def test_deepnorm_scaling_is_sublayer_downscaling():
    d = 16
    ln = LayerNorm(d, eps=0.0).to(F64)
    x, g = rand(6, d, seed=6), rand(6, d, seed=7)
    for alpha in (2.0, (2 * 12) ** 0.25):
        assert (ln(alpha * x + g) - ln(x + g / alpha)).abs().max().item() < 1e-12
    assert (ln(2.0 * x + g) - ln(x + g)).abs().max().item() > 1e-2


# ---------------------------------------------------------------------------- Jacobians
@pytest.mark.claim("ch05-ln-jacobian", paper="§3.1",
                   text="LayerNorm 与 RMSNorm 雅可比矩阵的闭式（带增益、ε > 0）与自动求导一致，误差 < 1e-12")
def test_norm_jacobians_match_autograd():
    d = 12
    u = 2.0 * rand(d, seed=8) + 1.0
    ln = with_random_affine(LayerNorm(d, eps=1e-5).to(F64), seed=9)
    auto = torch.autograd.functional.jacobian(ln, u)
    assert (layernorm_jacobian(u, ln.gain.detach(), eps=1e-5) - auto).abs().max().item() < 1e-12
    rms = with_random_affine(RMSNorm(d, eps=1e-6).to(F64), seed=10)
    auto = torch.autograd.functional.jacobian(rms, u)
    assert (rmsnorm_jacobian(u, rms.gain.detach(), eps=1e-6) - auto).abs().max().item() < 1e-12


@pytest.mark.claim("ch05-ln-jacobian-norm", paper="§3.1",
                   text="γ = 1 时 LayerNorm 雅可比的谱范数恰为 1/s（s = √(σ²+ε)），这是梯度缩放倍数的上界：与 1、u−μ 正交的分量恰好乘 1/s，一般的梯度缩得更多；σ = 10 时至多约 0.1 倍，σ = 0.1 时至多约 10 倍。ε = 0 时 1 和 u−μ 两个方向被送到 0（LN 秩 d−2，RMSNorm 只有 x 方向，秩 d−1）；ε > 0 时缩放方向留下特征值 ε/s³（RMSNorm 为 ε/r³）")
def test_layernorm_jacobian_scales_by_one_over_sigma():
    d = 32
    base = rand(d, seed=11)
    base = (base - base.mean()) / base.std(unbiased=False)     # 均值 0、标准差 1
    spectral = {}
    for sigma in (10.0, 1.0, 0.1):
        u = sigma * base + 5.0
        j = layernorm_jacobian(u, eps=1e-5)
        s = (u.var(unbiased=False) + 1e-5).sqrt().item()
        spectral[sigma] = torch.linalg.matrix_norm(j, ord=2).item()
        assert abs(spectral[sigma] - 1 / s) < 1e-10
        # 在与 1、u−μ 都正交的向量上，J 就是乘 1/s
        v = rand(d, seed=12)
        basis = torch.stack([torch.ones(d, dtype=F64), u - u.mean()]).T
        q, _ = torch.linalg.qr(basis)
        v = v - q @ (q.T @ v)
        assert (j @ v - v / s).abs().max().item() < 1e-12
        # 反向传播：梯度在这些方向上被乘以 1/s
        g = j.T @ v
        ratio = (g.norm() / v.norm()).item()
        assert abs(ratio - 1 / s) < 1e-10
        # 一般的梯度（带 1 方向与 u−μ 方向的分量）缩得比 1/s 更多：1/s 只是上界
        g_any = rand(d, seed=13) + 0.5
        assert (j.T @ g_any).norm().item() / g_any.norm().item() < 0.99 / s
    assert 0.0999 < spectral[10.0] < 0.1001 and 9.99 < spectral[0.1] < 10.0   # 缩小 / 放大
    assert abs(spectral[1.0] - 1.0) < 1e-5
    u = 3.0 * base + 1.0
    j0 = layernorm_jacobian(u, eps=0.0)
    assert (j0 @ torch.ones(d, dtype=F64)).abs().max().item() < 1e-12
    assert (j0 @ (u - u.mean())).abs().max().item() < 1e-12
    assert torch.linalg.matrix_rank(j0).item() == d - 2
    # RMSNorm 的雅可比只把 x 方向送到 0，1 方向保留
    jr = rmsnorm_jacobian(u, eps=0.0)
    assert (jr @ u).abs().max().item() < 1e-12
    assert (jr @ torch.ones(d, dtype=F64)).abs().max().item() > 1e-3
    assert torch.linalg.matrix_rank(jr).item() == d - 1
    # ε > 0：缩放方向不再是零方向，特征值是 ε/s³（LN）和 ε/r³（RMSNorm），秩各加 1
    eps = 1e-2
    w = 0.3 * base + 1.0
    c = w - w.mean()
    s_eps = (w.var(unbiased=False) + eps).sqrt()
    j_eps = layernorm_jacobian(w, eps=eps)
    assert (j_eps @ c - (eps / s_eps ** 3) * c).abs().max().item() < 1e-12
    assert (j_eps @ torch.ones(d, dtype=F64)).abs().max().item() < 1e-12
    assert torch.linalg.matrix_rank(j_eps).item() == d - 1
    r_eps = (w.pow(2).mean() + eps).sqrt()
    jr_eps = rmsnorm_jacobian(w, eps=eps)
    assert (jr_eps @ w - (eps / r_eps ** 3) * w).abs().max().item() < 1e-12
    assert torch.linalg.matrix_rank(jr_eps).item() == d


# ---------------------------------------------------------------------------- BatchNorm vs LayerNorm
def test_batchnorm_over_tokens_equals_torch_batchnorm():
    x = rand(3, 5, 8, seed=13)
    bn = torch.nn.BatchNorm1d(8, affine=False, eps=1e-5).to(F64).train()
    ref = bn(x.reshape(-1, 8)).reshape(3, 5, 8)                 # 批和位置摊平成 15 个样本
    assert (batchnorm_over_tokens(x) - ref).abs().max().item() < 1e-12
    with pytest.raises(ValueError, match=r"\(batch, n, d\)"):
        batchnorm_over_tokens(rand(3, 8))


@pytest.mark.claim("ch05-bn-batch-dependence", paper="§3.1",
                   text="BatchNorm 给第 0 句的输出会随批里其他句子改变；LayerNorm 给第 0 句的输出逐比特不变")
def test_batchnorm_depends_on_the_rest_of_the_batch():
    x = rand(4, 6, 8, seed=14)
    other = x.clone()
    other[1:] = rand(3, 6, 8, seed=15) * 3.0 + 1.0             # 只换掉第 1–3 句
    bn_a, bn_b = batchnorm_over_tokens(x)[0], batchnorm_over_tokens(other)[0]
    assert (bn_a - bn_b).abs().max().item() > 0.1
    ln = LayerNorm(8).to(F64)
    assert torch.equal(ln(x)[0], ln(other)[0])


@pytest.mark.claim("ch05-bn-padding", paper="§3.1",
                   text="补齐位置会污染 BatchNorm 的统计量：只改补齐的长度，真实词元的输出就变了；LayerNorm 不受影响")
def test_padding_contaminates_batch_statistics():
    real = rand(2, 5, 8, seed=16) + 2.0                        # 两句，各 5 个真实词元
    outs = []
    for pad in (0, 3, 10):                                      # 右侧补 pad 个零向量
        x = torch.cat([real, torch.zeros(2, pad, 8, dtype=F64)], dim=1)
        outs.append(batchnorm_over_tokens(x)[:, :5])
    assert (outs[0] - outs[1]).abs().max().item() > 0.1
    assert (outs[1] - outs[2]).abs().max().item() > 0.1
    # 只用真实词元统计（keep 掩码）就与补齐长度无关
    x = torch.cat([real, torch.zeros(2, 10, 8, dtype=F64)], dim=1)
    keep = torch.zeros(2, 15, dtype=torch.bool)
    keep[:, :5] = True
    assert (batchnorm_over_tokens(x, keep)[:, :5] - outs[0]).abs().max().item() < 1e-12
    ln = LayerNorm(8).to(F64)
    assert torch.equal(ln(x)[:, :5], ln(real))


@pytest.mark.claim("ch05-bn-train-eval", paper="§3.1",
                   text="BatchNorm 训练时用本批统计量、推理时用滑动平均，同一批输入两种模式的输出不同；LayerNorm 两种模式完全相同")
def test_batchnorm_train_inference_mismatch():
    torch.manual_seed(0)
    bn = torch.nn.BatchNorm1d(8).to(F64)
    for seed in range(20):                                      # 批与批之间统计量波动
        bn(rand(6, 8, seed=100 + seed) * (1 + seed % 4))
    x = rand(6, 8, seed=17)
    train_out = bn.train()(x)
    eval_out = bn.eval()(x)
    assert (train_out - eval_out).abs().max().item() > 0.1
    ln = torch.nn.LayerNorm(8).to(F64)
    assert torch.equal(ln.train()(x), ln.eval()(x))


@pytest.mark.claim("ch05-bn-causality", paper="§3.1",
                   text="在解码器里按批和位置统计的 BatchNorm 会泄露未来：改动最后一个位置，第 0 个位置的输出就变了；LayerNorm 不会")
def test_batchnorm_leaks_the_future_across_positions():
    x = rand(2, 6, 8, seed=18)
    future = x.clone()
    future[:, -1] += 5.0
    assert (batchnorm_over_tokens(x)[:, 0] - batchnorm_over_tokens(future)[:, 0]).abs().max().item() > 0.1
    ln = LayerNorm(8).to(F64)
    assert torch.equal(ln(x)[:, 0], ln(future)[:, 0])
