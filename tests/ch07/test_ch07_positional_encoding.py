"""Chapter 07, 位置编码：从正弦到 RoPE: the code in snippets/positional.py and the claims the pages cite
(CONVENTIONS.md, "Claims"). The experiment's claims are in test_ch07_experiments.py."""

from __future__ import annotations

import math

import pytest
import torch

from snippets.attention import KVCache, MultiHeadAttention, scaled_dot_product_attention
from snippets.positional import (PositionalSelfAttention, alibi_bias, alibi_slopes, apply_rope, apply_rope_half,
                                 interleaved_to_half, pe_offset_matrix, rope_frequencies, rotate_half,
                                 scaled_rope_frequencies, sinusoidal_positional_encoding, yarn_mscale)
from snippets.positional import SCALING_ARGS
from tests.support.pages import assert_states, chapter

F64 = torch.float64
CH07 = chapter("07")
DERIVATION = CH07 + "derivation.md"
ROPE_PAGE = CH07 + "derivation-rope.md"


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# ---------- the sinusoid ----------

def test_sinusoid_matches_the_paper_formula_and_its_new_home():
    import snippets.transformer as transformer
    n, d = 50, 16
    pe = sinusoidal_positional_encoding(n, d, dtype=F64)
    for pos in (0, 7, 49):
        for i in range(d // 2):
            angle = pos / 10000 ** (2 * i / d)
            assert pe[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-12)
            assert pe[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-12)
    # transformer.py's PositionalEncoding uses this very function (moved, not copied)
    assert transformer.sinusoidal_positional_encoding is sinusoidal_positional_encoding
    assert torch.equal(transformer.PositionalEncoding(d, n, 0.0).pe, sinusoidal_positional_encoding(n, d))


@pytest.mark.claim("ch07-wavelengths", paper="§3.5",
                   title="波长的等比数列：从 2π 到（不到）10000·2π",
                   text="正弦编码第 i 对的波长 λ_i = 2π·10000^(2i/d) 是公比 10000^(2/d) 的等比数列，最短 2π；"
                        "最长的一对是 2π·10000^((d−2)/d)，d = 512 时约 60611（= 2π·9647），10000·2π 只是上界")
def test_wavelengths_form_a_geometric_progression():
    d = 512
    lam = 2 * math.pi / rope_frequencies(d, 10000.0, F64)                 # (256,)
    ratio = lam[1:] / lam[:-1]
    assert torch.allclose(ratio, torch.full_like(ratio, 10000 ** (2 / d)), rtol=1e-12)
    assert lam[0].item() == pytest.approx(2 * math.pi, rel=1e-12)
    assert lam[-1].item() == pytest.approx(2 * math.pi * 10000 ** (510 / 512), rel=1e-12)
    assert lam[-1].item() < 2 * math.pi * 10000
    assert round(lam[-1].item()) == 60611 and round(lam[-1].item() / (2 * math.pi)) == 9647
    # the encoding really has these periods: shifting pos by one wavelength of pair i gives pair i back
    pe = sinusoidal_positional_encoding(2000, 16, dtype=F64)
    period = 2 * math.pi / rope_frequencies(16, dtype=F64)[0].item()    # 2π for i = 0
    assert period == pytest.approx(2 * math.pi)
    assert_states(DERIVATION, "60611", "9647")


@pytest.mark.claim("ch07-pe-dot", paper="§3.5",
                   title="PE·PE 只依赖偏移，且关于偏移对称",
                   text="PE_p·PE_{p+k} = Σ_i cos(ω_i k)，与 p 无关，且 k 与 −k 相同：单看内积分不出前后")
def test_pe_dot_product_depends_only_on_the_offset():
    d, n = 64, 400
    pe = sinusoidal_positional_encoding(n, d, dtype=F64)
    omega = rope_frequencies(d, dtype=F64)
    for k in (1, 5, 37, 150):
        dots = (pe[: n - k] * pe[k:]).sum(-1)                             # PE_p·PE_{p+k}，所有 p
        closed = torch.cos(omega * k).sum()
        assert (dots - closed).abs().max().item() < 1e-10
        back = (pe[k:] * pe[: n - k]).sum(-1)                             # 偏移 −k：同一批内积
        assert (back - dots).abs().max().item() == 0.0
    assert not torch.allclose(torch.cos(omega * 1).sum(), torch.cos(omega * 2).sum())


@pytest.mark.claim("ch07-projection", paper="§3.5",
                   title="经过 W_Q、W_K 之后还只依赖偏移吗",
                   text="(PE_p W_Q)·(PE_{p+k} W_K) 对随机的 W_Q、W_K 依赖 p；W_Q W_Kᵀ 与每个 M_k 可交换"
                        "（每个 2×2 块形如 aI + bJ）时只依赖 k——这是充分条件")
def test_projection_keeps_or_breaks_the_offset_dependence():
    d, n, k = 16, 300, 3
    pe = sinusoidal_positional_encoding(n, d, dtype=F64)
    wq, wk = torch.randn(d, d, generator=gen(1), dtype=F64), torch.randn(d, d, generator=gen(2), dtype=F64)
    scores = ((pe[: n - k] @ wq) * (pe[k:] @ wk)).sum(-1)                 # 每个 p 的分数，偏移固定为 k
    assert scores.std().item() > 0.1                                     # 随 p 变化
    a, b = torch.randn(d // 2, generator=gen(3), dtype=F64), torch.randn(d // 2, generator=gen(4), dtype=F64)
    commuting = torch.zeros(d, d, dtype=F64)                             # 块 [[a, b], [−b, a]]
    idx = torch.arange(0, d, 2)
    commuting[idx, idx], commuting[idx + 1, idx + 1] = a, a
    commuting[idx, idx + 1], commuting[idx + 1, idx] = b, -b
    for t in (1, 7):
        m = pe_offset_matrix(t, d)
        assert torch.allclose(m @ commuting, commuting @ m, atol=1e-12)
    scores = ((pe[: n - k] @ commuting) * pe[k:]).sum(-1)
    assert scores.std().item() < 1e-10


@pytest.mark.claim("ch07-sinusoid-rotation", paper="§3.5; RoFormer",
                   title="正弦编码就是一个固定向量被转过的角度",
                   text="PE_pos = R_{−pos}·p_0，p_0 = (0, 1, 0, 1, …)：apply_rope 把 p_0 转过 −pos·θ_i，逐元素等于正弦编码")
def test_sinusoid_is_a_rotated_constant_vector():
    n, d = 100, 32
    p0 = torch.zeros(n, d, dtype=F64)
    p0[:, 1::2] = 1.0
    rotated = apply_rope(p0, positions=-torch.arange(n))
    assert (rotated - sinusoidal_positional_encoding(n, d, dtype=F64)).abs().max().item() < 1e-12


# ---------- why position at all ----------

@pytest.mark.claim("ch07-causal-breaks-equivariance", paper="§3.5 (why positional encodings); §3.2.3",
                   title="因果掩码打破置换等变",
                   text="没有位置编码但有因果掩码时，把输入打乱后输出不再是原输出的同一个重排")
def test_causal_mask_breaks_permutation_equivariance():
    torch.manual_seed(0)
    n, d = 10, 16
    mha = MultiHeadAttention(d, 4).double()
    mask = torch.ones(n, n, dtype=torch.bool).tril()
    x = torch.randn(1, n, d, generator=gen(1), dtype=F64)
    perm = torch.randperm(n, generator=gen(2))
    out, _ = mha(x, x, x, mask=mask)
    out_p, _ = mha(x[:, perm], x[:, perm], x[:, perm], mask=mask)
    assert (out_p - out[:, perm]).abs().max().item() > 1e-3


@pytest.mark.claim("ch07-nope-position", paper="NoPE (Kazemnejad et al. 2023)",
                   title="没有位置编码的因果模型怎样知道位置",
                   text="有因果掩码、无位置编码时，一个均匀注意力的头（q = 0）在 [BOS, c, c, …] 上输出 "
                        "(e_BOS + i·c)/(i + 1)：BOS 分量是 1/(i + 1)，由它可以精确读出绝对位置 i")
def test_causal_uniform_head_recovers_absolute_position():
    n, d = 12, 4
    bos, c = torch.tensor([1.0, 0, 0, 0], dtype=F64), torch.tensor([0, 1.0, 0, 0], dtype=F64)
    v = torch.stack([bos] + [c] * (n - 1))                               # (n, d)
    q, k = torch.zeros(n, d, dtype=F64), v                               # q = 0：每个可见位置权重相同
    out, _ = scaled_dot_product_attention(q, k, v, torch.ones(n, n, dtype=torch.bool).tril())
    i = torch.arange(n, dtype=F64)
    assert torch.allclose(out[:, 0], 1 / (i + 1), atol=1e-15)
    recovered = (1 / out[:, 0] - 1).round().long()
    assert torch.equal(recovered, torch.arange(n))
    unmasked, _ = scaled_dot_product_attention(q, k, v)                  # 无掩码：每个位置输出相同
    assert (unmasked - unmasked[0]).abs().max().item() == 0.0


# ---------- RoPE ----------

def test_apply_rope_bad_input():
    with pytest.raises(ValueError, match=r"x \(2, 5, 7\)"):
        apply_rope(torch.randn(2, 5, 7))
    with pytest.raises(ValueError, match=r"positions .*\(4,\).*x \(2, 5, 8\)"):
        apply_rope(torch.randn(2, 5, 8), positions=torch.arange(4))
    with pytest.raises(ValueError, match=r"x must have shape \(\.\.\., n, d\)"):
        apply_rope(torch.randn(8))
    with pytest.raises(TypeError):
        apply_rope(torch.arange(8).reshape(2, 4))
    with pytest.raises(ValueError, match="d_model=7"):
        sinusoidal_positional_encoding(10, 7)
    with pytest.raises(ValueError, match="n_heads"):
        alibi_slopes(0)
    with pytest.raises(ValueError, match="method"):
        scaled_rope_frequencies(8, 10000.0, "linear", 2.0)


@pytest.mark.claim("ch07-rope-relative", paper="RoFormer (Su et al. 2021)",
                   title="RoPE 的分数只通过 n − m 依赖位置",
                   text="⟨R_m q, R_n k⟩ = qᵀ R_{n−m} k：把两个位置同时平移 t，分数不变（逐元素到 1e-12）")
def test_rope_score_depends_only_on_the_offset():
    d = 64
    q, k = torch.randn(d, generator=gen(1), dtype=F64), torch.randn(d, generator=gen(2), dtype=F64)

    def score(m, n):
        rq = apply_rope(q[None], positions=torch.tensor([m]))[0]
        rk = apply_rope(k[None], positions=torch.tensor([n]))[0]
        return (rq @ rk).item()

    for m, n in ((0, 5), (3, 100), (40, 7)):
        base = score(m, n)
        for t in (1, 17, 1000):
            assert score(m + t, n + t) == pytest.approx(base, abs=1e-12)
        direct = (q @ apply_rope(k[None], positions=torch.tensor([n - m]))[0]).item()   # qᵀ R_{n−m} k
        assert direct == pytest.approx(base, abs=1e-12)
    assert abs(score(0, 5) - score(0, 6)) > 1e-3


@pytest.mark.claim("ch07-rope-norm", paper="RoFormer (Su et al. 2021)",
                   text="apply_rope 保持每个向量的范数：每一对维度只是被转了一个角度")
def test_rope_preserves_norms(device):
    x = torch.randn(3, 2, 50, 32, generator=gen(5), dtype=F64).to(device)
    y = apply_rope(x, positions=torch.arange(50, device=device) * 37)
    assert (y.norm(dim=-1) - x.norm(dim=-1)).abs().max().item() < 1e-12
    pair = y.unflatten(-1, (16, 2)).norm(dim=-1) - x.unflatten(-1, (16, 2)).norm(dim=-1)
    assert pair.abs().max().item() < 1e-12
    assert (y - x).abs().max().item() > 0.1


@pytest.mark.claim("ch07-rope-half", paper="RoFormer; GPT-NeoX / LLaMA (Hugging Face) rotate_half",
                   title="交错配对与半分配对只差一个固定的维度置换",
                   text="apply_rope_half(x[..., P]) = apply_rope(x)[..., P]，P = [0, 2, 4, …, 1, 3, 5, …]；"
                        "不做置换时，同一个 x 两种写法的结果不同")
def test_interleaved_and_half_split_agree_up_to_a_permutation():
    d, n = 16, 30
    x = torch.randn(2, n, d, generator=gen(6), dtype=F64)
    perm = interleaved_to_half(d)
    assert perm.tolist() == [0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15]
    assert (apply_rope_half(x[..., perm]) - apply_rope(x)[..., perm]).abs().max().item() < 1e-12
    assert (apply_rope_half(x) - apply_rope(x)).abs().max().item() > 0.1
    assert torch.equal(rotate_half(torch.arange(4.0)), torch.tensor([-2.0, -3.0, 0.0, 1.0]))
    # 权重也一样：q = x W_q；把 W_q 的列按 P 重排，半分写法的分数就与交错写法相同
    w_q, w_k = torch.randn(d, d, generator=gen(7), dtype=F64), torch.randn(d, d, generator=gen(8), dtype=F64)
    s_inter = apply_rope(x @ w_q) @ apply_rope(x @ w_k).transpose(-2, -1)
    s_half = apply_rope_half(x @ w_q[:, perm]) @ apply_rope_half(x @ w_k[:, perm]).transpose(-2, -1)
    assert (s_inter - s_half).abs().max().item() < 1e-10


@pytest.mark.claim("ch07-rope-commutant", paper="RoFormer; review of chapter 02",
                   title="什么样的 W_Q W_Kᵀ 让分数只依赖偏移",
                   text="各对频率互不相同时，与所有 R_t 可交换的矩阵恰好是每个 2×2 块形如 aI + bJ 的块对角矩阵"
                        "（维数 d）；这时 R_mᵀ A R_n 只依赖 n − m，对随机的 A 则不然")
def test_matrices_commuting_with_every_rotation():
    d = 8
    theta = rope_frequencies(d, dtype=F64)
    assert len(set(theta.tolist())) == d // 2                            # 频率互不相同

    def rot(t):
        return apply_rope(torch.eye(d, dtype=F64), positions=torch.full((d,), t)).T.contiguous()  # 第 j 列 R_t e_j

    # A ↦ R_t A − A R_t 对几个 t 叠在一起的线性映射：零空间就是交换子
    rows = [torch.kron(rot(t), torch.eye(d, dtype=F64)) - torch.kron(torch.eye(d, dtype=F64), rot(t).T.contiguous())
            for t in (1, 2, 5)]
    sv = torch.linalg.svdvals(torch.cat(rows))
    null_dim = int((sv < 1e-9).sum())
    assert null_dim == d                                                  # 每块 2 个自由度（a、b），共 d/2 块
    a = torch.randn(d, d, generator=gen(9), dtype=F64)
    s1 = rot(3).T @ a @ rot(8)
    s2 = rot(13).T @ a @ rot(18)
    assert (s1 - s2).abs().max().item() > 1e-3
    for t in (1, 2, 5):
        assert torch.allclose(rot(t).T @ rot(t), torch.eye(d, dtype=F64), atol=1e-12)


@pytest.mark.claim("ch07-rope-decay", paper="RoFormer §3.4.3 (long-term decay)",
                   title="RoPE 的远程衰减",
                   text="d = 128、base = 10000，q = k = 全 1 时分数 qᵀR_k k = 2Σcos(kθ_i)：偏移 0–255 的平均 |分数| "
                        "约 56，3840–4095 约 6.5；衰减不单调，中间有回升")
def test_rope_long_term_decay():
    d = 128
    theta = rope_frequencies(d, dtype=F64)
    k = torch.arange(4096, dtype=F64)
    ones = torch.ones(d, dtype=F64)
    direct = apply_rope(ones.expand(4096, d), positions=-torch.arange(4096)) @ ones   # ⟨R_0 q, R_k k⟩ 的一种写法
    score = 2 * torch.cos(k[:, None] * theta[None]).sum(-1)
    assert (direct - score).abs().max().item() < 1e-9
    windows = score.abs().reshape(16, 256).mean(-1)
    assert round(windows[0].item()) == 56 and round(windows[-1].item(), 1) == 6.5
    assert windows[0] > 5 * windows[-1]
    assert bool((windows[:8].diff() < 0).all())
    assert bool((windows.diff() > 0).any())                               # 不单调
    assert_states(ROPE_PAGE, "约56", "约6.5")


@pytest.mark.claim("ch07-rope-decay-correlated", paper="RoFormer §3.4.3; Barbero et al. 2024",
                   title="远程衰减说的是相关的 q、k",
                   text="RoPE 的旋转 R_k 的迹是 Σ2cos(kθ_i)：q = k ~ N(0, I) 时期望分数 E[qᵀR_k q] 正是远程衰减那条曲线；"
                        "q、k 独立、零均值时任何偏移上的期望分数都是 0")
def test_rope_decay_describes_correlated_queries_and_keys():
    d, offsets = 16, torch.tensor([0, 1, 5, 37, 300])
    theta = rope_frequencies(d, dtype=F64)
    eye = torch.eye(d, dtype=F64)
    for k in offsets.tolist():
        # R_k 的第 j 列 = 把第 j 个基向量转过 k 个位置；E[qᵀ R_k q] = tr(R_k)（q ~ N(0, I)）
        rotation = apply_rope(eye, positions=torch.full((d,), k)).T     # (d, d)
        assert torch.trace(rotation).item() == pytest.approx(2 * torch.cos(k * theta).sum().item(), abs=1e-12)
    # 独立零均值时 E[qᵀ R_k k] = E[q]ᵀ R_k E[k] = 0，靠的是 R_k 作用是线性的：对称的样本集（每个 k 与 −k 成对）
    # 上平均分数恰为 0；apply_rope 若带上与输入无关的项（不再是旋转），这里就不为 0
    g = torch.Generator().manual_seed(0)
    q = torch.randn(64, d, generator=g, dtype=F64)
    keys = torch.randn(64, d, generator=g, dtype=F64)
    for k in offsets.tolist():
        rotated = apply_rope(torch.cat([keys, -keys]), positions=torch.full((128,), k))
        assert (q @ rotated.T).mean().abs().item() < 1e-12
    assert_states(ROPE_PAGE, "trR_k=", "谈不上衰减")


@pytest.mark.claim("ch07-rope-base", paper="Llama 3 (rope_theta = 500000)",
                   title="底数 10000 与 500000",
                   text="d = 128 时最长波长 2π·b^(126/128)：b = 10000 约 5.44 万，b = 500000 约 256 万")
def test_rope_base_sets_the_longest_wavelength():
    d = 128
    for b, expected in ((10000.0, 54410), (500000.0, 2559196)):
        lam = 2 * math.pi / rope_frequencies(d, b, F64)
        assert round(lam.max().item()) == expected
        assert lam.min().item() == pytest.approx(2 * math.pi)
    assert_states(ROPE_PAGE, "5.44万", "256万")


# ---------- ALiBi ----------

def official_get_slopes(n):
    """ALiBi 官方代码的 get_slopes，照它的写法独立重写（测试用的参照）。"""
    def power_of_2(n):
        start = 2 ** (-2 ** -(math.log2(n) - 3))
        return [start * start ** i for i in range(n)]
    if math.log2(n).is_integer():
        return power_of_2(n)
    closest = 2 ** math.floor(math.log2(n))
    return power_of_2(closest) + official_get_slopes(2 * closest)[0::2][: n - closest]


@pytest.mark.claim("ch07-alibi-slopes", paper="ALiBi (Press et al. 2022)",
                   title="ALiBi 的斜率",
                   text="8 个头的斜率是 1/2, 1/4, …, 1/256；12 个头是 2^−1…2^−8 再接 2^−0.5, 2^−1.5, 2^−2.5, 2^−3.5；"
                        "1 到 64 个头都与官方代码的 get_slopes 一致")
def test_alibi_slopes():
    assert alibi_slopes(8).tolist() == [1 / 2 ** h for h in range(1, 9)]
    assert torch.allclose(alibi_slopes(12).log2(),
                          torch.tensor([-1.0, -2, -3, -4, -5, -6, -7, -8, -0.5, -1.5, -2.5, -3.5], dtype=F64))
    for n in range(1, 65):
        assert torch.allclose(alibi_slopes(n), torch.tensor(official_get_slopes(n), dtype=F64), rtol=1e-14)
    assert torch.allclose(alibi_slopes(16).log2(), -torch.arange(1, 17, dtype=F64) / 2)


@pytest.mark.claim("ch07-alibi-bias", paper="ALiBi (Press et al. 2022)",
                   text="alibi_bias(h, n)[h, i, j] = −m_h·(i − j)（j ≤ i），对角线为 0，上三角留给因果掩码")
def test_alibi_bias_entries():
    h, n = 4, 7
    bias = alibi_bias(h, n)
    assert bias.shape == (h, n, n)
    m = alibi_slopes(h)
    for head in range(h):
        for i in range(n):
            for j in range(n):
                expected = -m[head].item() * (i - j) if j <= i else 0.0
                assert bias[head, i, j].item() == pytest.approx(expected, abs=1e-15)
    # 加同一个常数不改变 softmax：每一行 −m·i 与 j 无关，偏置的效果只取决于 j（即相对距离）
    row = torch.randn(n, generator=gen(1), dtype=F64)
    assert torch.allclose(torch.softmax((row + bias[0, 5])[:6], -1), torch.softmax(row[:6] + m[0] * torch.arange(6), -1))


@pytest.mark.claim("ch07-alibi-values", paper="ALiBi (Press et al. 2022)",
                   title="ALiBi 的 V 里有没有位置信息：对照是只有因果掩码",
                   text="[BOS, c, c, …] 上、q = k = 0：只有因果掩码、不加偏置时，第 i 行的权重是均匀的 1/(i + 1)，"
                        "位置 1 … n−1 的输入相同、输出已经两两不同；加上 ALiBi，权重变成正比于 exp(−m_h(i − j))，"
                        "输出仍两两不同；掩码与偏置都不加时输出全都相同。把位置带进下一层 V 的是因果掩码，ALiBi 改的是权重的形状")
def test_alibi_puts_position_into_the_next_layers_values():
    torch.manual_seed(0)
    d, n, h = 16, 10, 4
    attn = PositionalSelfAttention(d, h, position="alibi").double()
    with torch.no_grad():                                                # q = k = 0：分数只剩 ALiBi 偏置
        for lin in (attn.w_q, attn.w_k):
            lin.weight.zero_()
            lin.bias.zero_()
    x = torch.randn(1, 1, d, dtype=F64, generator=gen(2)).expand(1, n, d).clone()
    x[0, 0] = torch.randn(d, dtype=F64, generator=gen(3))                 # BOS 与其余的 c 不同
    i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]

    def min_gap(out):                                                    # 位置 1 … n−1 两两之间输出的最小距离
        return ((out[0, 1:, None] - out[0, None, 1:]).norm(dim=-1) + torch.eye(n - 1, dtype=F64)).min().item()

    out, w = attn(x, x, x)                                               # ALiBi + 因果掩码
    for head, m in enumerate(alibi_slopes(h)):
        expected = torch.exp(-m * (i - j)).masked_fill(j > i, 0.0)
        assert torch.allclose(w[0, head], expected / expected.sum(-1, keepdim=True), atol=1e-12)
    assert min_gap(out) > 1e-6                                           # 输入相同，输出两两不同
    causal = PositionalSelfAttention(d, h, position="none").double()     # 对照：同样的权重、同样的掩码，不加偏置
    causal.load_state_dict(attn.state_dict())
    out_causal, w_causal = causal(x, x, x)
    uniform = (j <= i).to(F64) / (i + 1)                                 # 第 i 行：均匀的 1/(i + 1)
    assert torch.allclose(w_causal[0], uniform.expand(h, n, n), atol=1e-12)
    assert min_gap(out_causal) > 1e-6                                    # 只有掩码，输出也两两不同
    assert (w - w_causal).abs().amax(dim=(-2, -1)).min().item() > 1e-3   # ALiBi 改的是每个头的权重形状
    plain = MultiHeadAttention(d, h).double()
    plain.load_state_dict(attn.state_dict())
    out2, _ = plain(x, x, x)                                             # 无偏置、无掩码
    assert (out2[0, 1:] - out2[0, 1]).abs().max().item() < 1e-12
    assert_states(chapter("07") + "derivation-rope.md", "只有因果掩码、不加偏置时，第i行的权重是均匀的1/(i+1)",
                  "输出就已经两两不同", "把位置带进下一层V的首先是因果掩码")


def test_positional_self_attention_matches_the_readers_attention():
    """position="none" 的 PositionalSelfAttention 等于读者的 MultiHeadAttention 加因果掩码。"""
    torch.manual_seed(0)
    d, n = 16, 9
    attn = PositionalSelfAttention(d, 4).double()
    ref = MultiHeadAttention(d, 4).double()
    ref.load_state_dict(attn.state_dict())
    x = torch.randn(2, n, d, generator=gen(4), dtype=F64)
    out, w = attn(x, x, x)
    out_ref, w_ref = ref(x, x, x, mask=torch.ones(n, n, dtype=torch.bool).tril())
    assert (out - out_ref).abs().max().item() < 1e-12 and (w - w_ref).abs().max().item() < 1e-12
    rope = PositionalSelfAttention(d, 4, position="rope").double()
    rope.load_state_dict(attn.state_dict())
    out_r, _ = rope(x, x, x)
    assert (out_r[:, 0] - out[:, 0]).abs().max().item() < 1e-12          # 第 0 个位置只看自己，转 0 角
    with pytest.raises(ValueError, match="position"):
        PositionalSelfAttention(d, 4, position="learned")


# ---------- context extension ----------

@pytest.mark.claim("ch07-context-extension", paper="PI (Chen et al. 2023); NTK-aware; YaRN (Peng et al. 2023)",
                   title="PI、NTK-aware 与 YaRN 对频率做了什么",
                   text="s = 4、d = 128、L = 4096：PI 把每个 θ_i 除以 4；NTK-aware 把底数换成 10000·4^(128/126) ≈ 40890，"
                        "最高频不变、最低频恰好除以 4；YaRN 让转过 32 圈以上的维度不变、不到 1 圈的除以 4，"
                        "系数 0.1·ln 4 + 1 ≈ 1.1386 乘在 cos、sin 上，分数因此乘 ≈ 1.2965")
def test_context_extension_frequencies():
    d, s, L = 128, 4.0, 4096
    theta = rope_frequencies(d, dtype=F64)
    pi = scaled_rope_frequencies(d, 10000.0, "pi", s)
    assert torch.allclose(pi, theta / s, rtol=1e-15)
    ntk = scaled_rope_frequencies(d, 10000.0, "ntk", s)
    assert round(10000 * s ** (d / (d - 2))) == 40890
    assert ntk[0].item() == pytest.approx(theta[0].item()) and ntk[-1].item() == pytest.approx(theta[-1].item() / s)
    assert bool(((ntk / theta)[1:-1] > 1 / s).all()) and bool(((ntk / theta)[1:] < 1).all())
    yarn = scaled_rope_frequencies(d, 10000.0, "yarn", s, original_len=L)
    rotations = L * theta / (2 * math.pi)
    assert torch.equal(yarn[rotations > 32], theta[rotations > 32])
    assert torch.allclose(yarn[rotations < 1], theta[rotations < 1] / s, rtol=1e-15)
    ramp = (rotations >= 1) & (rotations <= 32)
    assert bool(((yarn[ramp] / theta[ramp] >= 1 / s - 1e-15) & (yarn[ramp] / theta[ramp] <= 1 + 1e-15)).all())
    assert round(yarn_mscale(s), 4) == 1.1386 and round(yarn_mscale(s) ** 2, 4) == 1.2965 and yarn_mscale(1.0) == 1.0
    # 乘在 cos、sin 上 = 乘在旋转后的 q、k 上：分数乘 mscale²
    q, k = torch.randn(5, d, generator=gen(1), dtype=F64), torch.randn(5, d, generator=gen(2), dtype=F64)
    base_scores = apply_rope(q, theta=yarn) @ apply_rope(k, theta=yarn).T
    scaled = (yarn_mscale(s) * apply_rope(q, theta=yarn)) @ (yarn_mscale(s) * apply_rope(k, theta=yarn)).T
    assert torch.allclose(scaled, base_scores * yarn_mscale(s) ** 2, rtol=1e-12)
    assert_states(ROPE_PAGE, "约40890", "约1.1386", "约1.2965")


# ---------- devices, dtypes and the angle's precision ----------

def test_every_tensor_follows_the_inputs_device():
    """On PyTorch's meta device: frequencies, angles, slopes, biases and the attention's masks are made there."""
    x = torch.empty(2, 3, 5, 8, device="meta")
    for rope in (apply_rope, apply_rope_half):
        out = rope(x)
        assert out.device.type == "meta" and out.shape == x.shape and out.dtype == x.dtype
        assert rope(x, positions=torch.arange(5) + 100, theta=rope_frequencies(8, dtype=F64)).device.type == "meta"
    assert rope_frequencies(8, device="meta").device.type == "meta"
    assert alibi_slopes(12, device="meta").device.type == "meta"
    assert alibi_slopes(12).device.type == "cpu"                         # 默认 device=None：CPU
    assert alibi_bias(4, 5, device="meta").shape == (4, 5, 5) and alibi_bias(4, 5, "meta").device.type == "meta"
    for method in ("pi", "ntk", "yarn", "llama3"):
        assert scaled_rope_frequencies(8, 1e4, method, 2.0, device="meta").device.type == "meta"
    assert scaled_rope_frequencies(8, 1e4, "yarn", 2.0, ramp="index", device="meta").device.type == "meta"
    q = torch.empty(2, 5, 8, device="meta")
    key_mask = torch.ones(2, 1, 5, dtype=torch.bool, device="meta")
    for position in ("none", "rope", "alibi"):
        attn = PositionalSelfAttention(8, 2, position).to("meta")
        out, w = attn(q, q, q, mask=key_mask)
        assert out.device.type == w.device.type == "meta" and out.shape == (2, 5, 8) and w.shape == (2, 2, 5, 5)
        cache = KVCache()
        attn(q, q, q, cache=cache)
        out, w = attn(q[:, :1], q[:, :1], q[:, :1], cache=cache)          # 第 6 个位置：缓存也在 meta 上
        assert out.device.type == "meta" and w.shape == (2, 2, 1, 6)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float64])
def test_outputs_keep_the_inputs_dtype(dtype):
    x = torch.randn(2, 7, 16, generator=gen(5)).to(dtype)
    assert apply_rope(x).dtype == apply_rope_half(x).dtype == dtype
    assert apply_rope(x, theta=scaled_rope_frequencies(16, 1e4, "yarn", 4.0)).dtype == dtype
    for position in ("rope", "alibi"):
        attn = PositionalSelfAttention(16, 4, position).to(dtype)
        out, w = attn(x, x, x)
        assert out.dtype == w.dtype == dtype and not out.isnan().any()


@pytest.mark.claim("ch07-rope-angle-precision", paper="RoFormer (Su et al. 2021)",
                   title="为什么在 float64 里算 RoPE 的角度",
                   text="bf16 存不下位置本身：5000 存成 4992、100003 存成 99840，θ_0 = 1 的那一对角度差 8 与 163 弧度；"
                        "float32 的 θ 乘 float32 的位置，在位置 10⁶ 处 64 对频率里角度最大差约 0.05 弧度。"
                        "apply_rope 在 float64 里算角度，bf16、float32 的输出只差最后的舍入")
def test_rope_angles_are_computed_in_float64():
    bf16, f32 = torch.bfloat16, torch.float32
    assert torch.finfo(bf16).eps * 4096 == 32                           # 8 位有效数字：4096–8192 之间的间距
    for pos, stored in ((5000, 4992), (100003, 99840)):
        assert torch.tensor(float(pos), dtype=bf16).item() == stored     # θ_0 = 1：角度差 pos − stored 弧度
    assert (5000 - 4992, 100003 - 99840) == (8, 163)
    d, pos = 128, 10**6
    exact = pos * rope_frequencies(d, dtype=F64)                         # (64,)，float64：误差约 1e-10
    fp32 = (torch.tensor(float(pos), dtype=f32) * rope_frequencies(d, dtype=f32)).double()
    err32 = (fp32 - exact).abs().max().item()
    assert round(err32, 2) == 0.05
    # apply_rope 的输出：与全程 float64 的结果只差输出 dtype 的舍入；在输入 dtype 里算角度就差得远
    x = torch.randn(4, 1, d, generator=gen(6), dtype=F64)
    positions = torch.tensor([pos])
    ref = apply_rope(x, positions)                                      # 全程 float64
    for dtype, ours_tol, naive_min in ((f32, 1e-5, 1e-2), (bf16, 0.05, 0.5)):
        xd = x.to(dtype)
        ours = apply_rope(xd, positions).double()
        assert (ours - ref).abs().max().item() < ours_tol * ref.abs().max().item()
        angle = positions.to(dtype)[:, None] * rope_frequencies(d, dtype=dtype)[None, :]  # 在输入 dtype 里算
        naive = torch.empty_like(xd)
        naive[..., 0::2] = xd[..., 0::2] * angle.cos() - xd[..., 1::2] * angle.sin()
        naive[..., 1::2] = xd[..., 0::2] * angle.sin() + xd[..., 1::2] * angle.cos()
        assert (naive.double() - ref).abs().max().item() > naive_min
    assert_states(CH07 + "code.md", "相邻两个数差32", "4992", "99840", "8弧度和163弧度", "约0.05弧度")



def test_rope_theta_must_have_d_over_2_entries():
    with pytest.raises(ValueError, match=r"theta .*\(3,\).*x \(5, 8\)"):
        apply_rope(torch.randn(5, 8), theta=torch.ones(3))
    with pytest.raises(ValueError, match=r"theta"):
        apply_rope_half(torch.randn(5, 8), theta=torch.ones(1))              # (1,) 会悄悄广播，必须拒绝

# ---------- PositionalSelfAttention: mask and cache ----------

@pytest.mark.parametrize("position", ["none", "rope", "alibi"])
def test_positional_attention_honours_a_padding_mask(position):
    """Left padding with a key mask gives the unpadded sequence's outputs (RoPE and ALiBi see only offsets);
    "none" equals MultiHeadAttention with causal & mask; a fully masked query row is zeros, not NaN."""
    torch.manual_seed(0)
    d, n, pad = 16, 7, 3
    attn = PositionalSelfAttention(d, 4, position).double()
    x = torch.randn(1, n, d, generator=gen(7), dtype=F64)
    padded = torch.cat([torch.randn(1, pad, d, generator=gen(8), dtype=F64), x], dim=1)  # (1, pad + n, d)
    key_ok = (torch.arange(pad + n) >= pad)[None, None, :]               # (1, 1, pad + n)：前 pad 个是填充
    out, w = attn(padded, padded, padded, mask=key_ok)
    alone, _ = attn(x, x, x)
    if position != "none":                                              # 只看偏移：去掉填充后与单独算相同
        assert (out[:, pad:] - alone).abs().max().item() < 1e-12
    assert torch.equal(out[:, :pad], attn.w_o.bias.expand(1, pad, d))   # 填充的查询整行被遮：输出 0 再过 w_o
    assert torch.equal(w[:, :, :pad], torch.zeros_like(w[:, :, :pad])) and not w.isnan().any()
    assert w[..., :pad].abs().max().item() == 0.0                        # 没有权重落在填充的键上
    ref = MultiHeadAttention(d, 4).double()
    ref.load_state_dict(attn.state_dict())
    if position == "none":
        causal = torch.ones(pad + n, pad + n, dtype=torch.bool).tril()
        out_ref, w_ref = ref(padded, padded, padded, mask=causal & key_ok)
        assert (out - out_ref).abs().max().item() < 1e-12 and (w - w_ref).abs().max().item() < 1e-12
    per_head = key_ok[:, None].expand(1, 4, pad + n, pad + n)             # 4 维 (batch, h, n, n) 掩码同样可用
    assert torch.equal(attn(padded, padded, padded, mask=per_head)[0], out)


@pytest.mark.parametrize("position", ["none", "rope", "alibi"])
def test_positional_attention_with_a_cache_equals_the_full_pass(position):
    """Feeding the sequence in pieces through a KVCache (RoPE positions offset, ALiBi distances from the
    cached length) gives the full causal pass; a static (cross-attention) cache is refused."""
    torch.manual_seed(0)
    d, n = 16, 9
    attn = PositionalSelfAttention(d, 4, position).double()
    x = torch.randn(2, n, d, generator=gen(9), dtype=F64)
    full, w_full = attn(x, x, x)
    for pieces in ([1] * n, [4, 1, 3, 1]):
        cache, outs, start = KVCache(), [], 0
        for size in pieces:
            step = x[:, start:start + size]
            out, w = attn(step, step, step, cache=cache)
            assert w.shape == (2, 4, size, start + size)
            assert (w - w_full[:, :, start:start + size, :start + size]).abs().max().item() < 1e-12
            outs.append(out)
            start += size
        assert cache.length == n
        assert (torch.cat(outs, dim=1) - full).abs().max().item() < 1e-12
    with pytest.raises(NotImplementedError, match="cache"):
        attn(x, x, x, cache=KVCache(static=True))
    with pytest.raises(ValueError, match=r"key must have as many positions as query.*key \(2, 4, 16\)"):
        attn(x, x[:, :4], x[:, :4])
    cache = KVCache()
    attn(x[:, :3], x[:, :3], x[:, :3], cache=cache)
    step = x[:, 3:4]
    assert attn(step, step, step, mask=torch.ones(2, 1, 4, dtype=torch.bool), cache=cache)[1].shape == (2, 4, 1, 4)
    with pytest.raises(ValueError, match=r"mask \(2, 1, 3\) cannot broadcast to \(2, 1, 5\)"):  # 最后一维是 t = 缓存 + n
        attn(step, step, step, mask=torch.ones(2, 1, 3, dtype=torch.bool), cache=cache)


# ---------- context extension: the YaRN ramps and Llama 3.1 ----------

def deployed_yarn(d, base, factor, original_len, beta_fast=32.0, beta_slow=1.0):
    """Hugging Face `_compute_yarn_parameters` (modeling_rope_utils.py), the official YaRN code
    (jquesnelle/yarn, find_correction_range / linear_ramp_mask) and vLLM, transcribed in float64."""
    def find_correction_dim(num_rotations):
        return (d * math.log(original_len / (num_rotations * 2 * math.pi))) / (2 * math.log(base))
    low = max(math.floor(find_correction_dim(beta_fast)), 0)
    high = min(math.ceil(find_correction_dim(beta_slow)), d - 1)
    if low == high:
        high += 0.001
    ramp = torch.clamp((torch.arange(d // 2, dtype=F64) - low) / (high - low), 0, 1)
    pos_freqs = base ** (torch.arange(0, d, 2, dtype=F64) / d)
    extrapolation, interpolation = 1.0 / pos_freqs, 1.0 / (factor * pos_freqs)
    extrapolation_factor = 1 - ramp
    return interpolation * (1 - extrapolation_factor) + extrapolation * extrapolation_factor


def deployed_llama3(d, base, factor, low_freq_factor, high_freq_factor, old_context_len):
    """Hugging Face `_compute_llama3_parameters`, transcribed in float64."""
    inv_freq = 1.0 / (base ** (torch.arange(0, d, 2, dtype=F64) / d))
    low_freq_wavelen, high_freq_wavelen = old_context_len / low_freq_factor, old_context_len / high_freq_factor
    wavelen = 2 * math.pi / inv_freq
    inv_freq_llama = torch.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
    smooth_factor = (old_context_len / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
    smoothed = (1 - smooth_factor) * inv_freq_llama / factor + smooth_factor * inv_freq_llama
    is_medium_freq = ~(wavelen < high_freq_wavelen) * ~(wavelen > low_freq_wavelen)
    return torch.where(is_medium_freq, smoothed, inv_freq_llama)


@pytest.mark.claim("ch07-yarn-ramps", paper="YaRN (Peng et al. 2023); jquesnelle/yarn; HF transformers; vLLM",
                   title="YaRN 的两种斜坡：论文的与部署代码的",
                   text='论文的 γ 在圈数 r 上线性（`ramp="rotations"`，波长图画的就是它）；官方代码、Hugging Face、vLLM '
                        '在维度对的编号上线性（`ramp="index"`）。'
                        "s = 4、d = 128、L = 4096 时 r = 32、r = 1 落在 20.94、"
                        "45.03 对，取整成 20 与 46；两端相同，第 30 对的 θ'/θ 是 0.436 对 0.712，差得最多（0.275）")
def test_yarn_ramps_paper_and_deployed():
    d, base, s, L = 128, 10000.0, 4.0, 4096
    theta = rope_frequencies(d, base, F64)
    paper = scaled_rope_frequencies(d, base, "yarn", s, original_len=L)
    index = scaled_rope_frequencies(d, base, "yarn", s, original_len=L, ramp="index")
    assert torch.equal(scaled_rope_frequencies(d, base, "yarn", s, original_len=L, ramp="rotations"), paper)
    for b_fast, b_slow, dd, bb, ll in ((32, 1, d, base, L), (32, 1, 64, 500000.0, 8192), (16, 2, 96, 1e4, 2048)):
        ours = scaled_rope_frequencies(dd, bb, "yarn", s, original_len=ll, alpha=b_slow, beta=b_fast, ramp="index")
        assert torch.allclose(ours, deployed_yarn(dd, bb, s, ll, b_fast, b_slow), rtol=1e-12, atol=0)
    dim_of = [d * math.log(L / (2 * math.pi * r)) / (2 * math.log(base)) for r in (32, 1)]
    assert [round(v, 2) for v in dim_of] == [20.94, 45.03]
    assert (math.floor(dim_of[0]), math.ceil(dim_of[1])) == (20, 46)
    p, q = paper / theta, index / theta
    assert torch.equal(p[:21], q[:21]) and torch.allclose(p[46:], q[46:], rtol=1e-15)  # 两端相同：不动与除以 s
    gap = (q - p).abs()
    assert int(gap.argmax()) == 30 and round(gap.max().item(), 3) == 0.275
    assert (round(p[30].item(), 3), round(q[30].item(), 3)) == (0.436, 0.712)
    # 波长图（results/rope-scaling.json）画的是论文的斜坡
    from snippets.results import load_results
    from tests.support.sections import ROOT
    drawn = torch.tensor(load_results(ROOT / "results" / "rope-scaling.json")["wavelengths"]["yarn"], dtype=F64)
    assert torch.allclose(drawn, 2 * math.pi / paper, rtol=1e-12)
    assert not torch.allclose(drawn, 2 * math.pi / index, rtol=1e-3)
    assert_states(ROPE_PAGE, "20.94", "45.03", "0.436", "0.712", "0.275")


@pytest.mark.claim("ch07-llama3-rope", paper='Llama 3.1 (Meta 2024); HF transformers `rope_type="llama3"`',
                   title="Llama 3.1 的频率规则",
                   text="factor 8、low_freq_factor 1、high_freq_factor 4、原长度 8192、底数 500000、d = 128："
                        "波长短于 2048 的 29 对不动，长于 8192 的 29 对除以 8，中间 6 对平滑过渡；"
                        "它就是论文 YaRN 斜坡取 α = 1、β = 4、L = 8192")
def test_llama3_rule():
    d, base, s, L = 128, 500000.0, 8.0, 8192
    theta = rope_frequencies(d, base, F64)
    llama = scaled_rope_frequencies(d, base, "llama3", s, original_len=L, low_freq_factor=1.0, high_freq_factor=4.0)
    assert torch.allclose(llama, deployed_llama3(d, base, s, 1.0, 4.0, L), rtol=1e-12, atol=0)
    assert torch.equal(scaled_rope_frequencies(d, base, "llama3", s, original_len=L), llama)  # 默认就是 1 与 4
    wavelength = 2 * math.pi / theta
    high, low = wavelength < L / 4, wavelength > L / 1
    middle = ~high & ~low
    assert (int(high.sum()), int(low.sum()), int(middle.sum())) == (29, 29, 6)
    assert torch.equal(llama[high], theta[high])                          # 高频：不动
    assert torch.allclose(llama[low], theta[low] / s, rtol=1e-15)         # 低频：除以 8
    ratio = llama[middle] / theta[middle]                                 # 中间：在 1/8 与 1 之间单调下降
    assert bool((ratio < 1).all() and (ratio > 1 / s).all() and (ratio[1:] < ratio[:-1]).all())
    assert torch.allclose(llama, scaled_rope_frequencies(d, base, "yarn", s, original_len=L, alpha=1.0, beta=4.0),
                          rtol=1e-15)
    with pytest.raises(ValueError, match="low_freq_factor"):
        scaled_rope_frequencies(d, base, "llama3", s, original_len=L, low_freq_factor=4.0, high_freq_factor=1.0)
    assert_states(ROPE_PAGE, "L/4=2048", "L/1=8192", "29对不动", "29对除以8", "6对")


def test_scaled_frequencies_bad_input():
    with pytest.raises(ValueError, match="ramp='paper'"):
        scaled_rope_frequencies(8, 1e4, "yarn", 2.0, ramp="paper")
    with pytest.raises(ValueError, match="ramp='index' applies only to other methods: method='pi' reads only factor"):
        scaled_rope_frequencies(8, 1e4, "pi", 2.0, ramp="index")
    with pytest.raises(ValueError, match="alpha < beta"):
        scaled_rope_frequencies(8, 1e4, "yarn", 2.0, alpha=32.0, beta=1.0)


# 每个方法 × 每个它不读的参数：给了就报错并写出参数名，不静默忽略（第 07 章的参数表，issue 56 的“给了就要兑现或拒绝”）
_ARG_VALUES = {"original_len": 2048, "alpha": 2.0, "beta": 16.0, "ramp": "index", "low_freq_factor": 2.0,
               "high_freq_factor": 8.0}


@pytest.mark.parametrize("method,arg", [(m, a) for m in SCALING_ARGS for a in _ARG_VALUES
                                        if a not in SCALING_ARGS[m]])
def test_scaled_frequencies_refuse_other_methods_arguments(method, arg):
    with pytest.raises(ValueError, match=rf"{arg}=.* applies only to other methods: method='{method}'"):
        scaled_rope_frequencies(64, 1e4, method, 4.0, **{arg: _ARG_VALUES[arg]})


@pytest.mark.parametrize("method,arg", [(m, a) for m in SCALING_ARGS for a in SCALING_ARGS[m]])
def test_scaled_frequencies_honour_their_own_arguments(method, arg):
    """一个方法读的每个参数都改变输出（换成非默认值后频率不同）：读了就兑现。"""
    default = scaled_rope_frequencies(64, 1e4, method, 4.0)
    changed = scaled_rope_frequencies(64, 1e4, method, 4.0, **{arg: _ARG_VALUES[arg]})
    assert not torch.equal(default, changed), f"{method}: {arg}={_ARG_VALUES[arg]!r} changed nothing"
