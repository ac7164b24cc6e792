"""Claims of chapter 03 about masks in low precision, fully masked rows, padding and loss masking,
additive attention (its cost and its mask convention), separate Q/K projections and the 2026 tweaks
(QK-norm, soft-capping, sinks, fp8).
"""

from __future__ import annotations

import math

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from snippets.additive import AdditiveAttention, additive_attention, attention_cost
from snippets.attention import causal_mask, padding_mask, scaled_dot_product_attention
from snippets.softmax import (
    attention_logits,
    fp8_round_trip,
    masked_cross_entropy,
    masked_softmax,
    qk_rmsnorm,
    soft_cap,
    softmax_with_sink,
    stable_softmax,
)

from tests.support.pages import assert_states, chapter

F64, F16 = torch.float64, torch.float16
CH03 = chapter("03")


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def rand(*shape, seed=0, dtype=F64):
    return torch.randn(*shape, generator=gen(seed), dtype=dtype)


# ---------------------------------------------------------------------------- masks in fp16
@pytest.mark.claim("ch03-fp16-mask-value", paper="§3.2.3",
                   text="fp16 里 −1e9 变成 −inf（masked_fill 直接报溢出错误），finfo(fp16).min = −65504 是有限数；但分数 −100 加上它又溢出成 −inf")
def test_minus_1e9_overflows_in_fp16_but_finfo_min_does_not():
    assert torch.isinf(torch.tensor(-1e9, dtype=F16))
    fmin = torch.finfo(F16).min
    assert fmin == -65504.0 and torch.isfinite(torch.tensor(fmin, dtype=F16))
    scores = torch.zeros(2, 3, dtype=F16)
    keep = torch.tensor([[True, False, True], [True, True, False]])
    with pytest.raises(RuntimeError, match="overflow"):
        scores.masked_fill(~keep, -1e9)
    assert torch.isfinite(scores.masked_fill(~keep, fmin)).all()
    additive = torch.tensor([-100.0], dtype=F16) + torch.tensor([fmin], dtype=F16)  # 加法掩码：分数 + 偏置
    assert torch.isinf(additive).all()
    # masked_softmax 在 fp16 里：遮住处恰为 0，其余与 float64 一致
    s = rand(2, 3, seed=1).to(F16)
    w = masked_softmax(s, keep)
    assert (w[~keep] == 0).all()
    ref = torch.softmax(s.to(F64).masked_fill(~keep, float("-inf")), dim=-1)
    assert (w.to(F64) - ref).abs().max().item() < 1e-3


@pytest.mark.claim("ch03-fully-masked-row", paper="§3.2.3",
                   text="整行被遮住：−inf 掩码让 torch.softmax 得 NaN，finfo.min 掩码得到均匀的 1/n；本书的 masked_softmax、sdpa 与 additive_attention 都给出全 0，反向梯度也全部有限（本书固定的 torch 版本里，F.scaled_dot_product_attention 在 CPU 上也给出 0）")
def test_fully_masked_row_gives_zeros_not_nan():
    n = 4
    s = rand(3, n, seed=2)
    keep = torch.ones(3, n, dtype=torch.bool)
    keep[1] = False  # 第 1 行整行被遮住
    assert torch.isnan(torch.softmax(s.masked_fill(~keep, float("-inf")), -1)[1]).all()
    uniform = torch.softmax(s.masked_fill(~keep, torch.finfo(F64).min), -1)[1]
    assert torch.allclose(uniform, torch.full((n,), 1 / n, dtype=F64))
    s_req = s.clone().requires_grad_()
    w = masked_softmax(s_req, keep)
    assert torch.equal(w[1], torch.zeros(n, dtype=F64))
    (w * rand(3, n, seed=3)).sum().backward()
    assert torch.isfinite(s_req.grad).all()

    q = rand(1, 3, 8, seed=4).requires_grad_()
    k, v = rand(1, n, 8, seed=5), rand(1, n, 5, seed=6)
    out_d, w_d = scaled_dot_product_attention(q, k, v, keep)
    attn = AdditiveAttention(8, 8, 16).double()
    out_a, w_a = attn(q, k, v, keep)
    for out, w in ((out_d, w_d), (out_a, w_a)):
        assert torch.equal(w[0, 1], torch.zeros(n, dtype=F64)) and torch.equal(out[0, 1], torch.zeros(5, dtype=F64))
        assert torch.allclose(w[0, [0, 2]].sum(-1), torch.ones(2, dtype=F64))
    ref = torch.nn.functional.scaled_dot_product_attention(q.detach(), k, v, attn_mask=keep)
    assert torch.equal(ref[0, 1], torch.zeros(5, dtype=F64))  # PyTorch 自己的实现（这个版本、CPU）
    (out_d.sum() + out_a.sum()).backward()
    assert torch.isfinite(q.grad).all() and all(torch.isfinite(p.grad).all() for p in attn.parameters())


@pytest.mark.claim("ch03-left-padding-causal", paper="§3.2.3",
                   text="左侧补齐再加因果掩码时，补齐位置的查询整行被遮住：朴素 −inf 写法得 NaN，乘 0 也去不掉，并经 ∂L/∂V 进入梯度；本书的写法得 0、梯度有限")
def test_left_padding_with_causal_mask():
    n, d = 5, 8
    lengths = torch.tensor([5, 3])  # 第 1 句左侧补 2 个
    key_ok = torch.arange(n) >= (n - lengths)[:, None]  # (2, n)：左侧补齐
    mask = causal_mask(n) & key_ok[:, None, :]  # (2, n, n)
    assert not mask[1, 0].any() and not mask[1, 1].any()  # 两个补齐位置：整行被遮住
    q = rand(2, n, d, seed=7).requires_grad_()
    k, v = rand(2, n, d, seed=8), rand(2, n, d, seed=9).requires_grad_()
    naive = torch.softmax((q @ k.transpose(-2, -1) / math.sqrt(d)).masked_fill(~mask, float("-inf")), -1) @ v
    assert torch.isnan(naive[1, :2]).all()
    keep_rows = torch.ones(2, n, 1, dtype=F64)
    keep_rows[1, :2] = 0  # 「损失里乘 0 把补齐位置去掉」：NaN · 0 仍是 NaN
    loss = (naive * keep_rows).sum()
    assert torch.isnan(loss)
    loss.backward()
    assert torch.isnan(v.grad).any()  # NaN 权重经 ∂L/∂V = Wᵀ·g 传进值向量的梯度
    q.grad = v.grad = None
    out, _ = scaled_dot_product_attention(q, k, v, mask)
    assert torch.equal(out[1, :2], torch.zeros(2, d, dtype=F64))
    (out * keep_rows).sum().backward()
    assert torch.isfinite(q.grad).all() and torch.isfinite(v.grad).all()


@pytest.mark.claim("ch03-nan-next-layer", paper="§3.2.3",
                   text="前向里 NaN 会跨层扩散：左侧补齐 + 因果掩码、朴素 −inf 写法、带残差的两层自注意力，第一层只有补齐行是 NaN，第二层所有位置（包括真实词元）都是 NaN（被遮住的键权重为 0，但 0·NaN = NaN）；本书的写法两层都有限")
def test_nan_rows_poison_real_tokens_in_the_next_layer():
    n, d = 5, 8
    key_ok = torch.arange(n) >= 2  # 一句话，左侧补 2 个
    mask = causal_mask(n) & key_ok[None, :]  # (n, n)：补齐位置的两行整行被遮住
    x = rand(1, n, d, seed=24)

    def naive(h):  # 丢掉本书约定的写法：−inf 掩码之后直接 softmax
        s = attention_logits(h, h).masked_fill(~mask, float("-inf"))
        return torch.softmax(s, dim=-1) @ h

    def layer(h, attn):
        return h + attn(h)  # 残差连接

    h1 = layer(x, naive)
    assert torch.isnan(h1[0, :2]).all() and torch.isfinite(h1[0, 2:]).all()  # 第一层：只有补齐行
    h2 = layer(h1, naive)
    assert torch.isnan(h2).all(dim=-1).all()  # 第二层：真实词元也是 NaN
    mine = lambda h: scaled_dot_product_attention(h, h, h, mask)[0]
    assert torch.isfinite(layer(layer(x, mine), mine)).all()


@pytest.mark.claim("ch03-mask-polarity", paper="§3.2.3",
                   text="布尔掩码的含义在 PyTorch 的接口之间相反：F.scaled_dot_product_attention 的 True = 参与注意力（与本书相同），nn.MultiheadAttention 的 attn_mask / key_padding_mask 里 True = 忽略；把同一个掩码原样传过去，遮住的恰好反了")
def test_boolean_mask_means_opposite_things_in_two_pytorch_apis():
    n, d = 6, 8
    x = rand(1, n, d, seed=25)
    keep = causal_mask(n)  # True = 可以看
    ours, _ = scaled_dot_product_attention(x, x, x, keep)
    ref = torch.nn.functional.scaled_dot_product_attention(x, x, x, attn_mask=keep)
    assert (ours - ref).abs().max().item() < 1e-12  # 同一个约定
    mha = torch.nn.MultiheadAttention(d, 1, batch_first=True, bias=False).double()
    _, w_right = mha(x, x, x, attn_mask=~keep)  # True = 忽略：要取反
    assert torch.equal(w_right[0][~keep], torch.zeros_like(w_right[0][~keep]))
    past = keep.clone().fill_diagonal_(False)  # 严格的过去；对角线留给每行一个可看的键，免得最后一行整行被遮住
    _, w_wrong = mha(x, x, x, attn_mask=past)  # 本书的掩码不取反就交过去
    assert torch.equal(w_wrong[0][past], torch.zeros_like(w_wrong[0][past]))  # 本该看的过去被遮住
    assert (w_wrong[0][~keep] > 0).all()  # 本该遮住的未来被看见
    _, w_kpm = mha(x, x, x, key_padding_mask=torch.tensor([[False] * 4 + [True] * 2]))  # True = 补齐，忽略
    assert torch.equal(w_kpm[0][:, 4:], torch.zeros(n, 2, dtype=F64))


@pytest.mark.claim("ch03-key-query-padding", paper="§3.2.3",
                   text="键填充掩码 (B, 1, n) 让真实查询的输出与补齐内容无关，但补齐位置的查询仍有非零输出；再加查询填充掩码 (B, n, 1) 后这些行恰为 0")
def test_key_padding_vs_query_padding():
    n, d = 6, 8
    lengths = torch.tensor([6, 4])
    key_mask = padding_mask(lengths, n)  # (2, 1, n)
    q_mask = key_mask.transpose(-1, -2)  # (2, n, 1)
    x = rand(2, n, d, seed=10)
    x2 = x.clone()
    x2[1, 4:] = 100 * rand(2, d, seed=11)  # 换掉补齐位置的内容
    out, _ = scaled_dot_product_attention(x, x, x, key_mask)
    out2, _ = scaled_dot_product_attention(x2, x2, x2, key_mask)
    assert torch.equal(out[1, :4], out2[1, :4])  # 真实查询：逐比特不变
    assert out[1, 4:].abs().max().item() > 0.1  # 补齐查询：有输出（无害，但不能进损失）
    both, _ = scaled_dot_product_attention(x, x, x, key_mask & q_mask)
    assert torch.equal(both[1, 4:], torch.zeros(2, d, dtype=F64))
    assert torch.equal(both[1, :4], out[1, :4])


@pytest.mark.claim("ch03-ignore-index", paper="§5.4",
                   text="masked_cross_entropy 与 F.cross_entropy(ignore_index=−100) 相差 < 1e-12；被忽略位置的 logits 随便改，损失不变、梯度恰为 0")
def test_loss_masking_with_ignore_index():
    logits = rand(3, 7, 11, seed=12).requires_grad_()
    targets = torch.randint(0, 11, (3, 7), generator=gen(13))
    targets[0, 5:] = -100
    targets[2, 2:] = -100
    ref = torch.nn.functional.cross_entropy(logits.reshape(-1, 11), targets.reshape(-1), ignore_index=-100)
    mine = masked_cross_entropy(logits, targets)
    assert abs(mine.item() - ref.item()) < 1e-12
    mine.backward()
    ignored = targets == -100
    assert torch.equal(logits.grad[ignored], torch.zeros_like(logits.grad[ignored]))
    assert logits.grad[~ignored].abs().sum().item() > 0
    changed = logits.detach().clone()
    changed[ignored] += 1e3
    assert abs(masked_cross_entropy(changed, targets).item() - mine.item()) < 1e-12


# ---------------------------------------------------------------------------- additive vs dot
@pytest.mark.claim("ch03-additive-flops", paper="§3.2.1",
                   text="FlopCounterMode 数出的矩阵乘法 FLOPs 与闭式相等：点积 2·B·n_q·n_k·(d_k + d_v)，加性再加两次投影与 2·B·n_q·n_k·d_h")
def test_flop_counts_equal_closed_forms():
    for batch, n_q, n_k, d_q, d_key, d_h, d_v in ((1, 5, 7, 6, 3, 8, 4), (2, 16, 16, 32, 32, 64, 32)):
        q, k, v = rand(batch, n_q, d_q), rand(batch, n_k, d_key, seed=1), rand(batch, n_k, d_v, seed=2)
        attn = AdditiveAttention(d_q, d_key, d_h).double()
        with FlopCounterMode(display=False) as fc:
            attn(q, k, v)
        assert fc.get_total_flops() == attention_cost("additive", batch, n_q, n_k, d_q, d_key, d_h, d_v)["matmul"]
        qd, kd = rand(batch, n_q, d_h, seed=3), rand(batch, n_k, d_h, seed=4)
        with FlopCounterMode(display=False) as fc:
            scaled_dot_product_attention(qd, kd, v)
        dot = attention_cost("dot", batch, n_q, n_k, d_h, d_h, d_h, d_v)
        assert fc.get_total_flops() == dot["matmul"] == 2 * batch * n_q * n_k * (d_h + d_v)
    # 页面上的两个倍数：n = 4096、d = 64 时加性比点积多多少（连逐元素运算；只数矩阵乘法）
    add, dot = attention_cost("additive", 1, 4096, 4096, 64, 64, 64, 64), attention_cost("dot", 1, 4096, 4096, 64, 64, 64, 64)
    total = (add["matmul"] + add["elementwise"]) / (dot["matmul"] + dot["elementwise"])
    assert_states(CH03 + "derivation.md", f"总数约为点积的{total:.2f}倍", f"只数矩阵乘法约为{add['matmul'] / dot['matmul']:.2f}倍")
    assert_states(CH03 + "questions.md", f"约{total:.1f}倍")


@pytest.mark.claim("ch03-additive-memory", paper="§3.2.1",
                   text="为反向传播存下的最大中间张量：加性注意力是 n_q·n_k·d_h 个数，点积注意力是 n_q·n_k 个数（saved_tensors_hooks 实测）")
def test_largest_saved_activation():
    batch, n, d_model, d_h = 2, 64, 16, 32

    def largest_saved(fn):
        sizes = []
        with torch.autograd.graph.saved_tensors_hooks(lambda t: sizes.append(t.numel()) or t, lambda t: t):
            fn()
        return max(sizes)

    x = rand(batch, n, d_model, seed=5).requires_grad_()
    attn = AdditiveAttention(d_model, d_model, d_h).double()
    add_cost = attention_cost("additive", batch, n, n, d_model, d_model, d_h, d_model)
    assert largest_saved(lambda: attn(x, x, x)) == add_cost["score_elements"] == batch * n * n * d_h
    w_q, w_k = rand(d_model, d_h, seed=6), rand(d_model, d_h, seed=7)
    dot_cost = attention_cost("dot", batch, n, n, d_h, d_h, d_h, d_model)
    saved = largest_saved(lambda: scaled_dot_product_attention(x @ w_q, x @ w_k, x))
    assert saved == dot_cost["score_elements"] == batch * n * n


@pytest.mark.claim("ch03-inner-product-retrieval", paper="§3.2.1",
                   text="4 维空间里 16 个标准正态点，按内积挑「最像自己」的点只有约 56% 挑中自己，加上 −½‖k‖²（最近邻）是 100%，16 维时内积约 99%：点积在 d_k = 4 时输给加性注意力，原因是双线性，不是宽度")
def test_inner_product_prefers_long_keys_over_self():
    rate = {}
    for d in (4, 16):
        y = rand(20_000, 16, d, seed=50 + d)  # 每个样本 16 个点，既是查询也是键
        s = attention_logits(y, y, "none")  # (20000, 16, 16)
        rate[d] = (s.argmax(-1) == torch.arange(16)).double().mean().item()
        nearest = s - 0.5 * y.pow(2).sum(-1).unsqueeze(-2)  # q·k − ½‖k‖²：与 −½‖q − k‖² 只差一个与 k 无关的项
        assert (nearest.argmax(-1) == torch.arange(16)).all()
    assert 0.5 < rate[4] < 0.62 and rate[16] > 0.98, rate
    assert_states(CH03 + "code.md", f"只有{100 * rate[4]:.0f}%挑中自己", f"16维时内积也有{100 * rate[16]:.0f}%")


@pytest.mark.claim("ch03-additive-mask-convention", paper="§3.2.1",
                   text="additive_attention 与 sdpa 共用掩码约定：遮住处权重恰为 0，其余每行和为 1；不带偏置时与论文公式 vᵀtanh(W_q q + W_k k) 逐元素相符")
def test_additive_attention_matches_formula_and_mask_convention():
    q, k, v = rand(2, 4, 5), rand(2, 6, 3, seed=1), rand(2, 6, 2, seed=2)
    w_q, w_k, v_a = rand(5, 7, seed=3), rand(3, 7, seed=4), rand(7, seed=5)
    mask = torch.rand(4, 6, generator=gen(6)) < 0.6
    mask[:, 0] = True
    out, w = additive_attention(q, k, v, w_q, w_k, v_a, mask)
    ref_scores = torch.empty(2, 4, 6, dtype=F64)
    for b in range(2):
        for i in range(4):
            for j in range(6):
                ref_scores[b, i, j] = v_a @ torch.tanh(w_q.T @ q[b, i] + w_k.T @ k[b, j])
    ref_w = torch.softmax(ref_scores.masked_fill(~mask, float("-inf")), -1)
    assert (w - ref_w).abs().max().item() < 1e-12 and (out - ref_w @ v).abs().max().item() < 1e-12
    assert torch.equal(w[:, ~mask], torch.zeros_like(w[:, ~mask]))


@pytest.mark.claim("ch03-shared-qk-symmetric", paper="§3.2.2",
                   text="Q、K 共用一个投影 W 时分数矩阵 (XW)(XW)ᵀ 对称（float64 下差 < 1e-12）、对角线非负、半正定：|s_ij| ≤ √(s_ii·s_jj)；各用一个投影时明显不对称")
def test_shared_projection_makes_scores_symmetric():
    x = rand(3, 10, 16, seed=14)
    w, w_k = rand(16, 8, seed=15), rand(16, 8, seed=16)
    shared = attention_logits(x @ w, x @ w)
    assert (shared - shared.transpose(-1, -2)).abs().max().item() < 1e-12  # 只差浮点舍入
    diag = torch.diagonal(shared, dim1=-2, dim2=-1)  # (3, 10)
    assert (diag >= 0).all()
    # 格拉姆矩阵：|s_ij| ≤ √(s_ii s_jj)，半正定
    assert (shared.abs() <= (diag.unsqueeze(-1) * diag.unsqueeze(-2)).sqrt() + 1e-12).all()
    assert torch.linalg.eigvalsh(shared).min().item() > -1e-9
    separate = attention_logits(x @ w, x @ w_k)
    assert (separate - separate.transpose(-1, -2)).abs().max().item() > 0.5


# ---------------------------------------------------------------------------- 2026
@pytest.mark.claim("ch03-qk-norm", paper="§3.2.1",
                   text="QK-norm（不带增益的 RMSNorm）之后，无论输入放大多少倍，|q·k|/√d_k ≤ √d_k（柯西–施瓦茨）；带增益 γ_q、γ_k 时上界是 √d_k·max|γ_q|·max|γ_k|，随增益增长；不归一化时 logits 对输入是双线性的，放大 30 倍恰为 900 倍（恒等式）")
def test_qk_norm_bounds_logits():
    d_k = 64
    q, k = rand(4, 10, d_k, seed=17), rand(4, 10, d_k, seed=18)
    for scale in (1.0, 30.0, 1000.0):
        assert torch.allclose(qk_rmsnorm(scale * q).norm(dim=-1), torch.full((4, 10), math.sqrt(d_k), dtype=F64))
        s = attention_logits(qk_rmsnorm(scale * q), qk_rmsnorm(scale * k), "sqrt")
        assert s.abs().max().item() <= math.sqrt(d_k) + 1e-9
    # 界是紧的：k = q 时取到 √d_k
    tight = attention_logits(qk_rmsnorm(q), qk_rmsnorm(q), "sqrt").diagonal(dim1=-2, dim2=-1)
    assert torch.allclose(tight, torch.full_like(tight, math.sqrt(d_k)))
    # 可学习的增益：上界随增益变化，增益放大 10 倍，最大 logit 恰放大 100 倍
    gamma_q, gamma_k = 1 + 0.5 * rand(d_k, seed=22), 1 + 0.5 * rand(d_k, seed=23)
    with_gain = attention_logits(qk_rmsnorm(q) * gamma_q, qk_rmsnorm(k) * gamma_k, "sqrt")
    assert with_gain.abs().max().item() <= math.sqrt(d_k) * gamma_q.abs().max() * gamma_k.abs().max()
    grown = attention_logits(qk_rmsnorm(q) * 10 * gamma_q, qk_rmsnorm(k) * 10 * gamma_k, "sqrt")
    assert abs(grown.abs().max().item() / with_gain.abs().max().item() - 100) < 1e-9
    grow = attention_logits(30 * q, 30 * k).abs().max() / attention_logits(q, k).abs().max()
    assert abs(grow.item() - 900) < 1e-6  # 双线性：一个恒等式，不是对模型的测量


@pytest.mark.claim("ch03-softcap", paper="§3.2.1",
                   text="软截断 c·tanh(s/c) 的输出严格小于 c；|s| ≤ c/10 时与 s 的相对差 < 0.4%；s = 3c 处导数 < 0.01，截断本身也会饱和")
def test_soft_cap_bounds_and_saturates():
    cap = 50.0
    s = torch.linspace(-500, 500, 2001, dtype=F64, requires_grad=True)
    out = soft_cap(s, cap)
    assert out.abs().max().item() < cap
    small = s.detach().abs() <= cap / 10
    rel = (out.detach()[small] - s.detach()[small]).abs() / s.detach()[small].abs().clamp_min(1e-12)
    assert rel.max().item() < 0.004
    out.sum().backward()
    at_3c = s.grad[(s.detach() - 3 * cap).abs().argmin()].item()
    assert 0 < at_3c < 0.01


@pytest.mark.claim("ch03-sink", paper="§3.2.1",
                   text="加一个汇点 logit b 后，真实键上的权重之和恰为 1/(1 + e^{b − logsumexp(s)}) < 1；b 很大时趋于 0，b → −∞ 时回到普通 softmax")
def test_attention_sink_lets_rows_sum_below_one():
    s = rand(3, 5, 7, seed=19)
    for b in (-2.0, 0.0, 3.0):
        w = softmax_with_sink(s, b)
        expected = 1 / (1 + torch.exp(b - torch.logsumexp(s, dim=-1)))
        assert (w.sum(-1) - expected).abs().max().item() < 1e-12
        assert (w.sum(-1) < 1).all()
    assert softmax_with_sink(s, 50.0).sum(-1).max().item() < 1e-15
    assert (softmax_with_sink(s, -1e3) - stable_softmax(s)).abs().max().item() < 1e-12


@pytest.mark.claim("ch03-fp8-error", paper="§3.2.1",
                   text="按张量缩放后舍入到 fp8 e4m3，正规数的逐元素相对误差 ≤ 2⁻⁴；用 fp8 的 Q、K 算出的 logits 相对误差约为 bf16 的 10 倍以上，但仍低于 5%")
def test_fp8_quantisation_error():
    q, k = rand(8, 64, 64, seed=20), rand(8, 64, 64, seed=21)
    q8 = fp8_round_trip(q)
    scale = torch.finfo(torch.float8_e4m3fn).max / q.abs().amax()
    normal = (q * scale).abs() >= torch.finfo(torch.float8_e4m3fn).smallest_normal
    rel = ((q8 - q).abs() / q.abs())[normal]
    assert rel.max().item() <= 2**-4 + 1e-12
    ref = attention_logits(q, k)
    err8 = (attention_logits(q8, fp8_round_trip(k)) - ref).norm() / ref.norm()
    qb, kb = q.to(torch.bfloat16).to(F64), k.to(torch.bfloat16).to(F64)
    errb = (attention_logits(qb, kb) - ref).norm() / ref.norm()
    assert err8.item() > 10 * errb.item() and err8.item() < 0.05
