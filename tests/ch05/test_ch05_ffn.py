"""Claims of chapter 05 about the position-wise feed-forward network (§3.3) and its gated variant.

Everything is checked on the reader code: PositionwiseFeedForward / EncoderLayer / DecoderLayer from
snippets/transformer.py and SwiGLUFFN, ffn_memory_terms and the count helpers from snippets/ffn.py.
"""

from __future__ import annotations

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from snippets.ffn import (
    SwiGLUFFN,
    encoder_layer_flops,
    ffn_memory_terms,
    ffn_param_count,
    mha_param_count,
    moe_ffn_counts,
    swiglu_hidden_size,
    swiglu_param_count,
)
from snippets.transformer import (
    DecoderLayer,
    EncoderLayer,
    PositionwiseFeedForward,
    count_parameters,
    encoder_layer_param_count,
)

from tests.support.reference import rand

F64 = torch.float64



def ffn64(d=16, d_ff=64, seed=0) -> PositionwiseFeedForward:
    torch.manual_seed(seed)
    return PositionwiseFeedForward(d, d_ff, dropout=0.0).to(F64).eval()


@pytest.mark.claim("ch05-ffn-conv1d", paper="§3.3",
                   text="FFN 等于两个核大小为 1 的 nn.Conv1d（中间 ReLU），float64 下误差 < 1e-12")
def test_ffn_equals_two_kernel_size_one_convolutions():
    d, d_ff = 16, 64
    ffn = ffn64(d, d_ff)
    conv1 = torch.nn.Conv1d(d, d_ff, kernel_size=1).to(F64)
    conv2 = torch.nn.Conv1d(d_ff, d, kernel_size=1).to(F64)
    with torch.no_grad():
        conv1.weight.copy_(ffn.linear1.weight.unsqueeze(-1))   # (d_ff, d) -> (d_ff, d, 1)
        conv1.bias.copy_(ffn.linear1.bias)
        conv2.weight.copy_(ffn.linear2.weight.unsqueeze(-1))
        conv2.bias.copy_(ffn.linear2.bias)
    x = rand(3, 11, d)                                          # (batch, n, d)
    via_conv = conv2(torch.relu(conv1(x.transpose(1, 2)))).transpose(1, 2)
    assert (ffn(x) - via_conv).abs().max().item() < 1e-12
    # 核大小 2 的卷积就不再逐位置了：第 0 个输出位置会看到第 1 个位置
    wide = torch.nn.Conv1d(d, d_ff, kernel_size=2).to(F64)
    x2 = x.clone()
    x2[:, 1] += 1.0
    out, out2 = wide(x.transpose(1, 2)), wide(x2.transpose(1, 2))
    assert (out[..., 0] - out2[..., 0]).abs().max().item() > 1e-3


@pytest.mark.claim("ch05-ffn-per-layer-params", paper="§3.3",
                   text="每层的 FFN 各有一组参数：N 层编码器的参数量恰为单层的 N 倍，各层 W1 互不相同")
def test_each_layer_has_its_own_ffn_parameters():
    torch.manual_seed(0)
    d, h, d_ff, n_layers = 32, 4, 128, 6
    stack = torch.nn.ModuleList(EncoderLayer(d, h, d_ff, dropout=0.0) for _ in range(n_layers))
    assert count_parameters(stack) == n_layers * encoder_layer_param_count(d, d_ff)
    w1 = [layer.ffn.linear1.weight for layer in stack]
    assert len({w.data_ptr() for w in w1}) == n_layers          # 不是同一块存储
    assert min((a - b).abs().max().item() for i, a in enumerate(w1) for b in w1[i + 1:]) > 1e-3


@pytest.mark.claim("ch05-ffn-per-token", paper="§3.3",
                   text="FFN 逐位置作用：打乱位置顺序，输出按同样方式打乱；输出 i 对输入 j≠i 的雅可比块恰为 0")
def test_ffn_is_applied_to_each_position_separately():
    ffn = ffn64()
    x = rand(2, 9, 16, seed=1)
    perm = torch.randperm(9, generator=torch.Generator().manual_seed(3))
    assert (ffn(x[:, perm]) - ffn(x)[:, perm]).abs().max().item() < 1e-12
    # 一个位置一个位置地算，和整段一起算，结果相同
    one_by_one = torch.stack([ffn(x[:, i]) for i in range(9)], dim=1)
    assert (one_by_one - ffn(x)).abs().max().item() < 1e-12
    jac = torch.autograd.functional.jacobian(ffn, x[0])        # (n, d, n, d)
    blocks = jac.abs().sum(dim=(1, 3))                          # (n, n)：每个位置对之间的总量
    off = blocks - torch.diag(torch.diagonal(blocks))
    assert off.max().item() == 0.0 and torch.diagonal(blocks).min().item() > 0


@pytest.mark.claim("ch05-ffn-param-share", paper="§3.3",
                   text="base 配置（d=512，d_ff=2048）下 FFN 占编码器层参数的 2,099,712 / 3,152,384 ≈ 66.6%，占解码器层的约 49.9%")
def test_ffn_share_of_layer_parameters():
    d, d_ff = 512, 2048
    enc = EncoderLayer(d, 8, d_ff, dropout=0.0)
    dec = DecoderLayer(d, 8, d_ff, dropout=0.0)
    ffn_n, enc_n, dec_n = count_parameters(enc.ffn), count_parameters(enc), count_parameters(dec)
    assert ffn_n == ffn_param_count(d, d_ff) == 2_099_712
    assert enc_n == 3_152_384 and count_parameters(enc.self_attn) == mha_param_count(d) == 1_050_624
    assert abs(ffn_n / enc_n - 2 / 3) < 1e-3 and round(100 * ffn_n / enc_n, 1) == 66.6
    assert round(100 * ffn_n / dec_n, 1) == 49.9
    # 一般的 d：份额 (8d²+5d)/(12d²+13d) 随 d 增大趋于 2/3
    shares = [ffn_param_count(k, 4 * k) / count_parameters(EncoderLayer(k, 4, 4 * k)) for k in (16, 64, 256)]
    assert shares == sorted(shares) and all(s < 2 / 3 for s in shares)


@pytest.mark.claim("ch05-ffn-flop-share", paper="§3.3",
                   text="FlopCounterMode 数出的编码器层 FLOPs 等于闭式 8nd²+4n²d+4nd·d_ff；d_ff=4d、n=d/4 时 FFN 占 64%，n≪d 时趋于 2/3")
def test_ffn_share_of_layer_flops():
    d, d_ff, n = 128, 512, 32                                   # d_ff = 4d，n = d/4
    torch.manual_seed(0)
    layer = EncoderLayer(d, 8, d_ff, dropout=0.0).eval()
    x = torch.randn(1, n, d)
    with torch.no_grad(), FlopCounterMode(display=False) as total:
        layer(x)
    with torch.no_grad(), FlopCounterMode(display=False) as ffn_only:
        layer.ffn(x)
    closed = encoder_layer_flops(n, d, d_ff)
    assert total.get_total_flops() == closed["total"]
    assert ffn_only.get_total_flops() == closed["ffn"]
    assert closed["ffn"] / closed["total"] == pytest.approx(0.64, abs=1e-12)
    short = encoder_layer_flops(1, d, d_ff)
    assert abs(short["ffn"] / short["total"] - 2 / 3) < 1e-3
    long = encoder_layer_flops(4 * d, d, d_ff)                  # n = 4d：注意力的 n² 项占上风
    assert long["ffn"] / long["total"] < 0.5


@pytest.mark.claim("ch05-moe-counts", paper="§3.3",
                   text="E 个论文式 FFN 加无偏置路由器的 MoE 层：参数 E·(8d²+5d)+dE，一个词元用到的参数与矩阵乘法 FLOPs 只随 top-k 增长"
                        "（2dE + k·16d²）；d=512、E=8、k=2 时参数 16,801,792，每个词元用到 4,203,520")
def test_moe_layer_counts_match_real_modules():
    d, d_ff, experts, k = 512, 2048, 8, 2
    ffns = torch.nn.ModuleList(PositionwiseFeedForward(d, d_ff, dropout=0.0) for _ in range(experts)).eval()
    router = torch.nn.Linear(d, experts, bias=False)
    counts = moe_ffn_counts(d, d_ff, experts, k)
    assert counts["params"] == count_parameters(ffns) + count_parameters(router) == 16_801_792
    assert counts["active_params"] == k * count_parameters(ffns[0]) + count_parameters(router) == 4_203_520
    x = torch.randn(1, 1, d)                                     # 一个词元
    with torch.no_grad(), FlopCounterMode(display=False) as flops:
        chosen = router(x).topk(k, dim=-1).indices[0, 0]         # 得分最高的 k 个专家
        for e in chosen.tolist():
            ffns[e](x)
    assert flops.get_total_flops() == counts["flops_per_token"] == 2 * d * experts + k * 16 * d * d
    # 参数随 E 增长，每个词元的计算只随 k 增长
    more = moe_ffn_counts(d, d_ff, 4 * experts, k)
    assert more["params"] > 3.9 * counts["params"]
    assert more["flops_per_token"] - counts["flops_per_token"] == 2 * d * 3 * experts
    with pytest.raises(ValueError, match="top_k"):
        moe_ffn_counts(d, d_ff, experts, experts + 1)


@pytest.mark.claim("ch05-ffn-memory", paper="§3.3",
                   text="FFN(x) = Σ_i m_i v_i + b2，m_i = ReLU(x·k_i + b1_i)：键是 W1 的列，值是 W2 的行（键–值记忆的读法）")
def test_ffn_is_a_sum_of_value_vectors_weighted_by_key_matches():
    ffn = ffn64(d=16, d_ff=64, seed=2)
    x = rand(4, 7, 16, seed=5)
    coeffs, values = ffn_memory_terms(ffn.linear1.weight, ffn.linear1.bias, ffn.linear2.weight, x)
    assert coeffs.shape == (4, 7, 64) and values.shape == (64, 16)
    rebuilt = torch.einsum("bnk,kd->bnd", coeffs, values) + ffn.linear2.bias
    assert (rebuilt - ffn(x)).abs().max().item() < 1e-12
    assert coeffs.min().item() == 0.0                            # ReLU：一部分槽没有被激活
    # 只留下被激活的槽（每个位置各自的一部分），输出不变
    active = coeffs > 0
    assert 0.2 < active.double().mean().item() < 0.8
    out = ffn(x)
    for b_ in range(4):
        for t in range(7):
            idx = active[b_, t].nonzero().squeeze(1)             # 这个位置被激活的槽
            assert 0 < len(idx) < 64
            sparse = coeffs[b_, t, idx] @ values[idx] + ffn.linear2.bias
            assert (sparse - out[b_, t]).abs().max().item() < 1e-12
    with pytest.raises(ValueError, match="do not chain"):
        ffn_memory_terms(ffn.linear1.weight, ffn.linear1.bias, ffn.linear2.weight, rand(2, 3, 5))


@pytest.mark.claim("ch05-swiglu-params", paper="§3.3",
                   text="d_ff = 8d/3 的 SwiGLU 与 d_ff = 4d 的两矩阵 FFN 参数恰好相等（8d²）；LLaMA 的取整规则给出 11008、13824、17920、22016、28672")
def test_swiglu_parameter_match_and_llama_rounding():
    d = 48                                                       # 8d/3 = 128 是整数
    swiglu = SwiGLUFFN(d, 8 * d // 3)
    relu_no_bias = 2 * d * (4 * d)
    assert count_parameters(swiglu) == swiglu_param_count(d, 8 * d // 3) == relu_no_bias == 8 * d * d
    x = torch.randn(2, 5, d)
    assert swiglu(x).shape == (2, 5, d)
    # LLaMA-7B / 13B / 33B / 65B 与 LLaMA 2 70B 的中间层宽度
    assert [swiglu_hidden_size(k) for k in (4096, 5120, 6656, 8192)] == [11008, 13824, 17920, 22016]
    assert swiglu_hidden_size(8192, multiple_of=4096, ffn_dim_multiplier=1.3) == 28672
    # 取整之后不再严格持平：d = 4096 时多 0.78%
    extra = swiglu_param_count(4096, 11008) / (8 * 4096 * 4096) - 1
    assert 0.0075 < extra < 0.0080


def test_swiglu_matches_formula():
    torch.manual_seed(0)
    m = SwiGLUFFN(8, 24).to(F64)
    x = rand(2, 3, 8, seed=9)
    a = x @ m.w_gate.weight.T
    ref = ((a * torch.sigmoid(a)) * (x @ m.w_up.weight.T)) @ m.w_down.weight.T
    assert (m(x) - ref).abs().max().item() < 1e-12
