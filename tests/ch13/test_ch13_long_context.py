"""Chapter 13, 长上下文：稀疏、线性与混合注意力: the code in snippets/linear_attention.py,
snippets/sparse_attention.py and snippets/ring.py, and the claims the pages cite (CONVENTIONS.md, "Claims").
The committed probe results are checked in test_ch13_probes.py."""

from __future__ import annotations

import math

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from snippets.attention import MultiHeadAttention, scaled_dot_product_attention
from snippets.checks import values_unchecked
from snippets.linear_attention import (decay_linear_attention_parallel, decay_linear_attention_recurrent,
                                       delta_rule_chunked, delta_rule_recurrent, delta_rule_step,
                                       elu_feature_map, linear_attention_chunked, linear_attention_parallel,
                                       linear_attention_recurrent, normalized_linear_attention, semiseparable_mask)
from snippets.probes.long_context import attention_flops, decode_state_elems, linear_layer_flops
from snippets.ring import ring_attention
from snippets.transformer import PositionwiseFeedForward
from snippets.sparse_attention import (moba_attention, moba_mask, receptive_field, rolling_cache_decode,
                                       sliding_window_attention, sliding_window_mask)
from tests.support.pages import assert_states, chapter
from tests.support.sections import DOCS

F64 = torch.float64
CH13 = chapter("13")
INDEX = CH13 + "index.md"
DERIVATION = CH13 + "derivation.md"
CODE = CH13 + "code.md"
INTERVIEW = CH13 + "interview.md"
LINEAR = CH13 + "derivation-linear.md"


def qkv(n, d=8, d_v=6, batch=(2, 3), seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*batch, n, d, generator=g, dtype=F64), torch.randn(*batch, n, d, generator=g, dtype=F64),
            torch.randn(*batch, n, d_v, generator=g, dtype=F64))


def causal_full(q, k, v):
    n = q.shape[-2]
    return scaled_dot_product_attention(q, k, v, torch.ones(n, n, dtype=torch.bool, device=q.device).tril())[0]


# ---------- 预算 ----------

@pytest.mark.claim("ch13-budget", paper="§4 表 1; 第 01 章",
                   title="注意力何时比线性层贵",
                   text="注意力的两次矩阵乘 QKᵀ 与 PV 共 4n²d 次浮点运算（FlopCounterMode 在读者的 "
                        "scaled_dot_product_attention 上数得的正是它），线性层 24nd²：n = 6d 时相等，d = 512 时 n = 3072；"
                        "线性注意力 4nd² 与全注意力在 n = d 时相等；这里的 d 是模型宽度 d_model：h 个头、头宽 d_head 的注意力"
                        "数得 4n²·h·d_head = 4n²d_model（d_head = 128 代进去得 768，d_model = 4096 的交点是 24,576）；"
                        "因果时跳过上三角约省一半，交点 n ≈ 12d_model")
@pytest.mark.parametrize("n,d", [(16, 8), (40, 24), (96, 64)])
def test_budget(n, d):
    q, k, v = (torch.randn(1, n, d) for _ in range(3))
    with FlopCounterMode(display=False) as counter:
        scaled_dot_product_attention(q, k, v)
    assert counter.get_total_flops() == attention_flops(n, d, "full")
    d0 = 512
    n_cross = next(m for m in range(1, 10 ** 5) if attention_flops(m, d0, "full") >= linear_layer_flops(m, d0))
    assert n_cross == 6 * d0 == 3072
    assert attention_flops(d, d, "full") == attention_flops(d, d, "linear")
    # 一层的其余部分：读者的 MultiHeadAttention（四个投影 + 注意力）与 FFN（d_ff = 4d），数出来的减去注意力就是 24nd²
    with FlopCounterMode(display=False) as counter:
        MultiHeadAttention(d, num_heads=2)(q, k, v)
        PositionwiseFeedForward(d, 4 * d)(q)
    assert counter.get_total_flops() == linear_layer_flops(n, d) + attention_flops(n, d, "full")
    # 窗口 w ≥ n 时就是全注意力；w < n 时是它的 w/n
    assert attention_flops(n, d, "window", n + 5) == attention_flops(n, d, "full")
    assert attention_flops(n, d, "window", n // 4) * n == attention_flops(n, d, "full") * (n // 4)
    # 多头：h 个头、头宽 d/h 的注意力数出的 FLOPs 就是 attention_flops(n, d_model)
    h = 4 if d % 4 == 0 else 2
    qh, kh, vh = (x.view(1, n, h, d // h).transpose(1, 2) for x in (q, k, v))  # (1, h, n, d_head)
    with FlopCounterMode(display=False) as counter:
        scaled_dot_product_attention(qh, kh, vh)
    assert counter.get_total_flops() == h * attention_flops(n, d // h, "full") == attention_flops(n, d, "full")
    assert next(m for m in range(1, 10 ** 5) if attention_flops(m, 128, "full") >= linear_layer_flops(m, 128)) == 768
    assert next(m for m in range(1, 10 ** 6) if attention_flops(m, 4096, "full") >= linear_layer_flops(m, 4096)) == 24_576
    # 因果、跳过上三角：注意力约一半，交点 12·d_model
    assert next(m for m in range(1, 10 ** 5) if attention_flops(m, d0, "full") // 2 >= linear_layer_flops(m, d0)) == 12 * d0
    assert_states(DERIVATION, "n=6d", "3072", "d_{model}", "768", "24,576", "n\\approx12d_{model}")


# ---------- 滑动窗口 ----------

@pytest.mark.claim("ch13-window-equal", paper="Beltagy et al. 2020; Jiang et al. 2023",
                   title="分块的滑动窗口 = 带状掩码下的全注意力",
                   text="sliding_window_mask 恰是 0 ≤ i − j < w；sliding_window_attention 只算 O(n·w) 个分数，"
                        "与带状掩码下的全注意力在 float64 下相差 < 1e-10（w = 1 到 w > n）")
@pytest.mark.parametrize("n,w", [(19, 1), (19, 3), (33, 8), (20, 50)])
def test_window_equal(n, w, device):
    mask = sliding_window_mask(n, w)
    i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]
    assert torch.equal(mask, (i - j >= 0) & (i - j < w))
    q, k, v = (t.to(device) for t in qkv(n))
    ref = scaled_dot_product_attention(q, k, v, mask.to(device))[0]
    assert (sliding_window_attention(q, k, v, w) - ref).abs().max().item() < 1e-10


@pytest.mark.claim("ch13-receptive-field", paper="Child et al. 2019; Beltagy et al. 2020",
                   title="L 层窗口注意力的感受野 L·(w − 1) + 1",
                   text="把 L 层窗口为 w 的掩码（布尔矩阵）连乘，最后一个位置能到达的位置数恰为 L·(w − 1) + 1"
                        "（序列足够长时）；L = 4、w = 3 时是 9。这是能到达的上界：可达不等于可检索")
@pytest.mark.parametrize("layers,w", [(1, 3), (4, 3), (3, 5), (6, 2)])
def test_receptive_field(layers, w):
    n = 64
    m = sliding_window_mask(n, w).to(torch.int64)
    reach = torch.eye(n, dtype=torch.int64)
    for _ in range(layers):
        reach = ((m @ reach) > 0).to(torch.int64)
    assert int(reach[-1].sum()) == receptive_field(layers, w) == layers * (w - 1) + 1
    assert receptive_field(4, 3) == 9
    assert_states(DERIVATION, "N_L(w-1)+1", "是能到达的上界，不是能找回的保证：可达不等于可检索")
    assert_states(CH13 + "questions.md", "可达不等于可检索")
    for page in ("derivation.md", "questions.md"):     # the overread the pages used to make (review 13-9)
        assert "没有丢" not in (DOCS / CH13 / page).read_text(encoding="utf-8")


@pytest.mark.claim("ch13-rolling-cache", paper="Jiang et al. 2023 (Mistral 7B)",
                   title="滚动 KV 缓存 = 带状掩码",
                   text="只留最近 w 个词元的环形 KV 缓存逐词元解码，输出与 sliding_window_mask(n, w) 下的全注意力"
                        "在 float64 下相差 < 1e-10；缓存大小 w 与 n 无关")
@pytest.mark.parametrize("n,w", [(17, 1), (17, 4), (30, 7), (9, 20)])
def test_rolling_cache(n, w):
    q, k, v = qkv(n, seed=1)
    ref = scaled_dot_product_attention(q, k, v, sliding_window_mask(n, w))[0]
    assert (rolling_cache_decode(q, k, v, w) - ref).abs().max().item() < 1e-10
    assert decode_state_elems(10 ** 6, 64, "window", w) == 2 * w * 64


@pytest.mark.claim("ch13-sink-cache", paper="Xiao et al. 2023 (StreamingLLM)",
                   title="带注意力汇点的滚动缓存",
                   text="滚动缓存再留最早的 s 个词元（注意力汇点）时，输出与「带状掩码 ∪ 前 s 列」下的全注意力在 float64 下"
                        "相差 < 1e-10；去掉汇点后，窗口外的最早词元得到的权重为 0")
@pytest.mark.parametrize("n,w,s", [(17, 4, 1), (30, 7, 4), (12, 3, 12)])
def test_sink_cache(n, w, s):
    q, k, v = qkv(n, seed=2)
    mask = sliding_window_mask(n, w, sinks=s)
    i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]
    assert torch.equal(mask, ((i - j >= 0) & (i - j < w)) | ((j < s) & (j <= i)))
    ref, weights = scaled_dot_product_attention(q, k, v, mask)
    assert (rolling_cache_decode(q, k, v, w, sinks=s) - ref).abs().max().item() < 1e-10
    _, no_sink = scaled_dot_product_attention(q, k, v, sliding_window_mask(n, w))
    assert no_sink[..., -1, 0].abs().max().item() == 0.0 and weights[..., -1, 0].min().item() > 0


# ---------- MoBA ----------

@pytest.mark.claim("ch13-moba", paper="Lu et al. 2025 (MoBA, arXiv 2502.13189)",
                   title="MoBA：选中全部块 = 全注意力",
                   text="moba_attention 在 top_k ≥ 块数时与因果全注意力在 float64 下相差 < 1e-10；任何 top_k 下，"
                        "每个查询恰好看 min(top_k, 自己的块号 + 1) 块、总含自己的块、从不看未来")
@pytest.mark.parametrize("n,block", [(19, 1), (19, 4), (32, 8), (10, 16)])
def test_moba(n, block):
    q, k, v = qkv(n, seed=3)
    n_blocks = -(-n // block)
    assert (moba_attention(q, k, v, block, n_blocks) - causal_full(q, k, v)).abs().max().item() < 1e-10
    for top_k in (1, 2, 3):
        mask = moba_mask(q, k, block, top_k)
        assert not (mask & torch.ones(n, n, dtype=torch.bool).triu(1)).any()
        for t in range(n):
            seen = {int(j) // block for j in mask[0, 0, t].nonzero().flatten()}
            assert t // block in seen and len(seen) == min(top_k, t // block + 1)


# ---------- 线性注意力 ----------

@pytest.mark.claim("ch13-linear-forms", paper="Katharopoulos et al. 2020 (arXiv 2006.16236)",
                   title="线性注意力的三种形式相等",
                   text="linear_attention_parallel、linear_attention_recurrent 与 linear_attention_chunked（任何 chunk ≥ 1）"
                        "在 float64 下相差 < 1e-10，o_t = Σ_{s≤t} (q_t·k_s) v_s")
@pytest.mark.parametrize("chunk", [1, 3, 8, 17, 100])
def test_linear_forms(chunk, device):
    q, k, v = (t.to(device) for t in qkv(17, seed=4))
    par = linear_attention_parallel(q, k, v)
    direct = torch.stack([sum((q[..., t, :] * k[..., s, :]).sum(-1, keepdim=True) * v[..., s, :]
                              for s in range(t + 1)) for t in range(17)], dim=-2)
    assert (par - direct).abs().max().item() < 1e-10
    assert (linear_attention_recurrent(q, k, v) - par).abs().max().item() < 1e-10
    assert (linear_attention_chunked(q, k, v, chunk) - par).abs().max().item() < 1e-10


@pytest.mark.claim("ch13-linear-not-softmax", paper="Katharopoulos et al. 2020",
                   title="线性注意力是另一个模型",
                   text="带归一化、φ = elu + 1 的线性注意力等于逐项写出的 Σφ(q)ᵀφ(k)v / Σφ(q)ᵀφ(k)（< 1e-10），"
                        "但与同样 q、k、v 上的因果 softmax 注意力相差很大（相对误差 > 10%）：它不是 softmax 的近似")
def test_linear_not_softmax():
    q, k, v = qkv(24, seed=5)
    fq, fk = elu_feature_map(q), elu_feature_map(k)
    assert (fq > 0).all()
    w = (fq @ fk.transpose(-2, -1)).tril()
    direct = (w / w.sum(-1, keepdim=True)) @ v
    out = normalized_linear_attention(q, k, v)
    assert (out - direct).abs().max().item() < 1e-10
    soft = causal_full(q, k, v)
    assert ((out - soft).norm() / soft.norm()).item() > 0.1


@pytest.mark.claim("ch13-ssd", paper="Dao & Gu 2024 (Mamba-2, arXiv 2405.21060)",
                   title="带衰减的递推 = 半可分矩阵形式",
                   text="S_t = a_t S_{t−1} + v_t k_tᵀ 的递推与 (L ⊙ QKᵀ)V（L_ij = a_{j+1}⋯a_i）在 float64 下相差 < 1e-10；"
                        "L 的每个下三角子块秩为 1；a ≡ 1 时退回不带衰减的线性注意力")
def test_ssd():
    q, k, v = qkv(20, seed=6)
    a = 0.5 + 0.5 * torch.rand(2, 3, 20, generator=torch.Generator().manual_seed(0), dtype=F64)
    rec = decay_linear_attention_recurrent(q, k, v, a)
    assert (rec - decay_linear_attention_parallel(q, k, v, a)).abs().max().item() < 1e-10
    lmat = semiseparable_mask(a)[0, 0]
    assert abs(lmat[7, 3].item() - a[0, 0, 4:8].prod().item()) < 1e-12 and lmat[3, 7].item() == 0.0
    assert torch.linalg.matrix_rank(lmat[10:, :10]).item() == 1
    ones = torch.ones_like(a)
    assert (decay_linear_attention_recurrent(q, k, v, ones) - linear_attention_parallel(q, k, v)).abs().max() < 1e-10


@pytest.mark.claim("ch13-ssd-stable", paper="Dao & Gu 2024 (Mamba-2, arXiv 2405.21060)",
                   title="半可分矩阵按分段乘积算：零门精确、fp32 长序列稳定",
                   text="semiseparable_mask 沿每列直接连乘 a_{j+1}⋯a_i：门里有 0（硬重置）或负数时没有 NaN，"
                        "(L ⊙ QKᵀ)V 与递推在 float64 下相差 < 1e-10；n = 4096、门接近 1 且夹着 0.05 的 fp32 输入上，"
                        "L 中 ≥ 1e-3 的元素与 float64 的相对误差 < 1e-6，而 exp(c_i − c_j)（c 是 log a 的累积和）的写法 > 1e-5")
def test_ssd_mask_zero_gate_and_fp32():
    q, k, v = qkv(16, seed=11)
    g = torch.Generator().manual_seed(3)
    a = 0.5 + 0.5 * torch.rand(2, 3, 16, generator=g, dtype=F64)
    a[..., 5] = 0.0                                          # 硬重置
    a[1, :, 9] = -0.7                                        # 负的门（状态追踪用的负特征值）
    lmat = semiseparable_mask(a)
    assert not lmat.isnan().any()
    direct = torch.zeros(2, 3, 16, 16, dtype=F64)
    for i in range(16):
        for j in range(i + 1):
            direct[..., i, j] = a[..., j + 1:i + 1].prod(-1)
    assert (lmat - direct).abs().max().item() < 1e-12
    assert lmat[..., 7, 4].abs().max().item() == 0.0        # 跨过 a_5 = 0 的元素恰为 0
    rec = decay_linear_attention_recurrent(q, k, v, a)
    assert (decay_linear_attention_parallel(q, k, v, a) - rec).abs().max().item() < 1e-10
    # 长序列、fp32：门大多接近 1，夹着 64 个 0.05
    n = 4096
    gate = 1 - 1e-3 * torch.rand(n, generator=g, dtype=F64)
    gate[torch.randperm(n, generator=g)[:64]] = 0.05
    gate32 = gate.float()
    c = gate32.double().log().cumsum(-1)                      # float64 的参考：这里相减不会丢有效数字
    ref = (c[:, None] - c[None, :]).exp_().tril_()
    small = ref <= 1e-3

    def max_rel_error(lmat32):                                # 在 L ≥ 1e-3 的元素上的最大相对误差
        return lmat32.double().sub_(ref).div_(ref).abs_().masked_fill_(small, 0.0).max().item()

    assert max_rel_error(semiseparable_mask(gate32)) < 1e-6
    c32 = gate32.log().cumsum(-1)                             # 对照：fp32 里两个累积和相减
    assert max_rel_error((c32[:, None] - c32[None, :]).exp_().tril_()) > 1e-5
    assert_states(LINEAR, "n=4096", "< 1e-6", "> 1e-5")


# ---------- 增量规则 ----------

@pytest.mark.claim("ch13-delta-sgd", paper="Schlag et al. 2021; Yang et al. 2024 (DeltaNet, arXiv 2406.06484)",
                   title="增量规则 = 一步梯度下降",
                   text="delta_rule_step 的 S(I − βkkᵀ) + βvkᵀ 与 autograd 在 ½‖Sk − v‖² 上走一步步长 β 的梯度下降"
                        "在 float64 下相差 < 1e-12；β = 1、‖k‖ = 1 时更新后 S k = v")
def test_delta_sgd():
    g = torch.Generator().manual_seed(7)
    s = torch.randn(5, 6, 8, generator=g, dtype=F64)
    k = torch.nn.functional.normalize(torch.randn(5, 8, generator=g, dtype=F64), dim=-1)
    v = torch.randn(5, 6, generator=g, dtype=F64)
    beta = torch.rand(5, generator=g, dtype=F64)
    s_req = s.clone().requires_grad_(True)
    loss = 0.5 * ((s_req @ k[..., None]).squeeze(-1) - v).pow(2).sum()
    (grad,) = torch.autograd.grad(loss, s_req)
    explicit = s @ (torch.eye(8, dtype=F64) - beta[:, None, None] * k[:, :, None] * k[:, None, :]) \
        + beta[:, None, None] * v[:, :, None] * k[:, None, :]
    step = delta_rule_step(s, k, v, beta)
    assert (step - (s - beta[:, None, None] * grad)).abs().max().item() < 1e-12
    assert (step - explicit).abs().max().item() < 1e-12
    one = delta_rule_step(s, k, v, torch.ones(5, dtype=F64))
    assert ((one @ k[..., None]).squeeze(-1) - v).abs().max().item() < 1e-12


@pytest.mark.claim("ch13-delta-chunked", paper="Yang et al. 2024 (DeltaNet, arXiv 2406.06484)",
                   title="增量规则的分块形式 = 递推",
                   text="delta_rule_chunked（块内解单位下三角方程组，UT 变换）与 delta_rule_recurrent 在 float64 下"
                        "相差 < 1e-10，任何 chunk ≥ 1；β ≡ 0 时输出为 0")
@pytest.mark.parametrize("chunk", [1, 2, 5, 16, 40])
def test_delta_chunked(chunk):
    q, k, v = qkv(23, seed=8)
    k = torch.nn.functional.normalize(k, dim=-1)
    beta = torch.rand(2, 3, 23, generator=torch.Generator().manual_seed(1), dtype=F64)
    rec = delta_rule_recurrent(q, k, v, beta)
    assert (delta_rule_chunked(q, k, v, beta, chunk) - rec).abs().max().item() < 1e-10
    assert delta_rule_chunked(q, k, v, torch.zeros_like(beta), chunk).abs().max().item() == 0.0


@pytest.mark.claim("ch13-delta-stability", paper="Schlag et al. 2021; Yang et al. 2024 (DeltaNet, arXiv 2406.06484)",
                   title="增量规则的稳定条件：单位键，0 ≤ β ≤ 2",
                   text="I − βkkᵀ 的特征值是 1 与 1 − β‖k‖²：单位键、β = 2（边界）时 delta_rule_step 不放大状态"
                        "（‖S(I − 2kkᵀ)‖ = ‖S‖，每步 ‖S_t‖ ≤ ‖S_{t−1}‖ + β‖v_t‖）；不归一化的键（d_k = 16，‖k‖² ≈ 16）"
                        "在 β = 0.5 时同一递推 200 步后 |o| > 1e30，而 delta_rule_recurrent / delta_rule_chunked "
                        "对这样的键、对 β > 2 或 β < 0 抛出 ValueError")
def test_delta_stability():
    g = torch.Generator().manual_seed(12)
    d_k, d_v, n = 16, 6, 200
    keys = torch.nn.functional.normalize(torch.randn(n, d_k, generator=g, dtype=F64), dim=-1)
    vals = torch.randn(n, d_v, generator=g, dtype=F64)
    s = torch.randn(d_v, d_k, generator=g, dtype=F64)
    reflected = delta_rule_step(s, keys[0], torch.zeros(d_v, dtype=F64), torch.tensor(2.0, dtype=F64))
    assert abs(reflected.norm().item() - s.norm().item()) < 1e-12      # β = 2：Householder 反射
    betas = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0], dtype=F64)
    for t in range(n):
        beta = betas[t % 5]
        new = delta_rule_step(s, keys[t], vals[t], beta)
        assert new.norm().item() <= s.norm().item() + beta.item() * vals[t].norm().item() + 1e-12
        s = new
    # 不归一化的键：同一递推（这里逐步写出）发散，读者的函数拒绝它
    raw = torch.randn(1, n, d_k, generator=g, dtype=F64)
    q, v = torch.randn(1, n, d_k, generator=g, dtype=F64), torch.randn(1, n, d_v, generator=g, dtype=F64)
    state, peak = torch.zeros(d_v, d_k, dtype=F64), 0.0
    for t in range(n):
        state = state @ (torch.eye(d_k, dtype=F64) - 0.5 * torch.outer(raw[0, t], raw[0, t])) \
            + 0.5 * torch.outer(v[0, t], raw[0, t])
        peak = max(peak, (state @ q[0, t]).abs().max().item())
    assert peak > 1e30
    half = torch.full((1, n), 0.5, dtype=F64)
    for call in (lambda kk, b: delta_rule_recurrent(q, kk, v, b), lambda kk, b: delta_rule_chunked(q, kk, v, b, 16)):
        with pytest.raises(ValueError, match="^k must have unit L2 norm"):
            call(raw, half)
        unit = torch.nn.functional.normalize(raw, dim=-1)
        for bad in (2 + 1e-9, -1e-12):
            with pytest.raises(ValueError, match="^beta must lie in \\[0, 2\\]"):
                call(unit, torch.full((1, n), bad, dtype=F64))
        for edge in (0.0, 2.0):                              # 区间的两端是允许的
            assert call(unit, torch.full((1, n), edge, dtype=F64)).isfinite().all()
    assert_states(LINEAR, "1-0.5\\times16=-7", "10^{30}")


@pytest.mark.parametrize("dtype", [torch.float32, F64])
def test_delta_rule_key_and_beta_edges(dtype):
    """The stability check: F.normalize keys pass in fp32 and fp64; a key 1e-5 off unit norm, a zero key,
    NaN or out-of-range β fail, naming k / beta (k_t / beta_t in delta_rule_step)."""
    g = torch.Generator().manual_seed(13)
    q, k, v = (t.to(dtype) for t in qkv(12, d=64, seed=14))
    kn = torch.nn.functional.normalize(k, dim=-1)
    beta = torch.rand(2, 3, 12, generator=g, dtype=F64).to(dtype)
    assert delta_rule_recurrent(q, kn, v, beta).isfinite().all()
    assert delta_rule_chunked(q, kn, v, beta, 5).isfinite().all()
    off = kn.clone()
    off[1, 2, 7] *= 1 + 1e-5
    zero = kn.clone()
    zero[0, 0, 3] = 0.0
    nan_beta = beta.clone()
    nan_beta[0, 1, 2] = float("nan")
    for keys, b, match in ((off, beta, "^k must have unit L2 norm"), (zero, beta, "^k must have unit L2 norm"),
                           (kn, nan_beta, "^beta must lie in"), (kn, beta + 2, "^beta must lie in")):
        with pytest.raises(ValueError, match=match):
            delta_rule_recurrent(q, keys, v, b)
        with pytest.raises(ValueError, match=match):
            delta_rule_chunked(q, keys, v, b, 4)
    s = torch.zeros(2, 3, 6, 64, dtype=dtype)
    with pytest.raises(ValueError, match="^k_t must have unit L2 norm"):
        delta_rule_step(s, off[..., 7, :], v[..., 7, :], beta[..., 7])
    with pytest.raises(ValueError, match="^beta_t must lie in"):
        delta_rule_step(s, kn[..., 7, :], v[..., 7, :], beta[..., 7] - 1.5)
    with pytest.raises(ValueError, match="k_t must have shape"):
        delta_rule_step(s, kn[..., 7, :8], v[..., 7, :], beta[..., 7])


def test_linear_attention_on_meta_device():
    """Every tensor made inside follows the input's device; the delta rule's value checks are switched off for meta
    tensors by snippets.checks.values_unchecked() (meta tensors have no values), and stay on outside it."""
    q, k, v = (torch.empty(2, 3, 10, d, device="meta") for d in (8, 8, 5))
    a = torch.empty(2, 3, 10, device="meta")
    assert semiseparable_mask(a).device.type == "meta" and semiseparable_mask(a).shape == (2, 3, 10, 10)
    with values_unchecked():
        outs = (decay_linear_attention_parallel(q, k, v, a), decay_linear_attention_recurrent(q, k, v, a),
                delta_rule_recurrent(q, k, v, a), delta_rule_chunked(q, k, v, a, 4),
                linear_attention_chunked(q, k, v, 3))
    for out in outs:
        assert out.device.type == "meta" and out.shape == (2, 3, 10, 5)
    with pytest.raises(RuntimeError, match="meta"):  # the checks are back on: they try to read the values
        delta_rule_recurrent(q, k, v, a)


@pytest.mark.claim("ch13-capacity", paper="Schlag et al. 2021",
                   title="固定大小的状态存不下多于 d_k 对",
                   text="d_v × d_k 的线性状态 S：N ≤ d_k 个线性无关的键可以精确存下任意值（最小二乘残差 < 1e-10；"
                        "N = 4、d_k = 8 时反复用 delta_rule_step 扫 300 遍也收敛到精确）；N > d_k 时键线性相关，"
                        "随机的值无法全部精确读出（残差 > 0.1，增量规则同样读不对）")
@pytest.mark.parametrize("d_k,n_pairs", [(8, 4), (8, 8), (8, 9), (16, 32)])
def test_capacity(d_k, n_pairs):
    g = torch.Generator().manual_seed(9)
    keys = torch.randn(n_pairs, d_k, generator=g, dtype=F64)
    vals = torch.randn(n_pairs, 5, generator=g, dtype=F64)
    s = torch.linalg.lstsq(keys, vals).solution.T  # (d_v, d_k)
    residual = (keys @ s.T - vals).norm().item()
    s_delta = torch.zeros(5, d_k, dtype=F64)
    for _ in range(300):  # 在线回归：反复扫过全部 (k, v)，β = 1
        for i in range(n_pairs):
            s_delta = delta_rule_step(s_delta, keys[i] / keys[i].norm(), vals[i] / keys[i].norm(),
                                      torch.tensor(1.0, dtype=F64))
    delta_residual = (keys @ s_delta.T - vals).norm().item()
    if n_pairs <= d_k:
        assert residual < 1e-10
    else:
        assert residual > 0.1 and delta_residual > 0.1
    if 2 * n_pairs <= d_k:
        assert delta_residual < 1e-10


# ---------- 环形注意力 ----------

@pytest.mark.claim("ch13-ring", paper="Liu et al. 2023 (Ring Attention, arXiv 2310.01889)",
                   title="环形注意力 = 全注意力",
                   text="ring_attention 把序列切成 P 段、K/V 沿环传 P − 1 次、每步用第 01 章的 online_softmax_update 合并，"
                        "与全注意力（因果与非因果）在 float64 下相差 < 1e-10，P = 1 到 P = n")
@pytest.mark.parametrize("n_devices", [1, 2, 3, 7, 19])
@pytest.mark.parametrize("causal", [False, True])
def test_ring(n_devices, causal, device):
    q, k, v = (t.to(device) for t in qkv(19, seed=10))
    ref = causal_full(q, k, v) if causal else scaled_dot_product_attention(q, k, v)[0]
    assert (ring_attention(q, k, v, n_devices, causal=causal) - ref).abs().max().item() < 1e-10


# ---------- 混合模型 ----------

@pytest.mark.claim("ch13-hybrid-cache", paper="Kimi Team 2025 (Kimi Linear, arXiv 2510.26692)",
                   title="3:1 混合模型的缓存",
                   text="每 4 层里 3 层换成 d×d 状态的线性层、1 层保留全注意力，n = 10⁶、d = 128 时缓存是全注意力模型的"
                        "25.0%（状态只占 0.02%）：省下约 75%，而不是 100%；7:1 时是 12.5%")
def test_hybrid_cache():
    n, d = 10 ** 6, 128
    full = 4 * decode_state_elems(n, d, "full")
    hybrid = decode_state_elems(n, d, "full") + 3 * decode_state_elems(n, d, "linear")
    assert f"{100 * hybrid / full:.1f}%" == "25.0%"
    assert 3 * decode_state_elems(n, d, "linear") / full < 2e-4
    seven = (decode_state_elems(n, d, "full") + 7 * decode_state_elems(n, d, "linear")) / (8 * decode_state_elems(n, d, "full"))
    assert f"{100 * seven:.1f}%" == "12.5%"
    assert_states(INTERVIEW, "25.0%", "12.5%")


# ---------- 坏输入 ----------

@pytest.mark.parametrize("call,match", [
    (lambda q, k, v: linear_attention_chunked(q, k, v, 0), "chunk"),
    (lambda q, k, v: linear_attention_parallel(q, k[..., :4], v), "k"),
    (lambda q, k, v: linear_attention_recurrent(q, k, v[..., :5, :]), "v"),
    (lambda q, k, v: delta_rule_recurrent(q, k, v, torch.ones(2, 3, 4, dtype=F64)), "beta"),
    (lambda q, k, v: delta_rule_chunked(q, k, v, torch.ones(2, 3, 9, dtype=F64), -1), "chunk"),
    (lambda q, k, v: sliding_window_attention(q, k, v, 0), "window"),
    (lambda q, k, v: moba_attention(q, k, v, 4, 0), "top_k"),
    (lambda q, k, v: ring_attention(q, k, v, 10), "n_devices"),
])
def test_bad_input(call, match):
    q, k, v = qkv(9)
    with pytest.raises(ValueError, match=match):
        call(q, k, v)
