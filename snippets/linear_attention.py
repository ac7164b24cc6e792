"""第 13 章：线性注意力（linear attention）与增量规则（delta rule）。

三种彼此相等的线性注意力（并行、递推、分块），带衰减的形式与它的半可分矩阵（Mamba-2 / SSD 的视角），
增量规则的递推与分块（UT 变换）形式，以及「增量规则 = 回归损失上的一步梯度下降」。
约定：因果、不归一化、恒等特征映射，o_t = Σ_{s≤t} (q_t·k_s) v_s；特征映射与归一化分母是单独的函数。
状态 S 的形状是 (..., d_v, d_k)，读出 o_t = S_t q_t。输入检查用 snippets/checks.py 的 _check_tensor：
页面先引入那个文件的 imports、checks 两节。测试：tests/ch13/。
"""

# --8<-- [start:imports]
import torch
import torch.nn.functional as F
# --8<-- [end:imports]

from snippets.checks import _check_tensor  # noqa: E402  (页面先引入 checks.py 的 imports、checks 两节)


# --8<-- [start:parallel]
def linear_attention_parallel(q, k, v):
    """并行形式：O = (M ⊙ QKᵀ) V，M 是下三角（含对角线）全 1。O(n²·d) 计算，要 n × n 的分数。

    q、k (..., n, d_k)，v (..., n, d_v) → o (..., n, d_v)。
    """
    _check_linear(q, k, v)
    n = q.shape[-2]
    causal = torch.ones(n, n, dtype=torch.bool, device=q.device).tril()  # (n, n)
    scores = (q @ k.transpose(-2, -1)).masked_fill(~causal, 0.0)  # (..., n, n)，没有 softmax
    return scores @ v
# --8<-- [end:parallel]


# --8<-- [start:recurrent]
def linear_attention_recurrent(q, k, v):
    """递推形式：S_t = S_{t−1} + v_t k_tᵀ，o_t = S_t q_t。每步 O(d_k·d_v)，状态大小与 n 无关。"""
    _check_linear(q, k, v)
    s = q.new_zeros(q.shape[:-2] + (v.shape[-1], q.shape[-1]))  # (..., d_v, d_k)
    out = []
    for t in range(q.shape[-2]):
        s = s + v[..., t, :, None] * k[..., t, None, :]  # 加上外积 v_t k_tᵀ
        out.append((s @ q[..., t, :, None]).squeeze(-1))  # (..., d_v)
    return torch.stack(out, dim=-2)  # (..., n, d_v)
# --8<-- [end:recurrent]


# --8<-- [start:chunked]
def linear_attention_chunked(q, k, v, chunk):
    """分块形式：块内用并行形式，块间只传状态 S。每块 O(C²·d + C·d²)，总计 O(n·C·d + n·d²)。

    对块 [i, i + C)：O_blk = Q_blk Sᵀ + (M ⊙ Q_blk K_blkᵀ) V_blk，然后 S ← S + V_blkᵀ K_blk。
    """
    _check_linear(q, k, v, chunk=chunk)
    s = q.new_zeros(q.shape[:-2] + (v.shape[-1], q.shape[-1]))  # (..., d_v, d_k)
    out = []
    for i in range(0, q.shape[-2], chunk):
        qc, kc, vc = q[..., i:i + chunk, :], k[..., i:i + chunk, :], v[..., i:i + chunk, :]  # (..., C, d)
        inter = qc @ s.transpose(-2, -1)  # (..., C, d_v)：之前各块的贡献
        out.append(inter + linear_attention_parallel(qc, kc, vc))  # 加上块内的贡献
        s = s + vc.transpose(-2, -1) @ kc  # (..., d_v, d_k)
    return torch.cat(out, dim=-2)
# --8<-- [end:chunked]


# --8<-- [start:feature-map]
def elu_feature_map(x):
    """Katharopoulos 等（2020）的特征映射 φ(x) = elu(x) + 1 > 0。"""
    return F.elu(x) + 1.0


def normalized_linear_attention(q, k, v, feature_map=elu_feature_map):
    """带归一化的线性注意力：o_t = Σ_s (φ(q_t)·φ(k_s)) v_s / Σ_s φ(q_t)·φ(k_s)。

    分子就是上面的 linear_attention_*（对 φ(q)、φ(k)），分母是 v 取全 1 时的同一个量。
    """
    fq, fk = feature_map(q), feature_map(k)
    num = linear_attention_parallel(fq, fk, v)  # (..., n, d_v)
    den = linear_attention_parallel(fq, fk, torch.ones_like(v[..., :1]))  # (..., n, 1)
    return num / den
# --8<-- [end:feature-map]


# --8<-- [start:decay]
def decay_linear_attention_recurrent(q, k, v, a):
    """带衰减（decay）的递推：S_t = a_t S_{t−1} + v_t k_tᵀ，o_t = S_t q_t，a (..., n)，通常在 [0, 1]。

    a 是常数时是 RetNet；a_t 依赖输入、每头一个数（标量）时是 Mamba-2（SSD）的门。
    GLA 的门不是标量，是逐键通道的对角阵 Diag(α_t)，不在这个函数里。a_t = 0 是一次硬重置。
    """
    _check_linear(q, k, v, gate=a, gate_name="a")
    s = q.new_zeros(q.shape[:-2] + (v.shape[-1], q.shape[-1]))  # (..., d_v, d_k)
    out = []
    for t in range(q.shape[-2]):
        s = a[..., t, None, None] * s + v[..., t, :, None] * k[..., t, None, :]
        out.append((s @ q[..., t, :, None]).squeeze(-1))
    return torch.stack(out, dim=-2)


def semiseparable_mask(a):
    """1-半可分矩阵 L：i ≥ j 时 L_ij = a_{j+1} a_{j+2} … a_i（i = j 时为 1），i < j 时为 0。a (..., n) → (..., n, n)。

    沿每一列直接连乘（分段乘积），不取 log、不做两个累积和相减：a_t = 0（硬重置）时精确为 0，
    fp32 下长序列也只有逐个相乘的舍入误差。
    """
    n = a.shape[-1]
    below = torch.ones(n, n, dtype=torch.bool, device=a.device).tril(-1)  # (n, n)：i > j
    factors = a[..., :, None].expand(a.shape + (n,)).masked_fill(~below, 1.0)  # (..., n, n)：i > j 处是 a_i，其余是 1
    return factors.cumprod(dim=-2).tril()  # 沿 i 连乘：第 j 列是 1, a_{j+1}, a_{j+1}a_{j+2}, …；i < j 处置 0


def decay_linear_attention_parallel(q, k, v, a):
    """矩阵形式：O = (L ⊙ QKᵀ) V。与递推相等，这就是「状态空间对偶」（SSD）。"""
    _check_linear(q, k, v, gate=a, gate_name="a")
    return (semiseparable_mask(a) * (q @ k.transpose(-2, -1))) @ v
# --8<-- [end:decay]


# --8<-- [start:delta-recurrent]
def delta_rule_step(s, k_t, v_t, beta_t):
    """一步增量规则：S ← S(I − β k kᵀ) + β v kᵀ = S − β (S k − v) kᵀ。

    s (..., d_v, d_k)，k_t (..., d_k)，v_t (..., d_v)，beta_t (...)。
    右边正是损失 ½‖S k − v‖² 对 S 的梯度 (S k − v) kᵀ 乘上步长 β 后的一步梯度下降。
    稳定条件：I − β k kᵀ 的特征值是 1 与 1 − β‖k‖²，所以要求 ‖k_t‖ = 1、0 ≤ β_t ≤ 2（常用 (0, 1]），
    否则抛 ValueError（_check_delta）；未归一化的键先用 F.normalize(k, dim=-1)。
    """
    if not isinstance(s, torch.Tensor) or s.dim() < 2:
        raise ValueError(f"s must be a tensor of shape (..., d_v, d_k), got {getattr(s, 'shape', type(s).__name__)}")
    batch = tuple(s.shape[:-2])
    _check_tensor("k_t", k_t, "(..., d_k) of s " + str(tuple(s.shape)), batch + (s.shape[-1],), s.dtype)
    _check_tensor("v_t", v_t, "(..., d_v) of s " + str(tuple(s.shape)), batch + (s.shape[-2],), s.dtype)
    _check_tensor("beta_t", beta_t, "(...) of s " + str(tuple(s.shape)), batch, s.dtype)
    _check_delta(k_t, beta_t, "k_t", "beta_t")
    err = (s @ k_t[..., :, None]).squeeze(-1) - v_t  # (..., d_v)：预测 S k 与目标 v 之差
    return s - beta_t[..., None, None] * err[..., :, None] * k_t[..., None, :]


def delta_rule_recurrent(q, k, v, beta):
    """DeltaNet 的递推：S_0 = 0，S_t = S_{t−1}(I − β_t k_t k_tᵀ) + β_t v_t k_tᵀ，o_t = S_t q_t。

    beta (..., n)。每个键要 ‖k_t‖ = 1、0 ≤ β_t ≤ 2（稳定条件，见 delta_rule_step），否则抛 ValueError。
    """
    _check_linear(q, k, v, gate=beta, gate_name="beta")
    _check_delta(k, beta)
    s = q.new_zeros(q.shape[:-2] + (v.shape[-1], q.shape[-1]))  # (..., d_v, d_k)
    out = []
    for t in range(q.shape[-2]):
        s = delta_rule_step(s, k[..., t, :], v[..., t, :], beta[..., t])
        out.append((s @ q[..., t, :, None]).squeeze(-1))
    return torch.stack(out, dim=-2)
# --8<-- [end:delta-recurrent]


# --8<-- [start:delta-chunked]
def delta_rule_chunked(q, k, v, beta, chunk):
    """增量规则的分块形式（UT 变换）：块内解一个单位下三角方程组，块间只传状态 S。

    在块内写 S_t = S_0 + Σ_{i≤t} u_i k_iᵀ，代入递推得 u_t = β_t (v_t − S_0 k_t − Σ_{i<t} (k_iᵀk_t) u_i)，
    即 (I + diag(β) A) U = diag(β)(V − K S_0ᵀ)，A = 严格下三角的 K Kᵀ。于是
    O_blk = Q S_0ᵀ + (M ⊙ Q Kᵀ) U，S ← S_0 + Uᵀ K。键与 β 的条件与 delta_rule_recurrent 相同。
    """
    _check_linear(q, k, v, chunk=chunk, gate=beta, gate_name="beta")
    _check_delta(k, beta)
    s = q.new_zeros(q.shape[:-2] + (v.shape[-1], q.shape[-1]))  # (..., d_v, d_k)
    out = []
    for i in range(0, q.shape[-2], chunk):
        qc, kc, vc = q[..., i:i + chunk, :], k[..., i:i + chunk, :], v[..., i:i + chunk, :]
        bc = beta[..., i:i + chunk, None]  # (..., C, 1)
        c = qc.shape[-2]
        strict = torch.ones(c, c, dtype=torch.bool, device=q.device).tril(-1)  # (C, C)
        a = (kc @ kc.transpose(-2, -1)).masked_fill(~strict, 0.0)  # (..., C, C)，A_ti = k_tᵀ k_i（i < t）
        lhs = torch.eye(c, dtype=q.dtype, device=q.device) + bc * a  # 单位下三角
        rhs = bc * (vc - kc @ s.transpose(-2, -1))  # (..., C, d_v)
        u = torch.linalg.solve_triangular(lhs, rhs, upper=False, unitriangular=True)  # (..., C, d_v)
        scores = (qc @ kc.transpose(-2, -1)).masked_fill(~(strict | torch.eye(c, dtype=torch.bool,
                                                                                device=q.device)), 0.0)
        out.append(qc @ s.transpose(-2, -1) + scores @ u)
        s = s + u.transpose(-2, -1) @ kc
    return torch.cat(out, dim=-2)
# --8<-- [end:delta-chunked]


# --8<-- [start:checks]
VALUE_CHECKS = True  # 读数值的检查（键的范数、β 的范围）；meta 张量没有数值，契约测试在 meta 上把它关掉


def _check_linear(q, k, v, chunk=None, gate=None, gate_name="beta"):
    """q (..., n, d_k)、k 同形、v (..., n, d_v)、gate (..., n)、chunk ≥ 1：用 snippets/checks.py 的 _check_tensor。"""
    if not isinstance(q, torch.Tensor) or q.dim() < 2:
        raise ValueError(f"q must be a tensor of shape (..., n, d_k), got {getattr(q, 'shape', type(q).__name__)}")
    _check_tensor("k", k, "(..., n, d_k) like q " + str(tuple(q.shape)), tuple(q.shape), q.dtype)
    _check_tensor("v", v, "(..., n, d_v) with q's (..., n) " + str(tuple(q.shape[:-1])),
                  tuple(q.shape[:-1]) + (None,), q.dtype)
    if gate is not None:
        _check_tensor(gate_name, gate, "(..., n) of q " + str(tuple(q.shape)), tuple(q.shape[:-1]), q.dtype)
    if chunk is not None and (not isinstance(chunk, int) or isinstance(chunk, bool) or chunk < 1):
        raise ValueError(f"chunk must be an int ≥ 1, got {chunk!r}: q {tuple(q.shape)}")


def _check_delta(k, beta, k_name="k", beta_name="beta"):
    """增量规则的稳定条件：每个键 ‖k‖ = 1（允许 dtype 的 8 个 eps 的舍入），0 ≤ β ≤ 2。

    I − β k kᵀ 的特征值是 1（d_k − 1 重）与 1 − β‖k‖²，条件成立时都在 [−1, 1] 里，状态不会被逐步放大；
    全零的键（如填充位置）也被拒绝，那里改取 β = 0。VALUE_CHECKS 为 False 时不查（meta 张量没有数值）。
    """
    if not VALUE_CHECKS:
        return
    acc = torch.float64 if k.dtype == torch.float64 else torch.float32
    err = (torch.linalg.vector_norm(k, dim=-1, dtype=acc) - 1).abs()  # (...)：每个键的 |‖k‖ − 1|
    tol = 8 * torch.finfo(k.dtype).eps
    if not bool((err <= tol).all()):  # 写成 <=，NaN 也会被拒绝
        raise ValueError(f"{k_name} must have unit L2 norm along the last dim (|‖k‖ − 1| ≤ {tol:.1e}; use "
                         f"F.normalize(k, dim=-1)), got max |‖k‖ − 1| = {err.max().item():.3g}: {k_name} {tuple(k.shape)}")
    if not bool(((beta >= 0) & (beta <= 2)).all()):
        raise ValueError(f"{beta_name} must lie in [0, 2] (usually (0, 1]) so that I − β k kᵀ does not expand the "
                         f"state, got values in [{beta.min().item():.3g}, {beta.max().item():.3g}]: "
                         f"{beta_name} {tuple(beta.shape)}")
# --8<-- [end:checks]
