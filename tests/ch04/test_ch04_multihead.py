"""Chapter 04's derivations and reader code: the per-head loop equals the batched module, the
reshape is only a view, W^O splits into a sum over heads, the per-head rank bound, GQA against
MHA, MQA and PyTorch's own enable_gqa, parameter and KV-cache formulas, and bad input.
"""

from __future__ import annotations

import re

import pytest
import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import FlopCounterMode

from snippets.attention import KVCache, MultiHeadAttention, causal_mask, padding_mask, scaled_dot_product_attention
from snippets.multihead import (GroupedQueryAttention, attention_params, head_contributions, kv_cache_bytes,
                                multi_head_loop)
from tests.support.copyrun import run_fresh
from tests.support.pages import assert_states, chapter
from tests.support.reference import F64, gen, rand
from tests.support.sections import DOCS, ROOT, page_code_includes, section

CH04 = chapter("04")


def mha64(d: int, h: int, bias: bool = True, seed: int = 0) -> MultiHeadAttention:
    torch.manual_seed(seed)
    return MultiHeadAttention(d, h, bias=bias).double()


@pytest.mark.claim("ch04-loop-equals-batched", paper="§3.2.2",
                   text="逐头循环照抄论文公式（multi_head_loop）与一次算完 h 个头的 MultiHeadAttention 在 float64 下相差小于 1e-12：自注意力、交叉注意力、共用掩码与逐头掩码、带与不带偏置")
def test_loop_equals_batched():
    for h, bias in ((1, True), (4, False), (16, True)):
        m = mha64(32, h, bias)
        x, y = rand(2, 5, 32, seed=1), rand(2, 7, 32, seed=2)
        cases = [(x, x, x, None), (x, y, y, None), (x, x, x, causal_mask(5)),
                 (x, y, y, padding_mask([7, 3], 7)), (x, y, y, torch.rand(2, h, 5, 7, generator=gen(3)) < 0.6)]
        for q, k, v, mask in cases:
            a, wa = m(q, k, v, mask)
            b, wb = multi_head_loop(m, q, k, v, mask)
            assert (a - b).abs().max() < 1e-12 and (wa - wb).abs().max() < 1e-12
    # the loop really is a reference: a wrong head width would not match
    m = mha64(32, 4)
    x = rand(2, 5, 32, seed=4)
    assert not torch.allclose(m(x, x, x)[0], MultiHeadAttention(32, 2).double()(x, x, x)[0])


@pytest.mark.claim("ch04-reshape-is-view", paper="§3.2.2",
                   text="拆头只是换个看法：view(batch, n, h, d_k).transpose(1, 2) 与原张量共用同一块内存（不复制），第 i 个头恰是第 i 段 d_k 列；transpose(1, 2).reshape 拼回去逐比特等于原张量")
def test_split_is_a_view_and_merge_inverts_it():
    m = mha64(48, 6)
    x = rand(3, 5, 48, seed=5)
    projected = m.w_q(x)  # (3, 5, 48)
    split = m._split_heads(projected)  # the module's own split: (3, 6, 5, 8)
    assert split.shape == (3, 6, 5, 8)
    assert split.untyped_storage().data_ptr() == projected.untyped_storage().data_ptr()  # a view, no copy
    for i in range(6):
        assert torch.equal(split[:, i], projected[..., i * 8:(i + 1) * 8])
    merged = split.transpose(1, 2).reshape(3, 5, 48)
    assert torch.equal(merged, projected)
    assert not split.is_contiguous()  # why the module needs reshape (not view) after the transpose


@pytest.mark.claim("ch04-wo-sum", paper="§3.2.2",
                   text="W^O 按行切成 h 块：Concat(head_1, …, head_h) W^O = Σ_i head_i W_i^O（float64 下相差小于 1e-12）；去掉一项就是剪掉这个头")
def test_wo_is_a_sum_over_heads():
    for h in (1, 2, 4, 8):
        m = mha64(32, h)
        concat = rand(2, 6, 32, seed=h)
        parts = head_contributions(m, concat)  # (2, h, 6, 32)
        assert parts.shape == (2, h, 6, 32)
        assert (parts.sum(1) + m.w_o.bias - m.w_o(concat)).abs().max() < 1e-12
        if h > 1:  # dropping head 0 equals zeroing its slice of the concatenation
            zeroed = concat.clone()
            zeroed[..., :m.d_head] = 0
            assert (parts[:, 1:].sum(1) + m.w_o.bias - m.w_o(zeroed)).abs().max() < 1e-12


class AtenOps(TorchDispatchMode):
    """Records every aten op a forward pass runs: (name, input shapes, output shape)."""

    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        shapes = [tuple(a.shape) for a in args if isinstance(a, torch.Tensor)]
        self.ops.append((func.__name__, shapes, tuple(out.shape) if isinstance(out, torch.Tensor) else None))
        return out


@pytest.mark.claim("ch04-what-grows-with-h", paper="§3.2.2",
                   text="h 变大时矩阵乘法的 FLOPs 不变（FlopCounterMode），变的是（数 MultiHeadAttention 前向实际执行的 aten 运算）：softmax 处理 h·n² 个分数，算分数的批量矩阵乘法做 h·n² 个内积、每个只有 d_k = d/h 维")
def test_flops_fixed_weights_grow_with_h():
    d, n = 64, 10
    flops = set()
    for h in (1, 2, 4, 8, 16):
        m = MultiHeadAttention(d, h)
        x = torch.randn(1, n, d)
        with FlopCounterMode(display=False) as counter:
            m(x, x, x)
        flops.add(counter.get_total_flops())
        with AtenOps() as trace:
            m(x, x, x)
        softmax = [shapes[0] for name, shapes, _ in trace.ops if "softmax" in name]
        assert sum(torch.Size(s).numel() for s in softmax) == h * n * n  # exponentials the softmax takes
        scores = [shapes for name, shapes, out in trace.ops  # the QKᵀ product: its output ends in (n, n)
                  if name.startswith(("bmm", "mm", "matmul")) and out[-2:] == (n, n)]
        assert len(scores) == 1
        a, b = scores[0]
        assert a[-1] == b[-2] == d // h  # each dot product is d_k = d/h long
        assert torch.Size(a[:-1]).numel() * b[-1] == h * n * n  # … and there are h·n² of them
    assert len(flops) == 1


@pytest.mark.claim("ch04-rank-bound", paper="§3.2.2",
                   text="每个头的分数矩阵 Q_i K_iᵀ 的秩不超过 d_k：n = 32、d_model = 64、h = 8 时 8 个头的奇异值从第 9 个起都是 0（相对 1e-10 以下），而 h = 1（d_k = 64）时秩是 min(n, d) = 32")
def test_per_head_score_rank():
    x = rand(1, 32, 64, seed=6)
    for h, expected in ((8, 8), (4, 16), (1, 32)):
        m = mha64(64, h)
        q, k = m._split_heads(m.w_q(x)), m._split_heads(m.w_k(x))  # (1, h, 32, d_k)
        s = torch.linalg.svdvals(q @ k.transpose(-2, -1))[0]  # (h, 32)
        for i in range(h):
            tail = s[i, expected:] if expected < 32 else s[i, :0]
            assert tail.numel() == 0 or tail.max() < 1e-10 * s[i, 0]
            assert s[i, expected - 1] > 1e-6 * s[i, 0]  # and the rank is reached
            assert int(torch.linalg.matrix_rank(q[0, i] @ k[0, i].T)) == min(32, m.d_head)


@pytest.mark.claim("ch04-rank-one-argmax", paper="§3.2.2",
                   text="低秩瓶颈的极端情形：d_k = 1 的头分数是 s_ij = a_i b_j，每一行最大的位置只能是 b 的最大或最小处，所以无论 n 多大，它最多「锐利地」看 2 个不同的位置")
def test_rank_one_head_attends_to_at_most_two_positions():
    g = gen(7)
    for n in (8, 32, 128):
        for _ in range(50):
            a, b = torch.randn(n, 1, generator=g, dtype=F64), torch.randn(n, 1, generator=g, dtype=F64)
            cols = set((a @ b.T).argmax(-1).tolist())
            assert cols <= {int(b.argmax()), int(b.argmin())} and len(cols) <= 2
        # a rank-2 head (d_k = 2) can already point every query at a different key: rotations
        angles = torch.arange(n, dtype=F64) * (2 * torch.pi / n)
        u = torch.stack([angles.cos(), angles.sin()], -1)  # (n, 2)
        assert (u @ u.T).argmax(-1).tolist() == list(range(n))


@pytest.mark.claim("ch04-every-head-sees-all", paper="§3.2.2",
                   text="每个头都看整个序列：没有掩码时每个头给每个位置的权重都大于 0，改动最后一个词元，第一个位置上每个头的输出都变")
def test_every_head_sees_every_position():
    m = mha64(32, 8)
    x = rand(1, 9, 32, seed=8)
    _, w = m(x, x, x)
    assert (w > 0).all()  # (1, 8, 9, 9): every head, every query, every key

    def heads(inp):  # each head's output before W^O: (1, 8, 9, d_k)
        q, k, v = (m._split_heads(lin(inp)) for lin in (m.w_q, m.w_k, m.w_v))
        return scaled_dot_product_attention(q, k, v)[0]

    y = x.clone()
    y[0, -1] += 1.0  # change only the last token
    change = (heads(x)[0, :, 0] - heads(y)[0, :, 0]).abs().amax(-1)  # (8,): position 0, per head
    assert (change > 1e-6).all()


def load_gqa_from_mha(g: GroupedQueryAttention, m: MultiHeadAttention) -> GroupedQueryAttention:
    g.load_state_dict(m.state_dict())  # n_kv_heads = n_heads: the same shapes, the same names
    return g


@pytest.mark.claim("ch04-gqa-equals-mha", paper="§3.2.2",
                   text="GroupedQueryAttention 在 n_kv_heads = n_heads 时与 MultiHeadAttention（同样的权重）在 float64 下相差小于 1e-12，包括掩码与交叉注意力")
def test_gqa_with_g_equal_h_is_mha():
    for h, bias in ((1, True), (4, True), (8, False)):
        m = mha64(32, h, bias)
        g = load_gqa_from_mha(GroupedQueryAttention(32, h, h, bias=bias).double(), m)
        x, y = rand(2, 5, 32, seed=9), rand(2, 7, 32, seed=10)
        for q, kv, mask in ((x, x, causal_mask(5)), (x, y, padding_mask([7, 2], 7)), (x, y, None)):
            a, wa = m(q, kv, kv, mask)
            b, wb = g(q, kv, kv, mask)
            assert (a - b).abs().max() < 1e-12 and (wa - wb).abs().max() < 1e-12


@pytest.mark.claim("ch04-gqa-torch", paper="§3.2.2",
                   text="GroupedQueryAttention 的注意力部分与 PyTorch 的 F.scaled_dot_product_attention(..., enable_gqa=True) 在 float64 下相差小于 1e-12（h = 8，g ∈ {1, 2, 4, 8}，带与不带因果掩码）")
def test_gqa_matches_torch_enable_gqa(device):
    x = rand(2, 6, 64, seed=11).to(device)
    for kv_heads in (1, 2, 4, 8):
        torch.manual_seed(kv_heads)
        g = GroupedQueryAttention(64, 8, kv_heads).double().to(device)
        q = g.w_q(x).view(2, 6, 8, 8).transpose(1, 2)
        k = g.w_k(x).view(2, 6, kv_heads, 8).transpose(1, 2)  # only kv_heads heads go in
        v = g.w_v(x).view(2, 6, kv_heads, 8).transpose(1, 2)
        for causal in (False, True):
            ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
            ref = g.w_o(ref.transpose(1, 2).reshape(2, 6, 64))
            ours, _ = g(x, x, x, causal_mask(6, device=device) if causal else None)
            assert (ours - ref).abs().max() < 1e-12


@pytest.mark.claim("ch04-gqa-mqa", paper="§3.2.2",
                   text="n_kv_heads = 1 就是多查询注意力（MQA）：h 个查询头用同一对 K、V，与「一个 K、V 投影、逐头循环」的写法在 float64 下相差小于 1e-12；n_kv_heads = g 时第 j 组的头共用第 j 对 K、V")
def test_gqa_with_one_group_is_mqa():
    x = rand(2, 5, 32, seed=12)
    for kv_heads in (1, 2):
        torch.manual_seed(0)
        g = GroupedQueryAttention(32, 4, kv_heads).double()
        out, w = g(x, x, x)
        k_all, v_all = g.w_k(x), g.w_v(x)  # (2, 5, kv_heads·8)
        heads = []
        for i in range(4):
            j = i // (4 // kv_heads)  # the group of query head i
            q_i = F.linear(x, g.w_q.weight[i * 8:(i + 1) * 8], g.w_q.bias[i * 8:(i + 1) * 8])
            o_i, w_i = scaled_dot_product_attention(q_i, k_all[..., j * 8:(j + 1) * 8], v_all[..., j * 8:(j + 1) * 8])
            assert (w_i - w[:, i]).abs().max() < 1e-12
            heads.append(o_i)
        assert (g.w_o(torch.cat(heads, -1)) - out).abs().max() < 1e-12


@pytest.mark.claim("ch04-gqa-params", paper="§3.2.2",
                   text="参数量：不带偏置时 2d² + 2d·(g·d_k)，与实际模块逐个相等；g = h 时是 4d²，与 h 无关（h ∈ {1, 2, 4, 8, 16}），g = 1 时最少")
def test_parameter_counts():
    d = 64
    for h in (1, 2, 4, 8, 16):
        for g in [x for x in (1, 2, 4, 8, 16) if h % x == 0]:
            for bias in (False, True):
                mod = GroupedQueryAttention(d, h, g, bias=bias)
                assert sum(p.numel() for p in mod.parameters()) == attention_params(d, h, g, bias)
            assert attention_params(d, h, g, False) == 2 * d * d + 2 * d * g * (d // h)
        assert attention_params(d, h, h, False) == sum(p.numel() for p in MultiHeadAttention(d, h, bias=False).parameters())
    assert len({attention_params(d, h, h, False) for h in (1, 2, 4, 8, 16)}) == 1


def cached_stack_matches_recompute(kv_heads: int, dtype: torch.dtype, tol: float) -> list[tuple[int, int]]:
    """L GroupedQueryAttention layers with residuals, decoded one position at a time with the reader's KVCache.

    Each step's output equals a full causal recompute of the prefix; returns (cache bytes, formula) per step."""
    d, h, n_layers, batch, steps = 32, 4, 3, 2, 6
    torch.manual_seed(kv_heads)
    layers = [GroupedQueryAttention(d, h, kv_heads).to(dtype) for _ in range(n_layers)]
    x = torch.randn(batch, steps, d, dtype=dtype)

    def stack(inp, caches=None, mask=None):  # (batch, m, d) -> (batch, m, d)
        for i, layer in enumerate(layers):
            inp = inp + layer(inp, inp, inp, mask, cache=None if caches is None else caches[i])[0]
        return inp

    caches = [KVCache() for _ in layers]
    sizes = []
    for t in range(1, steps + 1):
        step = stack(x[:, t - 1:t], caches)  # only the new position goes in
        full = stack(x[:, :t], mask=causal_mask(t))[:, -1:]  # the whole prefix again, no cache
        assert (step - full).abs().max() < tol
        assert all(c.k.shape == (batch, kv_heads, t, d // h) for c in caches)
        sizes.append((sum(c.nbytes() for c in caches),
                      kv_cache_bytes(n_layers, t, kv_heads, d // h, torch.finfo(dtype).bits // 8, batch)))
    return sizes


@pytest.mark.claim("ch04-kv-cache-bytes", paper="§3.2.2",
                   text="KV 缓存 = 2·L·B·t·g·d_k·b 字节：3 层 GroupedQueryAttention（h = 4，g ∈ {4, 2, 1}）逐位置增量解码，每一步的输出与整段重算一致，读者的 KVCache 实际保存的 K、V 张量每一步都与公式逐字节相等；L = 80、h = 64、d_k = 128、t = 4096、fp16 时 MHA 10 GiB、GQA（g = 8）1.25 GiB、MQA 160 MiB")
def test_kv_cache_bytes():
    for kv_heads, dtype, tol in ((4, torch.float64, 1e-12), (2, torch.float32, 1e-5), (1, torch.float64, 1e-12)):
        sizes = cached_stack_matches_recompute(kv_heads, dtype, tol)
        assert all(actual == formula for actual, formula in sizes), (kv_heads, sizes)
    gib, mib = 2**30, 2**20
    mha, gqa, mqa = (kv_cache_bytes(80, 4096, g, 128, 2) for g in (64, 8, 1))
    assert (mha / gib, gqa / gib, mqa / mib) == (10, 1.25, 160)
    assert_states(CH04, "10GiB", "1.25GiB", "160MiB")


@pytest.mark.claim("ch04-mla-cache", title="DeepSeek-V2 的 MLA 每词元每层缓存 576 个数", paper="§3.2.2",
                   text="MLA 的缓存（DeepSeek-V2，arXiv 2405.04434）：每词元每层 d_c + d_h^R = 512 + 64 = 576 个数；128 个头、头宽 128 的 MHA 按 kv_cache_bytes 是 2·128·128 = 32768 个，MLA 只占 1.76%，与 g = 2.25 组的 GQA 一样多；页面写出这些数")
def test_mla_cache_against_mha_and_gqa():
    d_c, d_rope, heads, d_head = 512, 64, 128, 128  # DeepSeek-V2's latent width, decoupled RoPE key width, heads
    mla = d_c + d_rope
    mha = kv_cache_bytes(1, 1, heads, d_head, bytes_per_value=1)  # numbers per token per layer
    assert (mla, mha) == (576, 32768)
    g_equiv = mla / (2 * d_head)  # the GQA group count with the same cache
    assert g_equiv == 2.25 and kv_cache_bytes(1, 1, 9, d_head, bytes_per_value=1) == 4 * mla  # g = 9 = 4·2.25 caches 4× as much
    ratio = f"{100 * mla / mha:.2f}%"
    assert ratio == "1.76%"
    assert_states(CH04, "512+64=576", "2·128·128=32768".replace("·", "\\cdot"), ratio, f"{g_equiv}组")


BAD = [
    ("not-divisible-kv", lambda: GroupedQueryAttention(64, 8, 3), ValueError, ["n_heads=8 is not divisible by n_kv_heads=3"]),
    ("not-divisible-d", lambda: GroupedQueryAttention(10, 4, 2), ValueError, ["d_model=10 is not divisible by n_heads=4"]),
    ("zero-kv", lambda: GroupedQueryAttention(64, 8, 0), ValueError, ["n_kv_heads must be a positive int", "n_kv_heads=0"]),
    ("float-heads", lambda: GroupedQueryAttention(64, 8.0, 2), ValueError, ["n_heads must be a positive int", "n_heads=8.0"]),
    ("input-width", lambda: GroupedQueryAttention(64, 8, 2)(torch.randn(2, 5, 32), torch.randn(2, 5, 32), torch.randn(2, 5, 32)),
     ValueError, ["query must have shape (batch, n, d_model=64)", "query (2, 5, 32)"]),
    ("input-dtype", lambda: GroupedQueryAttention(64, 8, 2)(torch.randn(2, 5, 64).double(), torch.randn(2, 5, 64), torch.randn(2, 5, 64)),
     TypeError, ["query has dtype torch.float64"]),
    ("mask", lambda: GroupedQueryAttention(64, 8, 2)(torch.randn(2, 5, 64), torch.randn(2, 5, 64), torch.randn(2, 5, 64),
                                                     torch.ones(2, 4, 5, dtype=torch.bool)), ValueError, ["mask (2, 4, 5) cannot broadcast"]),
    ("params", lambda: attention_params(64, 8, 3), ValueError, ["n_heads=8", "n_kv_heads=3"]),
    ("kv-negative", lambda: kv_cache_bytes(2, -1, 8, 64), ValueError, ["seq_len must be a non-negative int", "seq_len=-1"]),
]


@pytest.mark.claim("ch04-gqa-bad-input", paper="§3.2.2",
                   text="坏输入得到清楚的错误：n_heads 不能被 n_kv_heads 整除、d_model 不能被 n_heads 整除、形状或 dtype 不对，报错都写出参数名与数值")
@pytest.mark.parametrize("name, call, exc, parts", BAD, ids=[b[0] for b in BAD])
def test_bad_input(name, call, exc, parts):
    with pytest.raises(exc) as info:
        call()
    for part in parts:
        assert part in str(info.value), (part, str(info.value))


@pytest.mark.claim("ch04-base-dims", paper="§3.2.2",
                   text="论文的 h = 8、d_k = d_v = d_model/h = 64；表 3 (A) 每一行都保持 h·d_k = 512（MultiHeadAttention(512, h) 的头宽等于页面写的 d_k）；页面按 h 写出的 BLEU、单头差 0.9、h = 32 比最好低 0.4，以及表 3 (B) 的 d_k = 32、16 两行，与 snippets/experiments/heads.py 里抄录的表 3 一致")
def test_paper_dimensions():
    from snippets.experiments.heads import PAPER_TABLE3_A, PAPER_TABLE3_B
    assert MultiHeadAttention(512, 8).d_head == 64
    for row in PAPER_TABLE3_A:
        assert MultiHeadAttention(512, row["h"]).d_head == row["d_k"]
        assert_states(CH04, f"h={row['h']}", f"d_k={row['d_k']}")
        assert_states(CH04, f"h={row['h']}{'（base）' if row['h'] == 8 else ''}：{row['bleu']}")  # BLEU in h order
    best = max(r["bleu"] for r in PAPER_TABLE3_A)
    bleu = {r["h"]: r["bleu"] for r in PAPER_TABLE3_A}
    assert_states(CH04, f"{best - bleu[1]:.1f}BLEU")  # "single-head attention is 0.9 BLEU worse"
    assert_states(CH04, f"h=32比最好低{best - bleu[32]:.1f}")
    for row in PAPER_TABLE3_B:  # (B): h = 8, only d_k shrinks, so h·d_k < 512
        assert row["h"] * row["d_k"] < 512
        assert_states(CH04, f"d_k={row['d_k']}：{row['bleu']}")


@pytest.mark.slow  # the page's sections in a fresh interpreter
def test_page_sections_run_and_work_together(tmp_path):
    """The page's included sections, concatenated, run alone and the classes work together."""
    page = DOCS / CH04 / "code.md"
    program = "\n\n".join(section(path, name) for path, name in page_code_includes(page))
    smoke = """
torch.manual_seed(0)
m = MultiHeadAttention(16, 4).double()
x = torch.randn(2, 5, 16, dtype=torch.float64)
a, _ = m(x, x, x)
b, _ = multi_head_loop(m, x, x, x)
assert (a - b).abs().max() < 1e-12
g = GroupedQueryAttention(16, 4, 2, bias=False)
assert sum(p.numel() for p in g.parameters()) == attention_params(16, 4, 2, bias=False)
assert kv_cache_bytes(1, 3, 2, 4, 2) == 2 * 3 * 2 * 4 * 2
print("ok")
"""
    assert run_fresh(program + "\n" + smoke, tmp_path).strip() == "ok"


def test_module_sections_have_the_expected_names():
    from tests.support.sections import parse_sections
    names = [n for n, _ in parse_sections(ROOT / "snippets" / "multihead.py")]
    assert names == ["imports", "loop", "head-sum", "gqa", "formulas"]
    assert re.search(r"_check_mha_inputs\(self, ", section(ROOT / "snippets" / "multihead.py", "gqa"))
