"""Chapter 12, 推理效率：FlashAttention、KV 缓存、MQA/GQA/MLA: the code in snippets/flash.py, snippets/mla.py,
snippets/serving.py and mla_cache_bytes in snippets/multihead.py, and the claims the pages cite (CONVENTIONS.md,
"Claims"). The committed probe results are checked in test_ch12_probes.py."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention.bias import causal_lower_right, causal_upper_left
from torch.utils.flop_counter import FlopCounterMode

from snippets.attention import KVCache, scaled_dot_product_attention
from snippets.decoding import decode_step
from snippets.flash import (ACCELERATORS, compute_bound_batch, decode_attention_intensity, flash_attention,
                            flash_block_sizes, hbm_accesses, hbm_closed_form, linear_intensity,
                            mla_decode_flops_per_position, mla_decode_intensity, ridge_point)
from snippets.mla import MultiHeadLatentAttention
from snippets.multihead import kv_cache_bytes, mla_cache_bytes
from snippets.positional import apply_rope
from snippets.serving import BlockPool, PagedKVCache, dequantize_int8, kv_waste, quantize_int8
from snippets.transformer import DecoderCache, Transformer
from tests.support.pages import assert_states, chapter, plain

F64 = torch.float64
CH12 = chapter("12")
INDEX = CH12 + "index.md"
DERIVATION = CH12 + "derivation.md"
CACHE = CH12 + "derivation-cache.md"
CODE = CH12 + "code.md"
INTERVIEW = CH12 + "interview.md"
KIB, GIB = 2 ** 10, 2 ** 30


def qkv(n_q, n_k, d=16, d_v=8, batch=(2, 3), seed=0, dtype=F64):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*batch, n_q, d, generator=g, dtype=dtype), torch.randn(*batch, n_k, d, generator=g, dtype=dtype),
            torch.randn(*batch, n_k, d_v, generator=g, dtype=dtype))


def flops(fn) -> int:
    with FlopCounterMode(display=False) as counter:
        fn()
    return counter.get_total_flops()


# ---------- FlashAttention ----------

CASES = [(False, 64, 64, 16, 16), (False, 37, 53, 16, 24), (False, 1, 100, 8, 32), (False, 100, 7, 64, 64),
         (True, 70, 70, 16, 24), (True, 65, 65, 64, 64), (True, 1, 1, 4, 4), (True, 130, 130, 32, 7)]


@pytest.mark.claim("ch12-flash-sdpa", paper="§3.2.1 Eq. (1); Dao et al. 2022",
                   title="flash_attention = F.scaled_dot_product_attention",
                   text="flash_attention 的输出与 F.scaled_dot_product_attention 在 float64 下相差 < 1e-10："
                        "因果与非因果、n 不是块大小的倍数、n_q ≠ n_k（非因果），各种块大小；"
                        "换块大小只改变浮点求和的顺序，结果相差 < 1e-12")
@pytest.mark.parametrize("causal,n_q,n_k,block_q,block_k", CASES)
def test_flash_equals_sdpa(causal, n_q, n_k, block_q, block_k, device):
    q, k, v = (t.to(device) for t in qkv(n_q, n_k))
    out, _ = flash_attention(q, k, v, causal=causal, block_q=block_q, block_k=block_k)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    assert (out - ref).abs().max().item() < 1e-10
    other, _ = flash_attention(q, k, v, causal=causal, block_q=5, block_k=11)
    assert (out - other).abs().max().item() < 1e-12


@pytest.mark.claim("ch12-flash-lse", paper="Dao et al. 2022 §3.1; Dao 2023",
                   title="反向传播只存 logsumexp、重算 P",
                   text="flash_attention 返回的 lse 等于 torch.logsumexp(QKᵀ/√d_k)（被遮住的位置不计入），float64 下 < 1e-10；"
                        "反向传播只存 lse，由 Q、K 重算出的 P = exp(S − L) 与 softmax(S) 相差 < 1e-12")
@pytest.mark.parametrize("causal,n_q,n_k,block_q,block_k", CASES)
def test_flash_lse_and_recompute(causal, n_q, n_k, block_q, block_k):
    q, k, v = qkv(n_q, n_k, seed=1)
    _, lse = flash_attention(q, k, v, causal=causal, block_q=block_q, block_k=block_k)
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if causal:
        s = s.masked_fill(torch.ones(n_q, n_k, dtype=torch.bool).triu(1), float("-inf"))
    assert (lse - torch.logsumexp(s, dim=-1)).abs().max().item() < 1e-10
    p = torch.exp(s - lse.unsqueeze(-1))  # 反向传播里按块重算的 P
    assert (p - torch.softmax(s, dim=-1)).abs().max().item() < 1e-12


@pytest.mark.claim("ch12-backward-identity", paper="Dao et al. 2022 §3.1, 附录 B; Dao 2023",
                   title="反向传播：rowsum(P∘dP) = rowsum(dO∘O)",
                   text="记 dP = dO·Vᵀ：autograd 对分数 S 的梯度等于 P∘(dP − rowsum(dO∘O))，"
                        "而 rowsum(P∘dP) 与 rowsum(dO∘O) 逐行相等（float64，< 1e-12）：反向只需要每行一个数，不需要整行的 P")
def test_backward_identity():
    g = torch.Generator().manual_seed(3)
    s = torch.randn(2, 7, 9, dtype=F64, generator=g).requires_grad_(True)  # 分数 S (batch, n_q, n_k)
    v = torch.randn(2, 9, 5, dtype=F64, generator=g)
    d_o = torch.randn(2, 7, 5, dtype=F64, generator=g)  # 损失对输出的梯度 dO
    p = torch.softmax(s, dim=-1)
    o = p @ v
    (o * d_o).sum().backward()  # 损失 = <O, dO>，所以 ∂损失/∂O = dO
    d_p = d_o @ v.transpose(-2, -1)  # dP = dO Vᵀ
    row = (d_o * o).sum(-1, keepdim=True)  # rowsum(dO∘O)
    assert ((p * d_p).sum(-1, keepdim=True) - row).abs().max().item() < 1e-12
    assert (s.grad - p * (d_p - row)).abs().max().item() < 1e-12
    assert_states(DERIVATION, "dP=dOV^\\top", "rowsum(P\\circdP)_i")


@pytest.mark.claim("ch12-causal-alignment",
                   paper="FlashAttention README「2.1: Change behavior of causal flag」; PyTorch torch.nn.attention.bias",
                   title="因果掩码的对齐：n_q < n_k",
                   text="n_q < n_k 时 flash_attention(causal=True) 按右下角对齐：与 SDPA 加上 causal_lower_right 的掩码"
                        "在 float64 下相差 < 1e-10（n_q = 1 的解码一步也一样），与 is_causal=True（= causal_upper_left，左上角对齐）不同；"
                        "1 个查询、5 个键、v = I₅ 时 is_causal=True 只看第 0 个键，得到 [1, 0, 0, 0, 0]")
def test_causal_alignment_is_bottom_right():
    for n_q, n_k, block_q, block_k in ((1, 5, 64, 64), (1, 37, 4, 8), (5, 13, 2, 3), (20, 33, 7, 5), (16, 64, 16, 16)):
        q, k, v = qkv(n_q, n_k, seed=2)
        out, lse = flash_attention(q, k, v, causal=True, block_q=block_q, block_k=block_k)
        lower_right = F.scaled_dot_product_attention(q, k, v, attn_mask=causal_lower_right(n_q, n_k))
        upper_left = F.scaled_dot_product_attention(q, k, v, attn_mask=causal_upper_left(n_q, n_k))
        assert (out - lower_right).abs().max().item() < 1e-10
        assert (out - upper_left).abs().max().item() > 1e-3
        assert torch.equal(upper_left, F.scaled_dot_product_attention(q, k, v, is_causal=True))
        s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # lse 也按右下角对齐的掩码
        seen = torch.ones(n_q, n_k, dtype=torch.bool).tril(n_k - n_q)
        assert (lse - torch.logsumexp(s.masked_fill(~seen, float("-inf")), dim=-1)).abs().max().item() < 1e-10
    q, k, v = torch.ones(1, 1, 1, 8, dtype=F64), torch.ones(1, 1, 5, 8, dtype=F64), torch.eye(5, dtype=F64)[None, None]
    assert F.scaled_dot_product_attention(q, k, v, is_causal=True).flatten().tolist() == [1.0, 0.0, 0.0, 0.0, 0.0]
    assert (flash_attention(q, k, v, causal=True)[0].flatten() - 0.2).abs().max().item() < 1e-15  # 解码：看全部 5 个键
    assert_states(DERIVATION, "causal_lower_right", "is_causal=True", "[1,0,0,0,0]")


@pytest.mark.claim("ch12-flash-fp32", paper="Dao 2023 §3.1",
                   title="半精度输入，float32 累加",
                   text="bf16 与 fp16 的输入（n = 512、d = 64、因果）：flash_attention 在 float32 里累加 m、ℓ 与输出，"
                        "返回输入的 dtype；最大误差等于把 float32 的 SDPA 舍入到该 dtype 的误差，"
                        "99% 以上的元素与它逐位相同；lse 是 float32")
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_flash_half_precision_accumulates_in_fp32(dtype):
    q, k, v = qkv(512, 512, d=64, d_v=64, batch=(1, 2), seed=0, dtype=torch.float32)
    q, k, v = (x.to(dtype) for x in (q, k, v))
    out, lse = flash_attention(q, k, v, causal=True)
    assert out.dtype == dtype and lse.dtype == torch.float32
    ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=True)  # float32 的 SDPA
    rounding = (ref.to(dtype).float() - ref).abs().max().item()  # 输出存成 dtype 时躲不开的误差
    assert (out.float() - ref).abs().max().item() <= 1.01 * rounding
    assert (out == ref.to(dtype)).float().mean().item() >= 0.99
    s = q.float() @ k.float().transpose(-2, -1) / 8.0
    s = s.masked_fill(torch.ones(512, 512, dtype=torch.bool).triu(1), float("-inf"))
    assert (lse - torch.logsumexp(s, dim=-1)).abs().max().item() < 1e-4
    assert_states(DERIVATION, "float32")


def test_flash_follows_device():
    q = torch.empty(2, 3, 5, 16, device="meta", dtype=torch.bfloat16)
    k = torch.empty(2, 3, 9, 16, device="meta", dtype=torch.bfloat16)
    out, lse = flash_attention(q, k, k, causal=True, block_q=2, block_k=4)
    assert out.device.type == lse.device.type == "meta" and out.dtype == torch.bfloat16 and lse.shape == (2, 3, 5)


@pytest.mark.claim("ch12-flash-flops", paper="表 1; Dao et al. 2022",
                   title="常见误解：FlashAttention 减少了 FLOPs",
                   text="FlopCounterMode 数出的矩阵乘 FLOPs：flash_attention（非因果）与公式 (1) 的朴素实现相同，都是 4n²d；"
                        "n = 100、d = 16 时都是 640,000")
def test_flash_does_not_reduce_flops():
    q, k, v = qkv(100, 100, d=16, d_v=16, batch=(1, 1), dtype=torch.float32)
    f_flash = flops(lambda: flash_attention(q, k, v, block_q=32, block_k=24))
    f_naive = flops(lambda: scaled_dot_product_attention(q, k, v))
    assert f_flash == f_naive == 4 * 100 * 100 * 16 == 640_000
    assert_states(DERIVATION, "640000")


@pytest.mark.claim("ch12-hbm-accesses", paper="Dao et al. 2022 Theorem 2",
                   title="HBM 访问次数：数循环 = 闭式",
                   text="hbm_accesses 按算法 0、算法 1 的循环数出的元素个数等于闭式 4n² + 4nd 与 2nd + ⌈n/B_c⌉(3nd + 4n)；"
                        "n = 4096、d = 64、SRAM 128 KiB（fp16）时分别是 68,157,440 与 13,369,344，约 5.10 倍；"
                        "n 增大时 flash 的计数 × M/(n²d²) 趋于 12 + 16/d（d = 64 时 12.25，n = 2²⁰ 时 12.252），"
                        "两者之比趋于 M/(d(3d + 4))（5.22）")
def test_hbm_accesses_match_closed_forms():
    for n in (1, 63, 64, 100, 257, 1000):
        for d in (16, 64, 128):
            for sram in (4 * 1024, 64 * 1024, 128 * 1024, 228 * 1024):
                if sram // 2 < 4 * d:
                    continue
                for method in ("standard", "flash"):
                    assert hbm_accesses(n, d, sram, method) == hbm_closed_form(n, d, sram, method)
    std, fl = hbm_accesses(4096, 64, 128 * 1024, "standard"), hbm_accesses(4096, 64, 128 * 1024, "flash")
    assert (std, fl) == (68_157_440, 13_369_344)
    assert f"{std / fl:.2f}" == "5.10"
    m = 128 * 1024 // 2
    ratios = [hbm_accesses(n, 64, 128 * 1024, "flash") * m / (n * n * 64 * 64) for n in (4096, 16384)]
    assert all(12.25 < r < 13 for r in ratios) and ratios[-1] < ratios[0]
    n = 2 ** 20  # 数循环要 ~6700 万次迭代；上面已证闭式 = 数循环，这里用闭式
    far = hbm_closed_form(n, 64, 128 * 1024, "flash") * m / (n * n * 64 * 64)
    assert 12 + 16 / 64 == 12.25 and 12.25 < far < 12.2525  # 极限 12 + 16/d，多出的 2M/(nd) ≈ 0.002
    ratio = hbm_closed_form(n, 64, 128 * 1024, "standard") / hbm_closed_form(n, 64, 128 * 1024, "flash")
    assert abs(ratio - m / (64 * (3 * 64 + 4))) < 0.01 and f"{ratio:.2f}" == "5.22"
    assert flash_block_sizes(64, m) == (64, 256)
    assert_states(DERIVATION, "68157440", "13369344", "5.10", "12+16/d", "12.25", "5.22")
    assert_states(CH12 + "questions.md", "12+16/d")


@pytest.mark.claim("ch12-hbm-fa2", paper="Dao 2023 (FlashAttention-2) §3.1; Dao et al. 2022 Theorem 2",
                   title="HBM 访问次数：FlashAttention-2 的循环顺序，随头宽与 SRAM",
                   text="外层遍历查询块（flash_attention 与 FlashAttention-2 的顺序）时，hbm_accesses 数出的元素个数等于闭式 "
                        "2nd + n + ⌈n/B_r⌉·2nd ≈ 8n²d²/M；n = 4096、d = 64、SRAM 128 KiB 时 8,916,992，比标准少 7.64 倍"
                        "（块沿用算法 1 的 B_r = 64 则是 34,082,816，只少 2.0 倍）；d = 128 时标准 / FA1 顺序只有 1.33（128 KiB）"
                        "与 2.33（228 KiB），FA2 顺序 2.00 与 3.47")
def test_hbm_accesses_flash2_order():
    for n in (1, 63, 64, 100, 257, 1000):
        for d in (16, 64, 128):
            for sram in (4 * 1024, 64 * 1024, 128 * 1024, 228 * 1024):
                if sram // 2 < 4 * d:
                    continue
                assert hbm_accesses(n, d, sram, "flash2") == hbm_closed_form(n, d, sram, "flash2")
    m = 128 * 1024 // 2
    assert flash_block_sizes(64, m, "flash2") == (256, 64) and flash_block_sizes(128, m, "flash2") == (128, 128)
    std = hbm_accesses(4096, 64, 128 * 1024, "standard")
    fa2 = hbm_accesses(4096, 64, 128 * 1024, "flash2")
    assert fa2 == 8_916_992 and f"{std / fa2:.2f}" == "7.64"
    fa2_small_rows = 2 * 4096 * 64 + 4096 + math.ceil(4096 / 64) * 2 * 4096 * 64  # 外层块只有 B_r = 64 行
    assert fa2_small_rows == 34_082_816 and f"{std / fa2_small_rows:.1f}" == "2.0"
    n = 2 ** 20  # 极限：FA2 顺序 × M/(n²d²) → 8，FA1 顺序 → 12 + 16/d
    assert abs(hbm_closed_form(n, 64, 128 * 1024, "flash2") * m / (n * n * 64 * 64) - 8) < 0.01
    ratios = {}
    for d in (64, 128):
        for kib in (128, 228):
            s_, f1, f2 = (hbm_accesses(4096, d, kib * 1024, x) for x in ("standard", "flash", "flash2"))
            ratios[(d, kib)] = (f"{s_ / f1:.2f}", f"{s_ / f2:.2f}")
    assert ratios == {(64, 128): ("5.10", "7.64"), (64, 228): ("8.79", "12.99"),
                      (128, 128): ("1.33", "2.00"), (128, 228): ("2.33", "3.47")}
    assert_states(DERIVATION, "8916992", "7.64", "34082816", "1.33", "2.33", "8n^2d^2/M")


# ---------- roofline ----------

@pytest.mark.claim("ch12-linear-intensity", paper="§3.3; Williams et al. 2009",
                   title="线性层的算术强度",
                   text="linear_intensity 等于 FlopCounterMode 数出的 FLOPs 除以 X、W、Y 的字节数；"
                        "d = 4096、bf16 时 1 个词元的强度约 1 FLOP/B（0.9995），16 个词元约 15.88")
def test_linear_intensity_matches_counted_flops_and_bytes():
    for tokens, d_in, d_out in ((1, 64, 128), (7, 96, 32), (300, 128, 128)):
        x, w = torch.randn(tokens, d_in, dtype=torch.bfloat16), torch.randn(d_in, d_out, dtype=torch.bfloat16)
        counted = flops(lambda: x @ w)
        nbytes = x.nbytes + w.nbytes + tokens * d_out * 2
        assert abs(linear_intensity(tokens, d_in, d_out) - counted / nbytes) < 1e-12
    assert f"{linear_intensity(1, 4096, 4096):.4f}" == "0.9995"
    assert f"{linear_intensity(16, 4096, 4096):.2f}" == "15.88"
    assert_states(DERIVATION, "0.9995", "15.88")


@pytest.mark.claim("ch12-decode-attention-intensity", paper="§3.2.2; Shazeer 2019; Ainslie et al. 2023",
                   title="解码注意力的算术强度",
                   text="解码一步的注意力：FlopCounterMode 数出的 FLOPs 除以读出的 KV 缓存字节数等于 2h/(h_kv·b)，与缓存长度无关；"
                        "bf16、h = 32 时 MHA 为 1、GQA-8 为 4、MQA 为 32 FLOP/B")
def test_decode_attention_intensity():
    for h, h_kv, t, d in ((8, 8, 50, 16), (8, 2, 33, 16), (8, 1, 70, 32)):
        q = torch.randn(1, h, 1, d, dtype=torch.bfloat16)  # 每个头 1 个查询
        k = torch.randn(1, h_kv, t, d, dtype=torch.bfloat16)
        v = torch.randn(1, h_kv, t, d, dtype=torch.bfloat16)
        kk, vv = (x.repeat_interleave(h // h_kv, dim=1) for x in (k, v))  # 只是视图意义上的共享，不多读
        counted = flops(lambda: (torch.softmax(q @ kk.transpose(-2, -1), -1)) @ vv)
        assert abs(counted / (k.nbytes + v.nbytes) - decode_attention_intensity(h, h_kv)) < 1e-12
    assert [decode_attention_intensity(32, g) for g in (32, 8, 1)] == [1.0, 4.0, 32.0]


@pytest.mark.claim("ch12-mla-decode-intensity", paper="DeepSeek-V2 §2.1.2–2.1.3",
                   title="MLA 解码的算术强度：吸收与不吸收",
                   text="MLA 解码一步、每个缓存位置每层：吸收后 2h(2d_c + d_h^R) FLOPs、读 (d_c + d_h^R)·b 字节；DeepSeek-V2"
                        "（h = 128、d_c = 512、d_h^R = 64、bf16）是 278,528 FLOPs / 1,152 B ≈ 242 FLOP/B；不吸收时要为每个位置"
                        "升维出 k^C 与 v，多 4h·d·d_c FLOPs，共 33,636,352，是吸收的 120.8 倍。读者的 MultiHeadLatentAttention 上"
                        "FlopCounterMode 数出：一步解码里每多一个缓存位置，两条路径各多这么多 FLOPs；整段预填充时吸收让每对"
                        "（查询, 键）多 4h(d_c − d) FLOPs，线性项相同")
def test_mla_decode_intensity():
    assert mla_decode_flops_per_position(128, 128, 512, 64) == 278_528
    assert (512 + 64) * 2 == 1152 and Fraction(278_528, 1152) == Fraction(2176, 9)
    assert f"{mla_decode_intensity(128, 128, 512, 64):.1f}" == "241.8"
    naive = mla_decode_flops_per_position(128, 128, 512, 64, absorbed=False)
    assert naive == 4 * 128 * 128 * 512 + 2 * 128 * (2 * 128 + 64) == 33_636_352
    assert f"{naive / 278_528:.1f}" == "120.8"
    assert f"{mla_decode_intensity(128, 128, 512, 64, absorbed=False):,.0f}" == "29,198"
    assert decode_attention_intensity(32, 8) == 4.0 and decode_attention_intensity(64, 8) == 8.0  # GQA-8 的 4 与 8
    # 读者的 MLA 上数 FLOPs：一步解码（1 个查询、n 个缓存位置），n 加 1，FLOPs 恰好多 mla_decode_flops_per_position
    h, d_h, d_c, d_r = 4, 8, 12, 6
    m = mla_model(n_heads=h)
    w_uk = m.w_uk.weight.view(h, d_h, d_c)
    w_uv = m.w_uv.weight.view(h, d_h, d_c)

    def decode_step(n, absorbed):
        x = torch.randn(1, n, 48, dtype=F64)
        c, k_rope = m.latent_cache(x)  # 缓存：(1, n, d_c)、(1, n, d_r)
        q_c = m.w_q(x[:, -1:]).view(1, 1, h, d_h).transpose(1, 2)  # (1, h, 1, d_h)：最新一个词元的查询
        q_r = m.w_qr(x[:, -1:]).view(1, 1, h, d_r).transpose(1, 2)  # (1, h, 1, d_r)（RoPE 不改 FLOPs）

        def attend():
            rope = q_r @ k_rope.unsqueeze(1).transpose(-2, -1)  # (1, h, 1, n)
            if absorbed:
                w = torch.softmax((q_c @ w_uk) @ c.unsqueeze(1).transpose(-2, -1) + rope, -1)
                return (w @ c.unsqueeze(1)) @ w_uv.transpose(-2, -1)  # (1, h, 1, d_h)
            k_c = torch.einsum("hdc,bnc->bhnd", w_uk, c)  # 每个缓存位置都要升维
            v = torch.einsum("hdc,bnc->bhnd", w_uv, c)
            return torch.softmax(q_c @ k_c.transpose(-2, -1) + rope, -1) @ v
        return flops(attend)

    for absorbed in (True, False):
        counted = [decode_step(n, absorbed) for n in (5, 6, 9)]
        per_position = mla_decode_flops_per_position(h, d_h, d_c, d_r, absorbed)
        assert counted[1] - counted[0] == per_position and counted[2] - counted[1] == 3 * per_position
    # 整段预填充：读者的 forward 里 FLOPs(n) = a·n + b·n²；吸收只改变 n² 的系数，每对多 4h(d_c − d_h)
    def prefill(n, absorbed):
        x = torch.randn(1, n, 48, dtype=F64)
        return flops(lambda: m(x, absorbed=absorbed))

    for absorbed, per_pair in ((True, 2 * h * (2 * d_c + d_r)), (False, 2 * h * (2 * d_h + d_r))):
        f = [prefill(n, absorbed) for n in (5, 6, 7)]
        assert f[2] - 2 * f[1] + f[0] == 2 * per_pair  # 二阶差分 = 2·(n² 的系数)
    assert all(prefill(n, True) - prefill(n, False) == n * n * 4 * h * (d_c - d_h) for n in (3, 8))
    assert_states(CACHE, "278528", "1152", "242", "120.8", "4h(d_c-d)")


@pytest.mark.claim("ch12-ridge-point", paper="NVIDIA 规格表",
                   title="屋顶线的拐点与解码转为受算力限制的批大小",
                   text="按厂商规格表的稠密 BF16 峰值与 HBM 带宽，拐点 A100 SXM 80GB ≈ 153、H100 SXM ≈ 295、H200 SXM ≈ 206 FLOP/B；"
                        "d = 8192 的线性层在解码时批大小至少 159、319、218 才受算力限制；强度不超过 d/2，"
                        "H100 上 d ≤ 590（包括论文 base 模型的 d = 512）任何批大小都受带宽限制，d = 591 要 687,994")
def test_ridge_points_and_batch():
    ridge = {name: ridge_point(a["bf16_dense_flops"], a["hbm_bytes_per_s"]) for name, a in ACCELERATORS.items()}
    assert {k: round(v) for k, v in ridge.items()} == {"A100 SXM 80GB": 153, "H100 SXM": 295, "H200 SXM": 206}
    batch = {name: compute_bound_batch(8192, a["bf16_dense_flops"], a["hbm_bytes_per_s"])
             for name, a in ACCELERATORS.items()}
    assert batch == {"A100 SXM 80GB": 159, "H100 SXM": 319, "H200 SXM": 218}
    for name, b in batch.items():  # b 是最小的：b − 1 还在带宽一侧
        assert linear_intensity(b - 1, 8192, 8192) < ridge[name] <= linear_intensity(b, 8192, 8192)
    assert_states(DERIVATION, "153", "295", "206", "159", "319", "218")
    h100 = ACCELERATORS["H100 SXM"]
    for d in (512, 590):  # d ≤ 2I*：强度 td/(d + 2t) < d/2 ≤ I*，没有解
        with pytest.raises(ValueError, match=f"d_model={d}"):
            compute_bound_batch(d, h100["bf16_dense_flops"], h100["hbm_bytes_per_s"])
    edge = compute_bound_batch(591, h100["bf16_dense_flops"], h100["hbm_bytes_per_s"])
    assert edge == 687_994
    assert linear_intensity(edge - 1, 591, 591) < ridge["H100 SXM"] <= linear_intensity(edge, 591, 591)
    assert_states(DERIVATION, "d\\le590", "d=512", "687994")
    for name, a in ACCELERATORS.items():  # 页面上的规格表与代码里的数相同
        assert_states(DERIVATION, f"|{name}|{a['bf16_dense_flops'] / 1e12:g}TFLOP/s|{a['hbm_bytes_per_s'] / 1e12:g}TB/s|")
        assert a["source"].startswith(("https://www.nvidia.com/", "https://resources.nvidia.com/"))
        assert a["source"] in plain(DERIVATION)


def smallest_batch_by_search(d, peak_flops, bytes_per_s, bytes_per_value=2, limit=10 ** 6):
    """逐个试批大小 t = 1, 2, …，用整数精确比较 2td/(b(d + 2t)) ≥ peak/bandwidth；limit 之内找不到就返回 None。"""
    ridge = Fraction(peak_flops) / Fraction(bytes_per_s)
    p, q = ridge.numerator, ridge.denominator
    for t in range(1, limit + 1):
        if 2 * t * d * q >= p * bytes_per_value * (d + 2 * t):
            return t
    return None


def test_compute_bound_batch_equals_search():
    a = ACCELERATORS["H100 SXM"]
    cases = [(d, a["bf16_dense_flops"], a["hbm_bytes_per_s"], 2) for d in (591, 592, 600, 640, 700, 1024, 4096, 8192)]
    cases += [(d, x["bf16_dense_flops"], x["hbm_bytes_per_s"], b) for x in ACCELERATORS.values()
              for d in range(320, 2400, 61) for b in (1, 2)]
    cases += [(1300, 600.0, 1.0, 2), (1300, 600, 1, 2), (4, 1.0, 1.0, 2), (3, 1.0, 1.0, 1)]  # 解恰好是整数、拐点很低
    solved = 0
    for d, peak, bw, b in cases:
        expected = smallest_batch_by_search(d, peak, bw, b)
        if d <= b * Fraction(peak) / Fraction(bw):  # 强度的上限 d/b 不超过拐点：没有解
            with pytest.raises(ValueError, match="bandwidth-bound"):
                compute_bound_batch(d, peak, bw, b)
            assert expected is None
        else:
            assert compute_bound_batch(d, peak, bw, b) == expected
            solved += 1
    assert compute_bound_batch(1300, 600.0, 1.0) == 7800  # t = I*d/(d − 2I*) = 600·1300/100，恰好取等号
    assert solved >= 40 and solved < len(cases)


def test_compute_bound_batch_bad_input():
    good = {"d_model": 8192, "peak_flops": 989.5e12, "bytes_per_s": 3.35e12, "bytes_per_value": 2}
    for name, bad in (("d_model", 0), ("d_model", 512.0), ("d_model", True), ("peak_flops", 0.0), ("peak_flops", -1e12),
                      ("bytes_per_s", 0), ("bytes_per_s", float("inf")), ("peak_flops", float("nan")),
                      ("bytes_per_value", 0), ("bytes_per_value", 1.5), ("bytes_per_s", "3.35e12")):
        with pytest.raises(ValueError, match=name):
            compute_bound_batch(**{**good, name: bad})


# ---------- KV cache, MQA/GQA/MLA ----------

@pytest.mark.claim("ch12-kv-configs", paper="§3.2.2; Llama 3.1、DeepSeek-V2 的 config.json",
                   title="真实配置的 KV 缓存大小",
                   text="bf16、batch 1：Llama-3.1-8B（32 层、8 个 KV 头、d_head 128）每词元 128 KiB，128K 词元 16 GiB；"
                        "Llama-3.1-70B（80 层）每词元 320 KiB，128K 词元 40 GiB、1M 词元 320 GiB；"
                        "DeepSeek-V2 的 MLA（60 层、d_c + d_h^R = 576）每词元 69,120 B，128K 词元 8.4375 GiB、1M 词元 67.5 GiB")
def test_kv_cache_for_real_configs():
    assert kv_cache_bytes(32, 1, 8, 128) == 128 * KIB
    assert kv_cache_bytes(32, 131072, 8, 128) == 16 * GIB
    assert kv_cache_bytes(80, 1, 8, 128) == 320 * KIB
    assert kv_cache_bytes(80, 131072, 8, 128) == 40 * GIB and kv_cache_bytes(80, 2 ** 20, 8, 128) == 320 * GIB
    assert mla_cache_bytes(60, 1, 512, 64) == 69_120
    assert mla_cache_bytes(60, 131072, 512, 64) / GIB == 8.4375
    assert mla_cache_bytes(60, 2 ** 20, 512, 64) / GIB == 67.5
    assert_states(INTERVIEW, "67.5GiB")
    assert compute_bound_batch(8192, 989.5e12, 3.35e12) == 319  # 12.9：d = 8192 是 70B 级的宽度
    assert 319 * kv_cache_bytes(80, 4096, 8, 128) / GIB == 398.75  # 70B：319 个 4K 词元的请求要 398.75 GiB
    assert 16 * kv_cache_bytes(32, 32768, 8, 128) == 64 * GIB  # 批大小 16、各 32K 词元
    assert_states(CACHE, "16\\times4GiB=64GiB")
    assert_states(CH12 + "questions.md", "398.75GiB")
    assert_states(CACHE, "128KiB", "16GiB", "320KiB", "40GiB", "320GiB", "69120", "8.4375GiB")


@pytest.mark.claim("ch12-gqa-ratio", paper="§3.2.2; Shazeer 2019; Ainslie et al. 2023",
                   title="MHA : GQA : MQA 的缓存之比",
                   text="同样的层数、头宽与长度，kv_cache_bytes 之比 MHA : GQA-g : MQA = h : g : 1；"
                        "论文 base 模型（h = 8、d_k = 64）每层每词元缓存 2·8·64 = 1024 个数 = 2·d_model")
def test_gqa_mqa_ratio():
    for h, g in ((8, 2), (32, 8), (64, 8)):
        mha, gqa, mqa = (kv_cache_bytes(6, 100, n_kv, 64) for n_kv in (h, g, 1))
        assert mha * g == gqa * h and gqa == g * mqa
    assert kv_cache_bytes(1, 1, 8, 64, bytes_per_value=1) == 1024 == 2 * 512
    assert_states(INDEX, "2\\cdot8\\cdot64=1024")


def mla_model(seed=0, d_model=48, n_heads=4, d_head=8, d_latent=12, d_rope=6):
    torch.manual_seed(seed)
    return MultiHeadLatentAttention(d_model, n_heads, d_head, d_latent, d_rope).double()


@pytest.mark.claim("ch12-mla-absorbed", paper="DeepSeek-V2 §2.1.2–2.1.3",
                   title="MLA：吸收后的计算 = 朴素计算",
                   text="MultiHeadLatentAttention 的 forward(x, absorbed=True) 只用缓存里的 c 与 k^R，"
                        "与先升维出 K、V 的 forward(x) 在 float64 下相差 < 1e-10（三组随机权重，n 从 1 到 17）")
def test_mla_absorbed_equals_naive(device):
    for seed in range(3):
        m = mla_model(seed).to(device)
        for n in (1, 5, 17):
            x = torch.randn(2, n, 48, dtype=F64).to(device)
            assert (m(x, absorbed=True) - m(x)).abs().max().item() < 1e-10


@pytest.mark.claim("ch12-mla-cache", paper="DeepSeek-V2 §2.1.3, 表 1",
                   title="MLA 每个词元的缓存",
                   text="MLA 每层每个词元缓存 d_c + d_h^R 个数（latent_cache 的两个张量，与头数无关）；"
                        "d_c = 512、d_h^R = 64 时 576 个，等于 2.25 个 KV 头（2·128 = 256 个数一组），"
                        "是同尺寸 MHA（2·128·128 = 32768）的 1/56.9")
def test_mla_cache_per_token():
    for n_heads in (2, 4, 8):
        m = mla_model(n_heads=n_heads)
        c, k_rope = m.latent_cache(torch.randn(3, 10, 48, dtype=F64))
        assert c.shape == (3, 10, 12) and k_rope.shape == (3, 10, 6)
        per_token = (c.nbytes + k_rope.nbytes) // (3 * 10)
        assert per_token == mla_cache_bytes(1, 1, 12, 6, bytes_per_value=8)
    assert 512 + 64 == 576 and 576 / (2 * 128) == 2.25
    assert f"{kv_cache_bytes(60, 1, 128, 128) / mla_cache_bytes(60, 1, 512, 64):.1f}" == "56.9"
    assert_states(CACHE, "576", "2.25", "56.9", "32768")


@pytest.mark.claim("ch12-rope-absorption", paper="DeepSeek-V2 §2.1.3",
                   title="为什么 RoPE 挡住了吸收",
                   text="若把 RoPE 直接加在 k^C = W^{UK}c 上，输入与潜向量之间的矩阵 W^{Q}ᵀ R_{s−t} W^{UK} 随相对位置变化"
                        "（偏移 1 与 2 的矩阵不同），无法预先乘成一个矩阵；解耦后内容部分的矩阵与位置无关")
def test_rope_blocks_absorption():
    torch.manual_seed(0)
    d_h, d_c = 8, 6
    w_uk = torch.randn(d_h, d_c, dtype=F64)
    w_q = torch.randn(d_h, d_h, dtype=F64)

    def rotation(offset):  # RoPE 的旋转矩阵 R_offset：apply_rope 作用在单位矩阵的各行上
        eye = torch.eye(d_h, dtype=F64).unsqueeze(-2)  # (d_h, 1, d_h)：每个基向量是长度 1 的序列
        return apply_rope(eye, positions=torch.tensor([offset])).squeeze(-2).T  # (d_h, d_h)

    m1, m2 = (w_q.T @ rotation(o) @ w_uk for o in (1, 2))
    assert (m1 - m2).abs().max().item() > 1e-3  # 随偏移变：不能预先吸收
    r3, r5, r2 = rotation(3), rotation(5), rotation(2)
    assert (r3.T @ r5 - r2).abs().max().item() < 1e-12  # RoPE 只依赖相对位置：R_3ᵀR_5 = R_2


# ---------- serving ----------

@pytest.mark.claim("ch12-paged-cache", paper="Kwon et al. 2023",
                   title="分页 KV 缓存 = 连续缓存",
                   text="读者的 Transformer 用 PagedKVCache（block_size 4，多个层共用一个块池，批里 2 个不同的序列）增量解码 11 步，"
                        "每一步每个序列的 logits 与用第 02 章的 KVCache 逐位相同；每个序列有自己的块表，只按需要申请块")
def test_paged_cache_equals_contiguous():
    torch.manual_seed(0)
    model = Transformer(50, d_model=32, num_heads=4, num_layers=2, d_ff=64, dropout=0.0).double().eval()
    src = torch.randint(3, 50, (2, 7))
    assert not torch.equal(src[0], src[1])
    memory = model.encode(src)
    plain, paged = DecoderCache(model, memory), DecoderCache(model, memory)
    pool = BlockPool(16, 4, 4, 8, dtype=F64)
    paged.layers = [(PagedKVCache(pool), cross) for _, cross in paged.layers]
    assert isinstance(plain.layers[0][0], KVCache)
    token = torch.tensor([[1], [2]])
    with torch.no_grad():
        for _ in range(11):
            a, b = decode_step(model, token, plain), decode_step(model, token, paged)
            assert a.shape == b.shape == (2, 50)
            for row in range(2):  # 一行一行比：每个序列都留着
                assert torch.equal(a[row], b[row])
            assert not torch.equal(a[0], a[1])
            token = a.argmax(-1, keepdim=True)
    assert [[len(t) for t in c.block_tables] for c, _ in paged.layers] == [[3, 3], [3, 3]]  # ⌈11 / 4⌉ = 3 块
    assert_states(CACHE, "\\lceil11/4\\rceil=3")
    assert len(pool.free) == 16 - 12
    for cache, _ in paged.layers:
        cache.release()
    assert sorted(pool.free) == list(range(16))


def test_paged_cache_rows_match_kv_cache():
    g = torch.Generator().manual_seed(3)
    pool = BlockPool(32, 4, 2, 3, dtype=F64)
    paged, plain = PagedKVCache(pool), KVCache()
    for t_new in (5, 1, 3, 1, 4):  # 跨块、不整除块大小
        k, v = (torch.randn(3, 2, t_new, 3, generator=g, dtype=F64) for _ in range(2))
        got, want = paged.update(k, v), plain.update(k, v)
        for x, y in zip(got, want):
            assert x.shape == y.shape == (3, 2, plain.length, 3) and x.dtype == F64
            for row in range(3):
                assert torch.equal(x[row], y[row])
    assert paged.length == plain.length == 14
    tables = paged.block_tables
    assert len(tables) == 3 and all(len(t) == 4 for t in tables)  # ⌈14 / 4⌉ = 4 块
    assert len({b for t in tables for b in t}) == 12  # 每个序列的块各不相同
    assert paged.nbytes() == 2 * 12 * 2 * 4 * 3 * 8


def test_paged_cache_refuses_mismatches():
    pool = BlockPool(8, 4, 2, 3, dtype=torch.float32)
    cache = PagedKVCache(pool)
    x64 = torch.randn(1, 2, 1, 3, dtype=F64)
    with pytest.raises(ValueError, match="float64.*float32"):
        cache.update(x64, x64)
    x = torch.randn(2, 2, 1, 3)
    with pytest.raises(ValueError, match="v has dtype"):
        cache.update(x, x.half())
    with pytest.raises(ValueError, match="d_head=3"):
        cache.update(torch.randn(2, 2, 1, 4), torch.randn(2, 2, 1, 4))
    with pytest.raises(ValueError, match="same shape"):
        cache.update(x, torch.randn(2, 2, 2, 3))
    cache.update(x, x)
    with pytest.raises(ValueError, match="batch 3 but the cache holds 2"):
        cache.update(torch.randn(3, 2, 1, 3), torch.randn(3, 2, 1, 3))
    assert cache.length == 1 and len(pool.free) == 6  # 拒绝的输入什么也没写


def test_paged_cache_follows_device():
    pool = BlockPool(8, 4, 2, 3, device="meta")
    k = torch.empty(2, 2, 5, 3, device="meta")
    keys, values = PagedKVCache(pool).update(k, k)
    assert keys.device.type == values.device.type == "meta" and keys.shape == (2, 2, 5, 3)
    with pytest.raises(ValueError, match="meta"):
        PagedKVCache(pool).update(torch.randn(2, 2, 5, 3), torch.randn(2, 2, 5, 3))


def test_kv_waste_bounds():
    w = kv_waste([1, 16, 17, 100], max_len=1024, block_size=16)
    assert w["used"] == 134 and w["contiguous"] == 4096 and w["paged"] == 16 + 16 + 32 + 112
    assert w["paged"] - w["used"] < 4 * 16  # 每个请求最多浪费不到一块


@pytest.mark.claim("ch12-int8-bound", paper="KV 缓存量化",
                   title="int8 KV 缓存的误差上界",
                   text="按词元对称 int8 量化：每个元素的误差 |x − x̂| ≤ s/2，s = max|x|/127；"
                        "所以相对一组最大值的误差不超过 1/254 ≈ 0.39%")
def test_int8_elementwise_bound():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 4, 33, 16, generator=g, dtype=F64) * torch.rand(2, 4, 33, 1, generator=g, dtype=F64) * 10
    q, s = quantize_int8(x)
    assert q.dtype == torch.int8 and q.abs().max().item() <= 127
    err = (dequantize_int8(q, s) - x).abs()
    assert (err <= s / 2 + 1e-12).all()
    assert (err.amax(-1, keepdim=True) / x.abs().amax(-1, keepdim=True) <= 1 / 254 + 1e-12).all()
    assert f"{100 / 254:.2f}" == "0.39"
    assert_states(CACHE, "1/254", "0.39%")


# ---------- bad input ----------

@pytest.mark.claim("ch12-bad-input", paper="—",
                   title="错误的输入给出说明形状的 ValueError",
                   text="块大小不是正整数、因果时 n_q > n_k、MLA 的尺寸不一致（d_rope 为奇数、d_latent 不比 MHA 的缓存小）、"
                        "未知的 method 都抛出 ValueError，信息里写出参数名与形状")
def test_bad_input():
    for args, kwargs, words in (((0, 128, 512, 64), {}, "n_heads"), ((128, 128, 512.0, 64), {}, "d_latent"),
                                ((128, 128, 512, 64), {"absorbed": "yes"}, "absorbed"),
                                ((128, 128, 512, 64), {"bytes_per_value": 0}, "bytes_per_value")):
        with pytest.raises(ValueError, match=words):
            mla_decode_intensity(*args, **kwargs)
    q, k, v = qkv(5, 7)
    for kwargs, words in (({"block_q": 0}, "block_q"), ({"block_k": -1}, "block_k"), ({"block_q": 2.0}, "block_q")):
        with pytest.raises(ValueError, match=words) as e:
            flash_attention(q, k, v, **kwargs)
        assert "(2, 3, 5, 16)" in str(e.value)
    with pytest.raises(ValueError, match="n_q <= n_k") as e:
        flash_attention(k, q, q, causal=True)  # n_q = 7 > n_k = 5
    assert "(2, 3, 7, 16)" in str(e.value)
    with pytest.raises(ValueError, match="causal must be True or False"):
        flash_attention(q, k, v, causal="bottom_right")
    with pytest.raises(ValueError, match="d_rope"):
        MultiHeadLatentAttention(48, 4, 8, 12, 5)
    with pytest.raises(ValueError, match="d_latent"):
        MultiHeadLatentAttention(48, 4, 8, 64, 4)
    with pytest.raises(ValueError, match="x must have shape"):
        mla_model()(torch.randn(2, 3, 47, dtype=F64))
    with pytest.raises(ValueError, match="method"):
        hbm_accesses(10, 8, 1024, "fast")
    with pytest.raises(ValueError, match="sram_bytes"):
        hbm_accesses(10, 64, 256, "flash")
    with pytest.raises(ValueError, match="n_kv_heads|d_latent"):
        mla_cache_bytes(1, 1, -1, 64)
    with pytest.raises(ValueError, match="block_size"):
        BlockPool(4, 0, 2, 8)
