"""softmax 的数值与微分：第 03 章「缩放点积注意力」背后的代码。

数值稳定的 softmax（减去最大值，log-sum-exp 技巧）、softmax 的雅可比矩阵与它的向量–雅可比积、熵与温度、
注意力分数（logits）的三种缩放、带掩码的 softmax（整行被遮住时得 0，绝不是 NaN）、
带 ignore_index 的交叉熵，以及 2024–26 年常见的几个改动：QK-norm、logit 软截断、
注意力汇点（sink）与 fp8 量化。

页面按节引用本文件（写法见 CONVENTIONS.md）；各节按文件顺序拼接后
可在全新解释器里独立运行。测试：tests/ch03/。

统一约定（与 snippets/attention.py 相同）：
- mask 一律是 bool 张量，True = 可以看（may attend），False = 遮住；
- 某个查询的整行都被遮住时，该行权重全为 0，绝不是 NaN（前向、反向都一样）；
- 形状不对、dtype 不对时抛 ValueError / TypeError，消息里写出参数名与形状，绝不悄悄广播。

节之间的依赖：每节都要 imports，且都调用最后一节 checks 里的检查函数 _check_float（页面在算法之后
引入它）；masked-softmax、loss-masking、modern 还用到 stable_softmax / stable_log_softmax。
"""

# --8<-- [start:imports]
import math

import torch
# --8<-- [end:imports]


# --8<-- [start:stable-softmax]
def naive_softmax(z):
    """教科书写法 exp(z) / Σ exp(z)，沿最后一维。只为演示溢出：z 稍大，exp 就变成 inf。"""
    _check_float("z", z)
    e = torch.exp(z)  # (..., n)：fp16 里 z > 11.09 就是 inf
    return e / e.sum(dim=-1, keepdim=True)  # inf / inf = NaN


def stable_softmax(z):
    """数值稳定的 softmax，沿最后一维：softmax(z) = softmax(z − max z)。

    减去每行的最大值 m 后，指数的参数都 ≤ 0，exp 的结果落在 (0, 1]，不会上溢；
    分母至少有一项 exp(0) = 1，也不会下溢成 0。z (..., n) → p (..., n)。
    """
    _check_float("z", z)
    m = z.amax(dim=-1, keepdim=True).detach()  # (..., 1)：常数平移不改变结果，也不参与求导
    e = torch.exp(z - m)  # (..., n)，每个数都在 (0, 1]
    return e / e.sum(dim=-1, keepdim=True)


def stable_log_softmax(z):
    """log softmax(z) = z − logsumexp(z)，logsumexp(z) = m + log Σ exp(z − m)。z (..., n) → (..., n)。"""
    _check_float("z", z)
    m = z.amax(dim=-1, keepdim=True).detach()  # (..., 1)
    return z - m - torch.log(torch.exp(z - m).sum(dim=-1, keepdim=True))
# --8<-- [end:stable-softmax]


# --8<-- [start:overflow]
def exp_overflow_threshold(dtype):
    """exp(x) 在 dtype 里第一次变成 inf 的 x：log(最大有限值)，由 torch.finfo 给出。"""
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating torch.dtype, got {dtype!r}")
    return math.log(torch.finfo(dtype).max)
# --8<-- [end:overflow]


# --8<-- [start:jacobian]
def softmax_jacobian(z):
    """softmax 的雅可比矩阵 J = diag(p) − p pᵀ，即 ∂p_i/∂z_j = p_i (δ_ij − p_j)。

    z (..., n) → J (..., n, n)，批维度逐个计算。
    """
    _check_float("z", z)
    p = stable_softmax(z)  # (..., n)
    return torch.diag_embed(p) - p.unsqueeze(-1) * p.unsqueeze(-2)  # (..., n, n)
# --8<-- [end:jacobian]


# --8<-- [start:vjp]
def softmax_vjp(p, grad_p):
    """softmax 的反向传播（向量–雅可比积）：∂L/∂s = J·∂L/∂p = p ⊙ (∂L/∂p − ⟨p, ∂L/∂p⟩)。

    实现从不构造 n×n 的 J：每行只要一个内积，运算与内存都是 O(n)。
    p = softmax(s)、grad_p = ∂L/∂p，形状都是 (..., n) → ∂L/∂s (..., n)。
    """
    _check_float("p", p)
    _check_float("grad_p", grad_p)
    if grad_p.shape != p.shape:
        raise ValueError(f"grad_p must have p's shape: p {tuple(p.shape)}, grad_p {tuple(grad_p.shape)}")
    return p * (grad_p - (p * grad_p).sum(dim=-1, keepdim=True))  # (..., n)
# --8<-- [end:vjp]


# --8<-- [start:entropy]
def softmax_entropy(z, beta=1.0):
    """温度为 1/beta 时 softmax(beta · z) 的熵 H = −Σ p log p（单位：奈特）。z (..., n) → (...)。"""
    _check_float("z", z)
    log_p = stable_log_softmax(beta * z)  # (..., n)
    return -(log_p.exp() * log_p).sum(dim=-1)  # p = 0 时 p log p 取 0：exp(-inf) · (-inf) 不会出现，log_p 有限


def softmax_max_weight(z, beta=1.0):
    """softmax(beta · z) 的最大权重 max_i p_i。z (..., n) → (...)。"""
    _check_float("z", z)
    return stable_softmax(beta * z).amax(dim=-1)
# --8<-- [end:entropy]


# --8<-- [start:logits]
def attention_logits(q, k, scale="sqrt"):
    """注意力分数 s = c · q kᵀ，三种缩放：

    scale="sqrt"：c = 1/√d_k（论文公式 (1)）；scale="linear"：c = 1/d_k（μP）；
    scale="none"：c = 1（不缩放的点积注意力）；也可以直接给一个正数 c。
    q (..., n_q, d_k)，k (..., n_k, d_k) → s (..., n_q, n_k)。
    """
    _check_float("q", q, min_dim=2)
    _check_float("k", k, min_dim=2)
    shapes = f"q {tuple(q.shape)}, k {tuple(k.shape)}"
    if k.dtype != q.dtype:
        raise TypeError(f"k has dtype {k.dtype} but q has {q.dtype}: {shapes}")
    if k.shape[-1] != q.shape[-1] or k.shape[:-2] != q.shape[:-2]:
        raise ValueError(f"k must have shape (..., n_k, d_k) with q's batch dims and d_k: {shapes}")
    d_k = q.shape[-1]
    factors = {"sqrt": 1 / math.sqrt(d_k), "linear": 1 / d_k, "none": 1.0}
    if isinstance(scale, str):
        if scale not in factors:
            raise ValueError(f"scale must be 'sqrt', 'linear', 'none' or a positive number, got {scale!r}")
        c = factors[scale]
    elif isinstance(scale, (int, float)) and not isinstance(scale, bool) and scale > 0:
        c = float(scale)
    else:
        raise ValueError(f"scale must be 'sqrt', 'linear', 'none' or a positive number, got {scale!r}")
    return c * (q @ k.transpose(-2, -1))  # (..., n_q, n_k)
# --8<-- [end:logits]


# --8<-- [start:masked-softmax]
def masked_softmax(scores, mask=None):
    """带掩码的稳定 softmax，沿最后一维。mask：bool，True = 可以看，能广播到 scores 的形状。

    被遮住的位置权重恰为 0；整行都被遮住时整行为 0（不是 NaN），反向传播的梯度也有限。
    做法：只在可以看的位置里取最大值，遮住的位置 exp 之后直接置 0，分母为 0 时换成 1。
    scores (..., n_q, n_k) → weights (..., n_q, n_k)。
    """
    _check_float("scores", scores)
    if mask is None:
        return stable_softmax(scores)
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
        got = mask.dtype if isinstance(mask, torch.Tensor) else type(mask).__name__
        raise TypeError(f"mask must be a bool tensor (True = may attend), got {got}: scores {tuple(scores.shape)}")
    try:
        ok = torch.broadcast_shapes(mask.shape, scores.shape) == scores.shape
    except RuntimeError:
        ok = False
    if not ok:
        raise ValueError(f"mask {tuple(mask.shape)} cannot broadcast to scores {tuple(scores.shape)}")
    # 只在可以看的位置里找最大值；整行被遮住时最大值是 -inf，换成 0 当参考点
    m = scores.masked_fill(~mask, float("-inf")).amax(dim=-1, keepdim=True).detach()  # (..., n_q, 1)
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
    # 先把遮住的位置换成 m（exp 得 1，不会溢出），exp 之后再置 0：前向、反向都不出现 inf 或 NaN
    e = torch.exp(torch.where(mask, scores, m) - m).masked_fill(~mask, 0.0)  # (..., n_q, n_k)
    total = e.sum(dim=-1, keepdim=True)  # (..., n_q, 1)
    return e / torch.where(total > 0, total, torch.ones_like(total))
# --8<-- [end:masked-softmax]


# --8<-- [start:loss-masking]
VALUE_CHECKS = True  # 读数值的检查（targets 的范围）；meta 张量没有数值，契约测试在 meta 上把它关掉


def masked_cross_entropy(logits, targets, ignore_index=-100):
    """逐词交叉熵的平均值，跳过 targets == ignore_index 的位置（补齐位置）。

    与 torch.nn.functional.cross_entropy(..., ignore_index=...) 的默认行为相同：
    分母是没被跳过的词数；被跳过的位置对损失和梯度的贡献恰为 0。
    logits (..., vocab)，targets (...) 整数 → 标量。
    """
    _check_float("logits", logits)
    if not isinstance(targets, torch.Tensor) or targets.is_floating_point() or targets.dtype == torch.bool:
        got = targets.dtype if isinstance(targets, torch.Tensor) else type(targets).__name__
        raise TypeError(f"targets must be an integer tensor, got {got}: logits {tuple(logits.shape)}")
    if targets.shape != logits.shape[:-1]:
        raise ValueError(f"targets must have shape logits.shape[:-1]: logits {tuple(logits.shape)}, "
                         f"targets {tuple(targets.shape)}")
    keep = targets != ignore_index  # (...)
    safe = torch.where(keep, targets, torch.zeros_like(targets))  # 被跳过的位置随便取一个合法下标
    if VALUE_CHECKS and ((safe < 0) | (safe >= logits.shape[-1])).any():
        raise ValueError(f"targets must lie in [0, vocab={logits.shape[-1]}) or equal ignore_index={ignore_index}")
    if VALUE_CHECKS and not keep.any():  # 否则 0/0 = NaN（PyTorch 的 F.cross_entropy 就返回 NaN）
        raise ValueError(f"every target equals ignore_index={ignore_index}: no position to average over "
                         f"(targets {tuple(targets.shape)})")
    log_p = stable_log_softmax(logits)  # (..., vocab)
    nll = -log_p.gather(-1, safe.unsqueeze(-1)).squeeze(-1)  # (...)
    return (nll * keep).sum() / keep.sum()  # 至少留下一个位置（上面检查过），分母不为 0
# --8<-- [end:loss-masking]


# --8<-- [start:modern]
def qk_rmsnorm(x, eps=1e-6):
    """QK-norm：对 q 或 k 的最后一维做 RMSNorm（不带可学习增益），每个向量的长度都变成 √d_k。

    于是 |q·k| / √d_k ≤ √d_k：分数有了与权重大小无关的上界。x (..., n, d_k) → (..., n, d_k)。
    """
    _check_float("x", x)
    return x / torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)


def soft_cap(scores, cap):
    """logit 软截断：cap · tanh(scores / cap)。|输出| < cap；|scores| ≪ cap 时近似恒等。"""
    _check_float("scores", scores)
    if not isinstance(cap, (int, float)) or isinstance(cap, bool) or cap <= 0:
        raise ValueError(f"cap must be a positive number, got cap={cap!r}: scores {tuple(scores.shape)}")
    return cap * torch.tanh(scores / cap)


def softmax_with_sink(scores, sink_logit):
    """注意力汇点（sink）：在每行末尾加一个 logit 为 sink_logit、值为 0 的虚拟键，再做 softmax，
    返回真实键上的权重（去掉虚拟键那一列）。每行和 = 1 − 汇点分走的份额 < 1。

    scores (..., n_q, n_k)，sink_logit：标量或能广播到 (..., n_q, 1) 的张量 → (..., n_q, n_k)。
    """
    _check_float("scores", scores)
    sink = torch.as_tensor(sink_logit, dtype=scores.dtype, device=scores.device)
    sink = sink.expand(scores.shape[:-1] + (1,))  # (..., n_q, 1)
    return stable_softmax(torch.cat([scores, sink], dim=-1))[..., :-1]  # (..., n_q, n_k)


def fp8_round_trip(x, dtype=torch.float8_e4m3fn):
    """按整个张量的最大绝对值缩放到 fp8 的量程，舍入成 fp8，再换回原 dtype（模拟 fp8 注意力的输入量化）。

    x (...) → 与 x 同形同 dtype。缩放因子 = fp8 最大有限值 / max|x|。
    """
    _check_float("x", x)
    amax = x.abs().amax()
    if amax == 0:
        return x.clone()
    scale = torch.finfo(dtype).max / amax
    return (x * scale).to(dtype).to(x.dtype) / scale
# --8<-- [end:modern]


# --8<-- [start:checks]
def _check_float(name, t, min_dim=1):
    """t 必须是至少 min_dim 维、最后一维非空的浮点张量；报错时写出参数名与形状。"""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if not t.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got {t.dtype}: {name} {tuple(t.shape)}")
    if t.dim() < min_dim:
        raise ValueError(f"{name} must have at least {min_dim} dims, got {name} {tuple(t.shape)}")
    if t.dim() > 0 and t.shape[-1] == 0:
        raise ValueError(f"{name} is empty along its last dim: {name} {tuple(t.shape)}")
# --8<-- [end:checks]
