"""Chapter 11, 残差流与深度：从 Post-LN 到 Attention Residuals: the claims its pages cite about the code and
the paper's numbers, one test each (CONVENTIONS.md, "Claims"). The toy experiment's claims are in
test_ch11_experiments.py."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
import torch

from snippets.norms import RMSNorm, rmsnorm_jacobian
from snippets.residual_stream import (AttnResDecoder, block_attnres_two_phase, depth_attention, depth_attention_cached,
                                      depth_weights, inter_block_phase, rms_keys)
from snippets.transformer import count_parameters
from snippets.experiments.attention_residuals import MODEL as TOY_MODEL
from tests.support.pages import assert_states, chapter

CH11 = chapter("11")
INDEX, DERIVATION, ATTNRES, CODE, INTERVIEW = (CH11 + p for p in ("index.md", "derivation.md", "derivation-attnres.md",
                                                                    "code.md", "interview.md"))
F64 = torch.float64


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def sources(s: int = 5, shape=(2, 3), d: int = 8, seed: int = 0) -> torch.Tensor:
    return torch.randn(s, *shape, d, generator=gen(seed), dtype=F64)


# ---------------------------------------------------------------------------- depth attention
@pytest.mark.claim("ch11-zero-query", paper="AttnRes §3.1", title="零查询：α = 1/S，输出是各来源的平均",
                   text="伪查询为零时，每个位置对 S 个来源的权重都恰好是 1/S，depth_attention 的输出等于来源的平均")
def test_zero_query_gives_the_mean():
    for s in (1, 2, 7):
        v = sources(s)
        alpha = depth_weights(v, torch.zeros(8, dtype=F64), gain=torch.rand(8, generator=gen(1), dtype=F64))
        assert torch.equal(alpha, torch.full_like(alpha, 1 / s))
        assert torch.allclose(depth_attention(v, torch.zeros(8, dtype=F64)), v.mean(0), atol=1e-15)
    assert_states(ATTNRES, r"\alpha_{i\to l}=\frac{1}{l}")


@pytest.mark.claim("ch11-init-average", paper="AttnRes §5", title="零初始化：训练从等权平均开始",
                   text="新建的 AttnResDecoder（伪查询全为零）里，每个子层的输入恰好是它全部来源的平均，"
                        "即普通残差的和除以来源数")
def test_fresh_model_starts_from_the_average():
    torch.manual_seed(0)
    model = AttnResDecoder(11, 3, 16, 2, 32).double()
    assert torch.equal(model.queries.detach(), torch.zeros_like(model.queries))
    model(torch.randint(0, 11, (2, 5), generator=gen(0)), record=True)
    tr = model.trace
    srcs = [tr["x0"]] + tr["outputs"]
    for j, h in enumerate(tr["inputs"]):
        assert torch.allclose(h, torch.stack(srcs[:j + 1]).mean(0), atol=1e-12)
        assert torch.allclose(h * (j + 1), sum(srcs[:j + 1]), atol=1e-11)
    assert torch.allclose(tr["final"], torch.stack(srcs).mean(0), atol=1e-12)


def shared_weights(n_blocks=None, n_layers=3, d=16, seed=0, eps=0.0):
    """同一组权重的 Pre-LN 基线与零初始化的 AttnRes（Full 或 Block），float64；eps 是模型里每个 RMSNorm 的 ε。"""
    torch.manual_seed(seed)
    base = AttnResDecoder(13, n_layers, d, 2, 2 * d, residual="standard").double()
    attn = AttnResDecoder(13, n_layers, d, 2, 2 * d, n_blocks=n_blocks).double()
    missing, unexpected = attn.load_state_dict(base.state_dict(), strict=False)
    assert sorted(missing) == ["key_gains", "queries"] and not unexpected
    for model in (base, attn):
        for m in model.modules():
            if isinstance(m, RMSNorm):
                m.eps = eps
    return base, attn


@pytest.mark.claim("ch11-init-equals-prenorm", paper="AttnRes §5",
                   title="零初始化的 AttnRes 就是 Pre-LN 基线",
                   text="同样的权重下，伪查询为零的 AttnResDecoder（Full、Block N = 3、N = 1）与 pre-RMSNorm 的普通残差模型"
                        "是同一个函数：RMSNorm 的 ε = 0 时 float64 下 logits 相差 < 1e-12，对共享权重的梯度相差 < 1e-10；"
                        "ε = 1e-6（默认）时只差 ε 的影响（< 1e-4）")
def test_zero_init_attnres_is_the_prenorm_baseline():
    x = torch.randint(0, 13, (2, 7), generator=gen(3))
    for n_blocks in (None, 3, 1):
        base, attn = shared_weights(n_blocks)
        logits_base, logits_attn = base(x), attn(x)
        assert (logits_attn - logits_base).abs().max() < 1e-12
        logits_base.square().sum().backward()
        logits_attn.square().sum().backward()
        grads = dict(attn.named_parameters())
        for name, p in base.named_parameters():
            assert (grads[name].grad - p.grad).abs().max() < 1e-10 * (1 + p.grad.abs().max()), name
        # 每个子层的输入是基线残差流除以来源数：尺度被随后的 RMSNorm 除掉
        base(x, record=True)
        attn(x, record=True)
        counts = [a.shape[0] for a in attn.trace["alphas"]]
        for h_base, h_attn, k in zip(base.trace["inputs"] + [base.trace["final"]],
                                     attn.trace["inputs"] + [attn.trace["final"]], counts):
            assert torch.allclose(h_attn * k, h_base, atol=1e-12)
        # 默认 ε 下只差 ε 的影响；一旦伪查询离开零，就是另一个函数
        base, attn = shared_weights(n_blocks, eps=1e-6)
        assert 0 < (attn(x) - base(x)).abs().max() < 1e-4
        with torch.no_grad():
            attn.queries.normal_(generator=gen(4))
        assert (attn(x) - base(x)).abs().max() > 1e-3
    assert_states(ATTNRES, "零初始化的AttnRes就是Pre-LN基线", "logits相差<1e-12，梯度相差<1e-10")


@pytest.mark.claim("ch11-preln-jacobian", paper="AttnRes §2.1; Curse of Depth",
                   title="Pre-LN 一个子层的雅可比：I 加上按 1/rms(h) 缩小的分支",
                   text="pre-RMSNorm 子层 h ↦ h + f(RMSNorm(h)) 的雅可比恰为 I + J_f·J_RMS(h)（误差 < 1e-12）；"
                        "把 h 放大 c 倍（c = 4），分支项 J − I 的谱范数恰好缩小 c 倍（ε = 0）：h 越大，这一层越接近恒等")
def test_preln_block_jacobian_tends_to_identity():
    torch.manual_seed(0)
    model = AttnResDecoder(13, 1, 16, 2, 32, residual="standard").double()
    norm, ffn = model.norms[1], model.sublayers[1]                    # 位置逐个独立的 FFN 子层
    norm.eps = 0.0
    with torch.no_grad():
        norm.gain.uniform_(0.5, 1.5, generator=gen(5))
    h = torch.randn(16, generator=gen(6), dtype=F64) * 3
    block = lambda v: v + ffn(norm(v))                                                   # noqa: E731
    jac = torch.autograd.functional.jacobian(block, h)
    a = norm(h).detach()
    j_f = torch.autograd.functional.jacobian(ffn, a)
    eye = torch.eye(16, dtype=F64)
    assert (jac - (eye + j_f @ rmsnorm_jacobian(h, norm.gain.detach(), eps=0.0))).abs().max() < 1e-12
    branch = torch.linalg.matrix_norm(jac - eye, ord=2)
    scaled = torch.linalg.matrix_norm(torch.autograd.functional.jacobian(block, 4 * h) - eye, ord=2)
    assert abs(scaled * 4 / branch - 1) < 1e-12
    assert_states(DERIVATION, r"\frac{\partial h_{l+1}}{\partial h_l}=I+J_{F_l}J_{RMS}(h_l)", "恰好缩小c倍")


@pytest.mark.claim("ch11-attnres-gradient", paper="AttnRes §3.1",
                   title="没有恒等路径，梯度怎样到达早层",
                   text="h = Σ α_i v_i 对来源 v_i 的梯度恰为 α_i·g + α_i·(g·(v_i − h))·J_RMS(v_i)ᵀ(w⊙γ)（与自动求导相差 < 1e-12，"
                        "ε = 0）：第一项是按权重分到的直接路径，第二项经过 softmax；伪查询为零时第二项为零，梯度恰为 g/K")
def test_attnres_gradient_reaches_every_source():
    k, d = 5, 8
    v = torch.randn(k, d, generator=gen(7), dtype=F64) * torch.tensor([1.0, 3.0, 0.5, 2.0, 1.0], dtype=F64)[:, None]
    g = torch.randn(d, generator=gen(8), dtype=F64)                   # 上游梯度 ∂L/∂h
    gain = torch.rand(d, generator=gen(9), dtype=F64) + 0.5
    for scale in (0.0, 1.0):
        w = scale * torch.randn(d, generator=gen(10), dtype=F64)
        values = v.clone().requires_grad_(True)
        h = depth_attention(values, w, gain, eps=0.0)
        (h @ g).backward()
        alpha = depth_weights(v, w, gain, eps=0.0)
        h = h.detach()
        for i in range(k):
            expected = alpha[i] * g + alpha[i] * (g @ (v[i] - h)) * (rmsnorm_jacobian(v[i], eps=0.0).T @ (w * gain))
            assert (values.grad[i] - expected).abs().max() < 1e-12
        if scale == 0.0:
            assert torch.allclose(values.grad, (g / k).expand(k, d), atol=1e-15)
    assert_states(ATTNRES, r"\frac{\partial\mathcal L}{\partial v_i}")


def stacked_attention(values, keys, query, gain=None):
    """「每层 stack 一次」的写法：与 depth_attention_cached 同样的输入输出，来源先叠成 (K, ..., d)。"""
    stack = torch.stack(list(values))                                 # (K, ..., d)：每层一份副本
    alpha = depth_weights(stack, query, gain)
    return (alpha.unsqueeze(-1) * stack).sum(dim=0), alpha


@pytest.mark.claim("ch11-activation-memory", paper="AttnRes §3.1",
                   title="Full AttnRes 的激活内存：随深度线性，外加 L²/2 个权重",
                   text="反向传播要留下的激活（saved-tensor 钩子，按存储去重，不计参数），AttnResDecoder 的 Full AttnRes 比同样积木的"
                        "普通残差每个词元多出的个数，对子层数 L = 4、8、16 的 L² 系数恰为 1/2（d = 16 与 32 相同，是 softmax 权重）；"
                        "每层 stack 一次全部来源的写法，系数是 1.5d + 1（d = 16 时 25，d = 32 时 49）；"
                        "缓存键的写法与 stack 的写法输出相同（< 1e-12）")
def test_full_attnres_activation_memory_is_linear_in_depth():
    def saved_per_token(model, x):
        params = {p.untyped_storage().data_ptr() for p in model.parameters()}
        storages = {}

        def pack(t):
            st = t.untyped_storage()
            if st.data_ptr() not in params:
                storages[st.data_ptr()] = st.nbytes()
            return t

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            model(x)
        return sum(storages.values()) // (x.numel() * 8)                 # float64：每个词元多少个数

    x = torch.randint(0, 11, (2, 8), generator=gen(0))
    for d in (16, 32):
        extra = {}
        for n_layers in (2, 4, 8):
            torch.manual_seed(0)
            full = AttnResDecoder(11, n_layers, d, 2, 2 * d).double()
            base = AttnResDecoder(11, n_layers, d, 2, 2 * d, residual="standard").double()
            extra[2 * n_layers] = saved_per_token(full, x) - saved_per_token(base, x)
        # e(L) = a·L² + b·L + c：L = 4、8、16 时 a = (e16 − 3e8 + 2e4) / 96
        quadratic = Fraction(extra[16] - 3 * extra[8] + 2 * extra[4], 96)
        assert quadratic == Fraction(1, 2), (d, extra)
        # 对照：每层把全部来源 stack 成一个张量（论文图 2 的写法）
        stacked = {}
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr("snippets.residual_stream.depth_attention_cached", stacked_attention)
            for n_layers in (2, 4, 8):
                torch.manual_seed(0)
                full = AttnResDecoder(11, n_layers, d, 2, 2 * d).double()
                base = AttnResDecoder(11, n_layers, d, 2, 2 * d, residual="standard").double()
                stacked[2 * n_layers] = saved_per_token(full, x) - saved_per_token(base, x)
        assert Fraction(stacked[16] - 3 * stacked[8] + 2 * stacked[4], 96) == Fraction(3 * d, 2) + 1, (d, stacked)
    # 缓存键的写法与「每层 stack 一次」的写法是同一个运算
    v = sources(6, (2, 3))
    q, gain = torch.randn(8, generator=gen(11), dtype=F64), torch.rand(8, generator=gen(12), dtype=F64) + 0.5
    h, alpha = depth_attention_cached(list(v), [rms_keys(t) for t in v], q, gain)
    assert (h - depth_attention(v, q, gain)).abs().max() < 1e-12
    assert (alpha - depth_weights(v, q, gain)).abs().max() < 1e-12
    assert_states(ATTNRES, "L^2/2", "d=16时是25，d=32时是49，即1.5d+1")


@pytest.mark.claim("ch11-gain-fold", paper="AttnRes §3.1", title="2d 个参数，d 个自由度",
                   text="logit 只依赖 w⊙γ：depth_weights(v, w, γ) 与 depth_weights(v, w⊙γ) 相差 < 1e-14；"
                        "伪查询为零时键的 RMSNorm 增益的梯度恰为 0，伪查询的梯度不为 0")
def test_gain_and_query_are_one_parameter():
    v = sources(5)
    w, gain = torch.randn(8, generator=gen(13), dtype=F64), torch.rand(8, generator=gen(14), dtype=F64) + 0.5
    assert (depth_weights(v, w, gain) - depth_weights(v, w * gain)).abs().max() < 1e-14
    w0 = torch.zeros(8, dtype=F64, requires_grad=True)
    g0 = gain.clone().requires_grad_(True)
    target = torch.randn(2, 3, 8, generator=gen(15), dtype=F64)
    (depth_attention(v, w0, g0) * target).sum().backward()
    assert torch.equal(g0.grad, torch.zeros(8, dtype=F64)) and w0.grad.abs().max() > 1e-3
    assert_states(ATTNRES, "只有d个自由度")


@pytest.mark.claim("ch11-scale-invariance", paper="AttnRes §3.1", title="权重不随来源的尺度变化",
                   text="把一个来源乘以正数 c（c = 10、0.1），α 的变化 < 1e-4（RMSNorm 的尺度不变性，只差 ε = 1e-6 的影响）；"
                        "把全部来源乘以 c，输出乘以 c（ε = 0 时精确到 1e-12）：值没有被归一化")
def test_rescaling_a_source():
    v, q = sources(), torch.randn(8, generator=gen(2), dtype=F64)
    alpha = depth_weights(v, q)
    for c in (10.0, 0.1):
        w = v.clone()
        w[2] *= c
        assert (depth_weights(w, q) - alpha).abs().max() < 1e-4
        assert torch.allclose(depth_attention(c * v, q, eps=0.0), c * depth_attention(v, q, eps=0.0), rtol=1e-12)
    # 只差 ε：ε 很大时尺度不变性就不成立了
    w = v.clone()
    w[2] *= 0.01
    assert (depth_weights(w, q, eps=1.0) - depth_weights(v, q, eps=1.0)).abs().max() > 1e-3


@pytest.mark.claim("ch11-over-depth", paper="AttnRes §3.1", title="softmax 沿深度，每个词元各算各的",
                   text="α 沿第 0 维（来源）求和为 1；改变一个词元的全部来源，只改变这个词元的输出，其他词元的输出不变")
def test_softmax_runs_over_depth_per_token():
    v, q = sources(6, (4,)), torch.randn(8, generator=gen(3), dtype=F64)
    alpha = depth_weights(v, q)                                   # (6, 4)
    assert alpha.shape == (6, 4) and torch.allclose(alpha.sum(0), torch.ones(4, dtype=F64))
    w = v.clone()
    w[:, 1] = torch.randn(6, 8, generator=gen(4), dtype=F64)
    before, after = depth_attention(v, q), depth_attention(w, q)
    assert torch.equal(before[[0, 2, 3]], after[[0, 2, 3]]) and not torch.allclose(before[1], after[1])


@pytest.mark.claim("ch11-convex", paper="AttnRes §3", title="输出是来源的凸组合：没有恒等项",
                   text="对任意伪查询，depth_attention 的输出是来源的凸组合：范数不超过最大的来源；"
                        "一个来源的 logit 远大于其余时，输出就是这个来源本身（不是残差再加上它）")
def test_output_is_a_convex_combination():
    v = sources(5, (3,), seed=5) * torch.tensor([1.0, 3.0, 0.5, 2.0, 1.0], dtype=F64)[:, None, None]
    for seed in range(5):
        q = 5 * torch.randn(8, generator=gen(seed), dtype=F64)
        h = depth_attention(v, q)
        assert (h.norm(dim=-1) <= v.norm(dim=-1).max(0).values + 1e-12).all()
    # 让来源 3 的 logit 远大于其余：q 沿它的方向放大
    v = torch.randn(4, 8, generator=gen(6), dtype=F64) * 3            # 每个位置 (d,)：一个词元
    v = v / v.norm(dim=-1, keepdim=True)                              # 四个单位向量
    q = 200 * v[3]
    assert torch.allclose(depth_attention(v, q), v[3], atol=1e-8)


def test_bad_input_names_the_argument():
    v = sources()
    with pytest.raises(ValueError, match=r"query .*\(8,\).*got query \(7,\)"):
        depth_attention(v, torch.zeros(7, dtype=F64))
    with pytest.raises(ValueError, match=r"gain .*got gain \(9,\)"):
        depth_attention(v, torch.zeros(8, dtype=F64), gain=torch.ones(9, dtype=F64))
    with pytest.raises(ValueError, match=r"at least one source.*\(0, 2, 3, 8\)"):
        depth_attention(v[:0], torch.zeros(8, dtype=F64))
    with pytest.raises(ValueError, match=r"values must have shape \(K, \.\.\., d\)"):
        depth_attention(torch.zeros(8, dtype=F64), torch.zeros(8, dtype=F64))
    # 缓存键的写法：来源与键一一对应、形状相同
    keys = [rms_keys(t) for t in v]
    with pytest.raises(ValueError, match=r"one key per source: len\(values\)=5, len\(keys\)=4"):
        depth_attention_cached(list(v), keys[:4], torch.zeros(8, dtype=F64))
    with pytest.raises(ValueError, match=r"keys\[2\] must have shape \(2, 3, 8\) like values\[0\].*got keys\[2\] \(2, 3, 7\)"):
        depth_attention_cached(list(v), keys[:2] + [keys[2][..., :7]] + keys[3:], torch.zeros(8, dtype=F64))
    with pytest.raises(ValueError, match=r"non-empty lists"):
        depth_attention_cached([], [], torch.zeros(8, dtype=F64))
    # 两阶段：先查 queries、gains 的形状，再取下标（空的 queries 不是 IndexError）
    blocks = sources(3)
    with pytest.raises(ValueError, match=r"queries must hold at least one query.*\(0, 8\)"):
        inter_block_phase(blocks, torch.zeros(0, 8, dtype=F64))
    with pytest.raises(ValueError, match=r"gains must have shape \(S, d\) like queries \(2, 8\).*got gains \(3, 8\)"):
        inter_block_phase(blocks, torch.zeros(2, 8, dtype=F64), gains=torch.ones(3, 8, dtype=F64))
    with pytest.raises(ValueError, match=r"queries must have shape \(S, d\).*got queries \(8,\)"):
        inter_block_phase(blocks, torch.zeros(8, dtype=F64))
    with pytest.raises(ValueError, match=r"at least one block.*\(0, 2, 3, 8\)"):
        inter_block_phase(blocks[:0], torch.zeros(2, 8, dtype=F64))
    with pytest.raises(ValueError, match=r"residual must be"):
        AttnResDecoder(8, 2, 8, 2, 16, residual="dense")
    with pytest.raises(ValueError, match=r"n_blocks must be an int in \[1, 4\]"):
        AttnResDecoder(8, 2, 8, 2, 16, n_blocks=5)
    with pytest.raises(ValueError, match=r"n_blocks=4 cannot split 6 sublayers"):
        AttnResDecoder(8, 3, 8, 2, 16, n_blocks=4)
    with pytest.raises(ValueError, match=r"needs residual='attnres'"):
        AttnResDecoder(8, 2, 8, 2, 16, n_blocks=2, residual="standard")


# ---------------------------------------------------------------------------- Block AttnRes
@pytest.mark.claim("ch11-two-phase", paper="AttnRes §3.2, §4", title="两阶段计算与一次 softmax 完全相同",
                   text="第一阶段对块内 S 个查询批量算块间注意力，第二阶段用在线 softmax 并入块内部分和："
                        "float64 下与对 N + 1 个来源做一次 softmax 的结果相差 < 1e-10，在 AttnResDecoder 的一个块上也是")
def test_two_phase_equals_one_softmax():
    for n_blocks, s, seed in ((1, 1, 0), (3, 4, 1), (6, 2, 2)):
        blocks = sources(n_blocks, (2, 5), 8, seed) * 3
        queries = torch.randn(s, 8, generator=gen(seed + 10), dtype=F64) * 2
        gains = torch.rand(s, 8, generator=gen(seed + 20), dtype=F64) + 0.5
        ws = [torch.randn(8, 8, generator=gen(seed + 30 + i), dtype=F64) for i in range(s)]
        fs = [lambda h, w=w: torch.tanh(h @ w) * 4 for w in ws]
        inputs, summary = block_attnres_two_phase(blocks, fs, queries, gains)
        partial = None
        for i, f in enumerate(fs):                                   # 一次 softmax 的写法
            srcs = torch.cat([blocks] + ([] if partial is None else [partial[None]]))
            h = depth_attention(srcs, queries[i], gains[i])
            assert (h - inputs[i]).abs().max() < 1e-10
            out = f(h)
            partial = out if partial is None else partial + out
        assert (partial - summary).abs().max() < 1e-10
    m, z, acc = inter_block_phase(blocks, queries, gains)
    assert m.shape == (s, 2, 5) and acc.shape == (s, 2, 5, 8)
    # 读者的模型：第二块的两阶段计算与 AttnResDecoder 自己（一次 softmax）算出的子层输入相同
    torch.manual_seed(1)
    model = AttnResDecoder(13, 3, 16, 2, 32, n_blocks=3).double()
    with torch.no_grad():
        model.queries.normal_()
        model.key_gains.uniform_(0.5, 1.5)
    x = torch.randint(0, 13, (2, 6), generator=gen(1))
    model(x, record=True)
    tr, size = model.trace, model.block_size
    done = torch.stack([tr["x0"], sum(tr["outputs"][:size])])                  # b_0, b_1
    mask = torch.ones(6, 6, dtype=torch.bool).tril()
    fs = [lambda h, j=j: model._sublayer(j, h, mask) for j in range(size, 2 * size)]
    with torch.no_grad():
        inputs, summary = block_attnres_two_phase(done, fs, model.queries[size:2 * size],
                                                  model.key_gains[size:2 * size])
    for i in range(size):
        assert (inputs[i] - tr["inputs"][size + i]).abs().max() < 1e-10
    assert (summary - sum(tr["outputs"][size:2 * size])).abs().max() < 1e-10


@pytest.mark.claim("ch11-block-extremes", paper="AttnRes §3.2", title="N = L 就是 Full AttnRes，N = 1 只剩嵌入与块内求和",
                   text="同样的权重下，n_blocks = 2·n_layers 的 Block AttnRes 与 Full AttnRes 的 logits 相同；"
                        "n_blocks = 1 时每个子层只看两个来源：嵌入 b_0 与此前全部子层输出的和")
def test_block_extremes():
    torch.manual_seed(0)
    full = AttnResDecoder(13, 3, 16, 2, 32).double()
    with torch.no_grad():
        full.queries.normal_()
    x = torch.randint(0, 13, (2, 6), generator=gen(0))
    for n_blocks, same in ((6, True), (3, False)):
        block = AttnResDecoder(13, 3, 16, 2, 32, n_blocks=n_blocks).double()
        block.load_state_dict(full.state_dict())
        assert torch.allclose(block(x), full(x), atol=1e-12) == same
    one = AttnResDecoder(13, 3, 16, 2, 32, n_blocks=1).double()
    one.load_state_dict(full.state_dict())
    one(x, record=True)
    tr = one.trace
    assert [a.shape[0] for a in tr["alphas"]] == [1, 2, 2, 2, 2, 2, 2]
    assert one.block_size == 6


@pytest.mark.claim("ch11-param-overhead", paper="AttnRes §3.1", title="每个 AttnRes 运算多 2d 个参数",
                   text="AttnResDecoder 比同样积木的普通残差模型多 (L + 1)·2d 个参数（L = 2·n_layers 个子层，即 (2L_b + 1)·2d）："
                        "每个子层前的 AttnRes 一个伪查询和一个 RMSNorm 增益（2d），外加输出层前的一个；玩具模型（L = 8、d = 48）多 864 个")
def test_parameter_overhead():
    for n_layers, d, n_blocks in ((2, 16, None), (3, 32, 3), (4, 64, 4)):
        attn = AttnResDecoder(50, n_layers, d, 4, 2 * d, n_blocks=n_blocks)
        base = AttnResDecoder(50, n_layers, d, 4, 2 * d, residual="standard")
        sublayers = attn.n_sublayers                                   # 本章的 L
        assert count_parameters(attn) - count_parameters(base) == (sublayers + 1) * 2 * d
    toy = {"full": AttnResDecoder(**TOY_MODEL), "base": AttnResDecoder(**TOY_MODEL, residual="standard")}
    assert count_parameters(toy["full"]) - count_parameters(toy["base"]) == 864
    assert_states(ATTNRES, r"(L+1)\cdot2d", r"(2L_b+1)\cdot2d", "是864个")


@pytest.mark.claim("ch11-source-count", paper="AttnRes §3.2, §5", title="读多少个来源：O(L²) 对 O(N²)",
                   text="54 个子层（27 层）：Full AttnRes 的 55 个 AttnRes 运算共读 1540 个来源向量；"
                        "每块 6 个子层（9 块）时每个运算最多读 10 个来源，共 325 个：块内第一层读已完成的块，其余再加部分和")
def test_source_counts():
    model = AttnResDecoder(5, 27, 4, 1, 4)
    model(torch.zeros(1, 1, dtype=torch.long), record=True)
    full = [a.shape[0] for a in model.trace["alphas"]]
    block = AttnResDecoder(5, 27, 4, 1, 4, n_blocks=9)
    assert block.block_size == 6
    block(torch.zeros(1, 1, dtype=torch.long), record=True)
    counts = [a.shape[0] for a in block.trace["alphas"]]
    assert len(full) == len(counts) == 55 and sum(full) == 55 * 56 // 2 == 1540
    assert max(counts) == 10 and counts[-1] == 10 and sum(counts) == 325

    def two_phase(counts, group):
        """第一阶段每组只读一遍组开始时已有的来源；第二阶段每层只读组内新增的；最后输出层汇总一次。"""
        starts = range(0, len(counts) - 1, group)
        phase1 = sum(counts[j0] for j0 in starts)
        phase2 = sum(counts[j] - counts[j - j % group] for j in range(len(counts) - 1))
        return phase1 + phase2 + counts[-1]

    assert (two_phase(counts, block.block_size), two_phase(full, 6)) == (100, 415)
    assert_states(ATTNRES, "1540", "325", "10个来源", "约读100个", "约读415个")


# ---------------------------------------------------------------------------- the paper's numbers
TABLE2_FITS = {"baseline": (1.891, 0.057), "block": (1.870, 0.058), "full": (1.865, 0.057)}


def fitted_loss(variant: str, compute: float) -> float:
    a, alpha = TABLE2_FITS[variant]
    return a * compute ** -alpha


def compute_for_loss(variant: str, loss: float) -> float:
    a, alpha = TABLE2_FITS[variant]
    return (a / loss) ** (1 / alpha)


@pytest.mark.claim("ch11-compute-equivalent", paper="AttnRes 表 2", title="1.25× 是等损失的算力比，不是训练速度",
                   text="由表 2 的拟合式：5.6 PFLOP/s-days 时基线 1.714、Block AttnRes 1.692；"
                        "基线要到约 7.02 PFLOP/s-days 才达到 1.692，7.02 / 5.6 ≈ 1.25")
def test_compute_equivalent_ratio():
    base, block = fitted_loss("baseline", 5.6), fitted_loss("block", 5.6)
    assert (round(base, 3), round(block, 3)) == (1.714, 1.692)
    c = compute_for_loss("baseline", block)
    assert round(c, 2) == 7.02 and round(c / 5.6, 2) == 1.25
    assert_states(INDEX, "1.891", "1.870", "1.865", "0.057", "0.058")
    # 每个数都在它的式子里：C = 5.6 代入两条拟合式，解出的 C，比值
    assert_states(ATTNRES, r"1.891\times5.6^{-0.057}\approx1.714", r"1.870\times5.6^{-0.058}\approx1.692",
                  r"\frac{1.891}{1.6922}\Big)^{1/0.057}\approx7.02", r"\frac{7.02}{5.6}&\approx1.25")
    # 代入四舍五入后的 1.692：7.03，比值 1.256
    rounded = compute_for_loss("baseline", 1.692)
    assert (round(block, 4), round(rounded, 2), round(rounded / 5.6, 3)) == (1.6922, 7.03, 1.256)
    assert_states(ATTNRES, "得7.03，比值1.256")


def compute_ratio(variant: str, compute: float, baseline=TABLE2_FITS["baseline"]) -> float:
    """How much more compute the baseline needs to reach `variant`'s fitted loss at `compute`."""
    a, alpha = baseline
    return (a / fitted_loss(variant, compute)) ** (1 / alpha) / compute


# Table 2's validation losses (five sizes): Baseline, Block AttnRes, Full AttnRes, mHC(-lite)
TABLE2_LOSSES = {"194M": (1.931, 1.909, 1.899, 1.906), "241M": (1.895, 1.875, 1.874, 1.869),
                 "296M": (1.829, 1.809, 1.804, 1.807), "436M": (1.766, 1.746, 1.737, 1.747),
                 "528M": (1.719, 1.693, 1.692, 1.694)}


@pytest.mark.claim("ch11-compute-c-dependence", paper="AttnRes 表 2",
                   title="1.25× 随代入的算力变，Full AttnRes 的比值是 1.27×",
                   text="Block 与基线的指数不同：等损失算力比在 C = 0.5、1、2、5.6 时是 1.20×、1.22×、1.23×、1.25×；"
                        "基线指数挪 ±0.0005，C = 5.6 处在 1.23×–1.28× 之间；Full AttnRes 与基线同指数，比值恒为 1.27×；"
                        "表 2 的 mHC(-lite) 在 5 个规模里比 Full 低 1 次、比 Block 低 3 次；6ND 粗算最大运行约 4.4 PFLOP/s-days")
def test_compute_ratio_depends_on_c():
    ratios = [round(compute_ratio("block", c), 2) for c in (0.5, 1, 2, 5.6)]
    assert ratios == [1.20, 1.22, 1.23, 1.25]
    shifted = [compute_ratio("block", 5.6, baseline=(1.891, 0.057 + e)) for e in (-0.0005, 0.0005)]
    assert (round(min(shifted), 2), round(max(shifted), 2)) == (1.23, 1.28)
    full = {round(compute_ratio("full", c), 3) for c in (0.1, 1, 5.6, 50)}
    assert full == {1.275} and round(compute_ratio("full", 5.6), 2) == 1.27
    mhc_below_block = sum(m < b for _, b, f, m in TABLE2_LOSSES.values())
    full_below_mhc = sum(f < m for _, b, f, m in TABLE2_LOSSES.values())
    assert (mhc_below_block, full_below_mhc) == (3, 4)
    assert TABLE2_LOSSES["241M"][3] < min(TABLE2_LOSSES["241M"][1:3])
    assert round(6 * 528e6 * 119.0e9 / (1e15 * 86400), 1) == 4.4
    assert_states(ATTNRES, "1.20×、1.22×、1.23×、1.25×", "1.23×与1.28×之间", r"(1.891/1.865)^{1/0.057}\approx1.27",
                  "约4.4PFLOP/s-days", "Full AttnRes有4个低于它，Block AttnRes只有2个")
    assert_states(CH11 + "questions.md", "1.20×、1.22×、1.23×、1.25×", "是1.27×", "241M时mHC(-lite)1.869")
    assert_states(INTERVIEW, "1.20×到1.25×", "1.27×")


@pytest.mark.claim("ch11-gpqa-noise", paper="AttnRes 表 3; Rein et al. 2023",
                   title="GPQA-Diamond 只有 198 题：一次评测的标准误约 3.5 个点",
                   text="GPQA-Diamond 198 道题，正确率 40% 左右时一次评测的二项标准误 √(0.4·0.6/198) ≈ 3.5 个点，"
                        "+7.5 约是它的两倍，且两组各只有一次运行")
def test_gpqa_single_run_standard_error():
    se = 100 * math.sqrt(0.4 * 0.6 / 198)
    assert round(se, 1) == 3.5
    for accuracy in (0.369, 0.444):                   # 表 3 的两个正确率，标准误都在 3.4–3.6 之间
        assert 3.4 <= 100 * math.sqrt(accuracy * (1 - accuracy) / 198) <= 3.6
    assert 1.9 < 7.5 / se < 2.3
    assert_states(ATTNRES, r"\sqrt{0.4\times0.6/198}\approx3.5", "只有198道题")
    assert_states(INTERVIEW, "只有198道题", "约3.5个点")


# 表 1：每个词元、每层、残差机制本身的读写（以 d 为单位的系数；mHC 另有与 d 无关的 2m² + 4m）
def table1_io(n_blocks=8, block=16, streams=4):
    n, s, m = n_blocks, block, streams
    reads_writes = {
        "standard": [(2, 1)],                                          # 残差合并：读 2d，写 d
        "block": [(n / s, 1), (3, 1)],                                 # 第一阶段（摊到 S 层）、第二阶段
        "full": [(n - 1, 1), (s - 1, 1)],                              # 附录 B 的两阶段排程
        "mhc": [(m, 0), (m, 1), (1, m), (m, m), (2 * m, m)],           # 算 α、β、A；用 α、β、A；合并
    }
    return {k: sum(r + w for r, w in rows) for k, rows in reads_writes.items()}


@pytest.mark.claim("ch11-table1-io", paper="AttnRes 表 1、§4.2", title="表 1：残差路径的读写，对照普通残差的 3d",
                   text="表 1 的典型值（L = 128、N = 8、S = 16、m = 4）：普通残差 3d、Block AttnRes (N/S + 5)d = 5.5d、"
                        "Full AttnRes 两阶段 (S + N)d = 24d、mHC (8m + 2)d ≈ 34d；Block 约是普通残差的 1.8 倍；"
                        "预填充 15 GB 按序列切分后每设备约 1.9 GB，16K 分块后 < 0.3 GB")
def test_table1_residual_io():
    io = table1_io()
    assert io == {"standard": 3, "block": 5.5, "full": 24, "mhc": 34}
    assert io["block"] == 8 / 16 + 5 and io["full"] == 16 + 8 and io["mhc"] == 8 * 4 + 2
    assert round(io["block"] / io["standard"], 1) == 1.8
    # 15 GB → 1.9 GB 是按 8 个设备切；再分块到 16K（128K 的 1/8）
    assert round(15 / 8, 1) == 1.9 and 15 / 8 * 16 / 128 < 0.3
    assert_states(ATTNRES, "|普通残差|3d|3d|", "|BlockAttnRes|(N/S+5)d|5.5d|", "(S+N)d|24d|", "约34d|",
                  "约是它的1.8倍", "0.3GB以下")


TABLE3 = {"MMLU": (73.5, 74.6), "MMLU-Pro": (52.2, 52.2), "GPQA-Diamond": (36.9, 44.4), "BBH": (76.3, 78.0),
          "ARC-C": (64.6, 65.7), "HellaSwag": (83.2, 83.4), "TriviaQA": (69.9, 71.8), "GSM8K": (81.7, 82.4),
          "MGSM": (64.9, 66.1), "Math": (53.5, 57.1), "CMath": (84.7, 85.1), "HumanEval": (59.1, 62.2),
          "MBPP": (72.0, 73.9), "CMMLU": (82.0, 82.9), "C-Eval": (79.6, 82.5)}
QUOTED = ("MMLU", "MMLU-Pro", "GPQA-Diamond", "Math", "HumanEval", "C-Eval")


@pytest.mark.claim("ch11-table3", paper="AttnRes 表 3", title="+7.5 是 GPQA-Diamond，MMLU 是 +1.1",
                   text="表 3：GPQA-Diamond 36.9 → 44.4（+7.5），MMLU 73.5 → 74.6（+1.1），MMLU-Pro 52.2 → 52.2（持平）；"
                        "15 个基准里 14 个更高、1 个持平，最大的提升是 GPQA-Diamond")
def test_table3_deltas():
    deltas = {k: round(after - before, 1) for k, (before, after) in TABLE3.items()}
    assert deltas["GPQA-Diamond"] == 7.5 and deltas["MMLU"] == 1.1 and deltas["MMLU-Pro"] == 0
    assert max(deltas, key=deltas.get) == "GPQA-Diamond"
    assert len(TABLE3) == 15 and sum(d > 0 for d in deltas.values()) == 14
    for name in QUOTED:
        before, after = TABLE3[name]
        assert_states(INDEX, f"|{name}|{before}|{after}|")
    assert_states(ATTNRES, "15个基准里，AttnRes有14个更高")
    assert_states(INTERVIEW, "GPQA-Diamond+7.5", "MMLU+1.1")


@pytest.mark.claim("ch11-block-count", paper="AttnRes §5", title="48B 模型：54 个子层、每块 6 个、10 个来源",
                   text="27 个 Transformer 层 = 54 个子层；每块 6 个子层得 9 块，加上嵌入共 10 个来源；"
                        "这正是 AttnResDecoder(n_layers=27, n_blocks=9) 的划分")
def test_block_count_of_the_48b_model():
    model = AttnResDecoder(5, 27, 4, 1, 4, n_blocks=9)
    assert model.n_sublayers == 54 and model.block_size == 6
    model(torch.zeros(1, 1, dtype=torch.long), record=True)
    assert model.trace["alphas"][-1].shape[0] == 10
    assert_states(INDEX, "54个子层", "9块", "10个来源")


@pytest.mark.claim("ch11-stream-norm", paper="AttnRes §7", title="‖h_l‖ 随深度：O(√L) 还是 O(L)",
                   text="‖h_l‖² = Σ‖v_i‖² + 2Σ_{i<j} v_i·v_j：等范数、两两不相关时 ‖h_L‖ = c√L；"
                        "两两余弦都是 ρ > 0 时 ‖h_L‖ = c√(L + L(L−1)ρ)，L 大时按 c√ρ·L 线性增长")
def test_stream_norm_identity():
    d, big = 4096, 64
    g = gen(7)
    # 两两不相关：随机高维向量；等余弦 ρ：共享一个分量
    for rho in (0.0, 0.25):
        shared = torch.randn(d, generator=g, dtype=F64)
        v = [math.sqrt(rho) * shared + math.sqrt(1 - rho) * torch.randn(d, generator=g, dtype=F64) for _ in range(big)]
        h = torch.stack(v).sum(0)
        c = torch.stack(v).norm(dim=-1).mean().item()
        predicted = c * math.sqrt(big + big * (big - 1) * rho)
        assert abs(h.norm().item() / predicted - 1) < 0.08
        gram = torch.stack(v) @ torch.stack(v).T
        assert torch.allclose(h.norm() ** 2, gram.sum())              # ‖Σv‖² = Σ_i Σ_j v_i·v_j，恒等式
    assert_states(DERIVATION, r"c\sqrt{L}", r"c\sqrt{\rho}L")
