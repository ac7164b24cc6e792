"""第 03 章的练习：稳定的 softmax、带掩码的 softmax、缩放点积注意力。参考答案：snippets/softmax.py、snippets/attention.py。"""

from __future__ import annotations

import torch

from snippets import attention, softmax
from snippets.exercises.core import DEVICE, Case, Exercise, Failure, Property, compare, matches_reference, raises, randn, register

PAGE = "03-scaled-dot-product/derivation-softmax.md"
WHY_SQRT = "03-scaled-dot-product/derivation.md"
CODE = ("03-scaled-dot-product/code.md", "code")
DTYPES = [torch.float64, torch.float32]


def _scores(rng, batch, n_q, n_k, dtype, scale=1.0, offset=0.0):
    shape = (batch, n_q, n_k) if batch else (n_q, n_k)
    return randn(rng, *shape, dtype=dtype, scale=scale) + offset


# --------------------------------------------------------------------------- stable_softmax
def _ref_softmax(z):
    return softmax.stable_softmax(z)


def _make_plain(rng, batch, n_q, n_k, dtype):
    return Case((_scores(rng, batch, n_q, n_k, dtype, scale=3.0),))


def _make_large(rng, batch, n_q, n_k, dtype):
    return Case((_scores(rng, batch, n_q, n_k, dtype, scale=3.0, offset=1000.0),), note="每个数都在 1000 附近")


def _make_rows_apart(rng, n_q, n_k, dtype):
    z = _scores(rng, 0, n_q + 1, n_k, dtype, scale=3.0)
    z[0] += 800.0
    z[1:] -= 800.0  # 第一行在 +800 附近，其余行在 −800 附近
    return Case((z,), note="第一行在 +800 附近，其余行在 −800 附近")


def _make_bad_softmax(rng, which):
    z = [torch.tensor([[1, 2, 3]], device=DEVICE), torch.empty(2, 0, device=DEVICE)][which]
    return Case((z,), note=["整数张量", "最后一维为空"][which])


SHAPES = {"batch": [0, 1, 2], "n_q": [1, 2, 3, 5], "n_k": [1, 2, 3, 6, 9], "dtype": DTYPES}

register(Exercise(
    id="ch03.stable_softmax", questions=("3.4", "3.13"), name="stable_softmax", title="数值稳定的 softmax",
    signature="stable_softmax(z)",
    statement="沿最后一维计算 softmax(z)：每行的数减去这一行的最大值再取指数、归一化。"
              "logits 在 1000 附近、或不同行相差上千时，结果仍然是有限的概率（不出现 inf、NaN）。",
    shapes="z (..., n) 浮点张量 → p (..., n)，与 z 同 dtype，每行和为 1。",
    bad_input="z 不是浮点张量：TypeError；最后一维为空：ValueError。报错信息要写出参数名 z。",
    reference=_ref_softmax,
    solution=CODE,
    stub='''def stable_softmax(z):
    """沿最后一维的 softmax。z (..., n) 浮点张量 → (..., n)，每行和为 1。
    z 不是浮点张量：TypeError；最后一维为空：ValueError（报错信息写出 z）。"""
    raise NotImplementedError("在这里写你的实现")
''',
    properties=[
        Property("matches", "普通大小的 logits：与 softmax 的定义一致（随机形状、float32 与 float64）",
                 "沿哪一维归一化？每一行（最后一维）的和应该是 1。", PAGE, "numerics",
                 _make_plain, matches_reference(), dims=SHAPES),
        Property("large-logits", "logits 都在 1000 附近：不溢出，结果与小 logits 平移后相同",
                 "exp(1000) 在 float64 里也是 inf：先减去最大值，指数的参数就都 ≤ 0。", PAGE, "numerics",
                 _make_large, matches_reference(), dims=SHAPES),
        Property("rows-apart", "不同行相差上千：每行各自减去自己的最大值",
                 "减去的是每一行自己的最大值（keepdim=True），不是整个张量的最大值：否则较小的那些行整行下溢成 0/0。",
                 PAGE, "numerics", _make_rows_apart, matches_reference(),
                 dims={"n_q": [1, 2, 3], "n_k": [1, 2, 4, 7], "dtype": DTYPES}),
        Property("bad-input", "坏输入（整数张量、空的最后一维）抛出 TypeError/ValueError，并写出参数名 z",
                 "先检查 z：is_floating_point()、z.shape[-1] > 0；报错信息里写上 z 和它的形状。", PAGE, "numerics",
                 _make_bad_softmax, raises("z"), dims={"which": [0, 1]}),
    ],
))


# --------------------------------------------------------------------------- masked_softmax
def _ref_masked(scores, mask=None):
    return softmax.masked_softmax(scores, mask)


def _random_mask(rng, n_q, n_k, full_rows=False):
    mask = torch.rand(n_q, n_k, generator=rng) < 0.6
    mask[torch.arange(n_q), torch.randint(n_k, (n_q,), generator=rng)] = True  # 每行至少一个 True
    if full_rows:
        mask[0] = False  # 第一行整行被遮住
    return mask


def _make_nomask(rng, batch, n_q, n_k, dtype):
    return Case((_scores(rng, batch, n_q, n_k, dtype, scale=3.0), None))


def _make_masked(rng, batch, n_q, n_k, dtype):
    return Case((_scores(rng, batch, n_q, n_k, dtype, scale=3.0), _random_mask(rng, n_q, n_k)),
                note="每行至少有一个可以看的位置")


def _make_masked_large(rng, batch, n_q, n_k, dtype):
    return Case((_scores(rng, batch, n_q, n_k, dtype, scale=3.0, offset=1000.0), _random_mask(rng, n_q, n_k)),
                note="分数都在 1000 附近")


def _make_full_row(rng, batch, n_q, n_k, dtype):
    return Case((_scores(rng, batch, n_q, n_k, dtype, scale=3.0), _random_mask(rng, n_q, n_k, full_rows=True)),
                note="第一行整行被遮住")


def _check_grad(fn, case, reference):
    scores, mask = case.args
    upstream = torch.linspace(-1, 1, scores.numel(), dtype=scores.dtype).reshape(scores.shape)

    def grad_of(f):
        s = scores.detach().clone().requires_grad_(True)
        (f(s, mask) * upstream).sum().backward()
        return s.grad

    got = grad_of(fn)
    if got is None:
        raise Failure("反向传播没有回到 scores：输出与 scores 断开了计算图（是不是用了 .detach() 或 torch.tensor(...)？）")
    compare(got, grad_of(reference), what="对 scores 的梯度")


def _make_bad_mask(rng, which):
    scores = randn(rng, 2, 3)
    mask = [torch.ones(2, 3), torch.ones(2, 4, dtype=torch.bool)][which]
    return Case((scores, mask), note=["mask 是浮点张量", "mask (2, 4) 广播不到 scores (2, 3)"][which])


register(Exercise(
    id="ch03.masked_softmax", questions=("3.6", "3.7"), name="masked_softmax", title="带掩码的稳定 softmax",
    signature="masked_softmax(scores, mask=None)",
    statement="沿最后一维做 softmax，但只在 mask 为 True（可以看）的位置之间分配权重：被遮住的位置权重恰为 0。"
              "分数在 1000 附近也不溢出；整行都被遮住时，这一行输出全 0（不是 NaN），反向传播的梯度也是有限的。"
              "mask=None 时就是普通的稳定 softmax。",
    shapes="scores (..., n_q, n_k) 浮点张量；mask 为 bool，能广播到 scores 的形状 → weights (..., n_q, n_k)。",
    bad_input="mask 不是 bool 张量：TypeError；mask 广播不到 scores 的形状：ValueError。报错信息要写出 mask。",
    reference=_ref_masked,
    solution=CODE,
    stub='''def masked_softmax(scores, mask=None):
    """scores (..., n_q, n_k)；mask：bool，True = 可以看，能广播到 scores → (..., n_q, n_k)。
    被遮住的位置权重为 0；整行被遮住时整行为 0，不是 NaN（梯度也有限）。
    mask 不是 bool：TypeError；广播不到 scores：ValueError（报错信息写出 mask）。"""
    raise NotImplementedError("在这里写你的实现")
''',
    properties=[
        Property("no-mask", "mask=None：就是沿最后一维的稳定 softmax",
                 "没有掩码时，每行减去最大值再做 softmax。", PAGE, "numerics",
                 _make_nomask, matches_reference(), dims=SHAPES),
        Property("masked-zero", "被遮住的位置权重恰为 0，其余位置的权重和为 1",
                 "mask 为 False 的位置要在 softmax 之前排除（填 −∞ 或 exp 之后置 0），而不是只在输出上乘 mask。",
                 PAGE, "masks", _make_masked, matches_reference(), dims=SHAPES),
        Property("large-logits", "分数在 1000 附近：不溢出",
                 "减去（可以看的位置里的）最大值，指数的参数就都 ≤ 0。", PAGE, "numerics",
                 _make_masked_large, matches_reference(), dims=SHAPES),
        Property("fully-masked-row", "整行被遮住：这一行输出全 0，不是 NaN，也不是均匀分布",
                 "整行都是 −∞ 时 softmax 是 0/0 = NaN；填 −1e9 则得到均匀分布。约定这一行全 0：分母为 0 时换成 1，或者事后把这一行置 0。",
                 PAGE, "masks", _make_full_row, matches_reference(), dims=SHAPES),
        Property("grad-finite", "整行被遮住时，反向传播的梯度也有限，并与参考答案一致",
                 "前向用 nan_to_num 把 NaN 换成 0，反向仍然会经过 NaN：让前向根本不产生 NaN（exp 之前把遮住的位置换成有限的数）。",
                 PAGE, "masks", _make_full_row, _check_grad, dims={"n_q": [1, 2, 3], "n_k": [1, 2, 4], "batch": [0],
                                                                   "dtype": [torch.float64]}),
        Property("bad-mask", "坏掩码（浮点 mask、形状广播不到）抛出 TypeError/ValueError，并写出参数名 mask",
                 "检查 mask.dtype == torch.bool，再用 torch.broadcast_shapes 检查形状。", PAGE, "masks",
                 _make_bad_mask, raises("mask"), dims={"which": [0, 1]}),
    ],
))


# --------------------------------------------------------------------------- scaled_dot_product_attention
def _ref_sdpa(q, k, v, mask=None):
    return attention.scaled_dot_product_attention(q, k, v, mask)


def _qkv(rng, batch, n_q, n_k, d_k, d_v, dtype):
    lead = (batch,) if batch else ()
    return (randn(rng, *lead, n_q, d_k, dtype=dtype), randn(rng, *lead, n_k, d_k, dtype=dtype),
            randn(rng, *lead, n_k, d_v, dtype=dtype))


def _make_sdpa(rng, batch, n_q, n_k, d_k, d_v, dtype):
    return Case(_qkv(rng, batch, n_q, n_k, d_k, d_v, dtype))


def _make_sdpa_mask(rng, batch, n_q, n_k, d_k, d_v, dtype):
    return Case(_qkv(rng, batch, n_q, n_k, d_k, d_v, dtype) + (_random_mask(rng, n_q, n_k),))


def _make_sdpa_full(rng, batch, n_q, n_k, d_k, d_v, dtype):
    return Case(_qkv(rng, batch, n_q, n_k, d_k, d_v, dtype) + (_random_mask(rng, n_q, n_k, full_rows=True),),
                note="第一个查询的整行被遮住")


def _make_bad_qkv(rng, which):
    q, k, v = randn(rng, 2, 4), randn(rng, 3, 4), randn(rng, 3, 5)
    if which == 0:
        return Case((q, randn(rng, 3, 5), v), note="k 的 d_k = 5，q 的 d_k = 4")
    return Case((q, k, randn(rng, 2, 5)), note="v 有 2 个位置，k 有 3 个")


SDPA_DIMS = {"batch": [0, 1, 2], "n_q": [1, 2, 3, 5], "n_k": [1, 2, 4, 6], "d_k": [1, 2, 4, 8, 16],
             "d_v": [1, 3, 4, 8], "dtype": DTYPES}


register(Exercise(
    id="ch03.scaled_dot_product_attention", questions=("3.1",), name="scaled_dot_product_attention", title="缩放点积注意力",
    signature="scaled_dot_product_attention(q, k, v, mask=None)",
    statement="实现论文公式 (1)：softmax(Q Kᵀ / √d_k) V。返回输出和注意力权重。mask 为 True 的位置可以看；"
              "整行被遮住的查询，它的输出和权重都是全 0（不是 NaN）。d_k 与 d_v 可以不同，n_q 与 n_k 也可以不同。",
    shapes="q (..., n_q, d_k)，k (..., n_k, d_k)，v (..., n_k, d_v)；mask 为 bool，能广播到 (..., n_q, n_k)"
           " → out (..., n_q, d_v)，weights (..., n_q, n_k)。",
    bad_input="k 的 d_k 与 q 不同、或 v 的位置数与 k 不同：ValueError，报错信息写出出错的参数（k 或 v）和形状。",
    reference=_ref_sdpa,
    solution=CODE,
    stub='''def scaled_dot_product_attention(q, k, v, mask=None):
    """q (..., n_q, d_k)，k (..., n_k, d_k)，v (..., n_k, d_v)；mask：bool，True = 可以看。
    返回 out (..., n_q, d_v) 与 weights (..., n_q, n_k)；整行被遮住的查询输出全 0。
    k 的 d_k 与 q 不同、v 的位置数与 k 不同：ValueError（报错信息写出 k 或 v）。"""
    raise NotImplementedError("在这里写你的实现")
''',
    properties=[
        Property("matches", "不带掩码：输出与权重都与 softmax(QKᵀ/√d_k)V 一致（d_k ≠ d_v、n_q ≠ n_k）",
                 "除以的是 √d_k（q、k 的宽度），不是 d_k，也不是 √d_v；K 要转置的是最后两维。", WHY_SQRT, "why-sqrt",
                 _make_sdpa, matches_reference(), dims=SDPA_DIMS),
        Property("masked", "带掩码：被遮住的键权重为 0，输出只由可以看的值加权",
                 "在 softmax 之前把 mask 为 False 的分数换成 −∞。", PAGE, "masks",
                 _make_sdpa_mask, matches_reference(), dims=SDPA_DIMS),
        Property("fully-masked-row", "整行被遮住的查询：输出与权重全 0，不是 NaN",
                 "整行 −∞ 的 softmax 是 NaN；把这种行的权重置 0，输出自然也是 0。", PAGE, "masks",
                 _make_sdpa_full, matches_reference(), dims=SDPA_DIMS),
        Property("bad-k", "k 的 d_k 与 q 不同：ValueError，并写出参数名 k",
                 "先比较 q.shape[-1] 与 k.shape[-1]，不一致就报错，写出 k 与它的形状。", WHY_SQRT, "data-flow",
                 lambda rng: _make_bad_qkv(rng, 0), raises("k")),
        Property("bad-v", "v 的位置数与 k 不同：ValueError，并写出参数名 v",
                 "比较 k.shape[-2] 与 v.shape[-2]。", WHY_SQRT, "data-flow",
                 lambda rng: _make_bad_qkv(rng, 1), raises("v")),
    ],
))


# --------------------------------------------------------------------------- masked_cross_entropy
def _ref_ce(logits, targets, ignore_index=-100):
    return softmax.masked_cross_entropy(logits, targets, ignore_index)


def _make_ce(rng, batch, n, vocab, scale, pad, dtype):
    logits = randn(rng, batch, n, vocab, dtype=dtype, scale=scale)
    targets = torch.randint(vocab, (batch, n), generator=rng)
    if pad:
        targets[0, -pad:] = -100  # 第一条序列末尾是补齐位置
    return Case((logits, targets), note=(f"第一条序列的最后 {pad} 个位置是补齐（-100）" if pad else "")
                + ("；logits 的尺度是 " + str(scale) if scale > 10 else ""))


CE_DIMS = {"batch": [1, 2], "n": [2, 3, 5], "vocab": [2, 3, 7], "scale": [1.0, 5.0], "dtype": DTYPES}

register(Exercise(
    id="ch03.masked_cross_entropy", name="masked_cross_entropy", questions=("3.8",), title="跳过补齐位置的交叉熵",
    signature="masked_cross_entropy(logits, targets, ignore_index=-100)",
    statement="逐词交叉熵 −log softmax(logits)[target] 的平均，跳过 targets == ignore_index 的位置（补齐位置）："
              "它们对损失和梯度的贡献恰为 0，分母也只数没被跳过的词。log softmax 要用 log-sum-exp 算，logits 很大时也不出现 inf。"
              "与 torch.nn.functional.cross_entropy(..., ignore_index=...) 相同。",
    shapes="logits (..., vocab) 浮点张量，targets (...) 整数张量，取值在 [0, vocab) 或等于 ignore_index → 标量。",
    bad_input="targets 不是整数张量：TypeError；targets 有越界的值：ValueError。报错信息写出 targets。",
    reference=_ref_ce, solution=CODE,
    stub='''def masked_cross_entropy(logits, targets, ignore_index=-100):
    """−log softmax(logits)[target] 对 targets != ignore_index 的位置取平均（分母只数这些位置）。
    logits (..., vocab)，targets (...) 整数 → 标量。targets 不是整数：TypeError；越界：ValueError（写出 targets）。"""
    raise NotImplementedError("在这里写你的实现")
''',
    properties=[
        Property("no-padding", "没有补齐：与逐词交叉熵的平均一致",
                 "log softmax 用 logits − logsumexp(logits)；取目标那一项用 gather；最后取平均。", PAGE, "numerics",
                 lambda rng, **d: _make_ce(rng, pad=0, **d), matches_reference(), dims=CE_DIMS),
        Property("padding", "有补齐：补齐位置不计入损失，分母只数真实的词",
                 "keep = targets != ignore_index；损失是 Σ keep·nll / Σ keep，不是除以全部位置；补齐位置的 target 不是合法下标，"
                 "gather 之前先换成 0。", PAGE, "masks", lambda rng, **d: _make_ce(rng, pad=1, **d), matches_reference(),
                 dims=CE_DIMS),
        Property("large-logits", "logits 的尺度上千：不出现 inf",
                 "log(softmax(z)) 在概率下溢成 0 时得 −∞：直接用 log-sum-exp 形式的 log softmax。", PAGE, "numerics",
                 lambda rng, **d: _make_ce(rng, scale=2000.0, pad=1, **d), matches_reference(),
                 dims={k: v for k, v in CE_DIMS.items() if k != "scale"}, tries=8),
        Property("bad-targets", "targets 是浮点张量或越界：TypeError/ValueError，并写出参数名 targets",
                 "检查 targets 的 dtype 是整数，再检查没被跳过的值都在 [0, vocab)。", PAGE, "masks",
                 lambda rng, which: Case((randn(rng, 2, 3), [torch.tensor([0.0, 1.0]), torch.tensor([0, 3])][which]),
                                         note=["targets 是浮点张量", "targets 里的 3 超出 vocab = 3"][which]),
                 raises("targets"), dims={"which": [0, 1]}),
    ],
))
