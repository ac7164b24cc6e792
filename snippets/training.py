"""第 08 章「训练」背后的代码：论文 §5 的学习率公式、标签平滑的损失、按长度分批，以及手写的 Adam/AdamW 一步。

页面按节引用本文件（写法见 CONVENTIONS.md）：imports 之后是各个算法，输入检查用第 01 章的共用函数
snippets/checks.py 的 _check_tensor（页面在算法之后引入 checks.py 的 imports、checks 两节）。
训练循环在 snippets/experiments/training_recipe.py，它用读者的 Transformer（snippets/transformer.py）。
测试：tests/ch08/。
"""

from snippets.checks import _check_tensor  # noqa: F401  (小节里按名字使用；页面先引入 checks 节)

# --8<-- [start:imports]
import torch
import torch.nn.functional as F
# --8<-- [end:imports]


# --8<-- [start:noam-lr]
def noam_lr(step: int, d_model: int = 512, warmup: int = 4000) -> float:
    """论文公式 (3)：lrate = d_model^−0.5 · min(step^−0.5, step · warmup^−1.5)。

    step 从 1 数起。step ≤ warmup 时取第二项（线性上升），之后取第一项（按 1/√step 衰减）；
    两项在 step = warmup 相等，峰值 d_model^−0.5 · warmup^−0.5。
    """
    if isinstance(step, bool) or not isinstance(step, int) or step < 1:
        raise ValueError(f"step must be an integer >= 1 (the paper counts steps from 1), got step={step!r}")
    if d_model < 1 or warmup < 1:
        raise ValueError(f"d_model and warmup must be >= 1, got d_model={d_model}, warmup={warmup}")
    return d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)
# --8<-- [end:noam-lr]


# --8<-- [start:label-smoothing]
def label_smoothed_nll(logits: torch.Tensor, target: torch.Tensor, eps: float = 0.1,
                       ignore_index: int = -100) -> torch.Tensor:
    """标签平滑的交叉熵（论文 §5.4，ε_ls = 0.1），对未被忽略的位置取平均。

    平滑后的目标 q = (1 − ε)·onehot(y) + ε/K（K 个类都分到 ε/K，目标类共 1 − ε + ε/K，与 PyTorch 相同），
    所以 −Σ_k q_k log p_k = (1 − ε)·(−log p_y) + ε·(−(1/K) Σ_k log p_k)。
    logits (N, K)，target (N,) 整数；target == ignore_index 的位置（填充）不计入损失，也不计入分母。
    """
    _check_tensor("logits", logits, "(N, K)", (None, None))
    got = f"target {tuple(target.shape)}, logits {tuple(logits.shape)}"
    if target.dtype not in (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8):
        raise TypeError(f"target must hold integer class ids, got dtype {target.dtype}: {got}")
    if target.dim() != 1 or target.shape[0] != logits.shape[0]:
        raise ValueError(f"target must have shape (N,) with N = logits.shape[0], got {got}")
    if not 0.0 <= eps < 1.0:
        raise ValueError(f"eps must be in [0, 1), got eps={eps} (logits {tuple(logits.shape)})")
    keep = target != ignore_index                                   # (N,)
    if not keep.any():                                              # 否则空的平均 = NaN（PyTorch 返回 NaN）
        raise ValueError(f"every target equals ignore_index={ignore_index}: no position to average over ({got})")
    logp = F.log_softmax(logits[keep], dim=-1)                      # (N', K)
    nll = -logp.gather(-1, target[keep].unsqueeze(-1)).squeeze(-1)  # (N',)  −log p_y
    uniform_ce = -logp.mean(dim=-1)                                 # (N',)  −(1/K) Σ_k log p_k
    return ((1.0 - eps) * nll + eps * uniform_ce).mean()            # 至少一个位置（上面检查过）
# --8<-- [end:label-smoothing]


# --8<-- [start:token-batches]
def token_batches(lengths, max_tokens: int, sort: bool = True) -> list[list[int]]:
    """按长度分批（论文 §5.1 的「batched together by approximate sequence length」）。

    lengths[i] 是第 i 个样本的长度（词元数）。返回一组下标列表：每个下标恰好出现一次，
    每批的填充后大小（样本数 × 批内最长长度）≤ max_tokens。sort=True 先按长度排序，长度相近的
    样本进同一批；sort=False 按给定顺序装（对照：不排序时填充浪费多少）。
    """
    lengths = [int(n) for n in lengths]
    for i, n in enumerate(lengths):
        if n < 1:
            raise ValueError(f"lengths[{i}] = {n}: every example needs at least one token")
        if n > max_tokens:
            raise ValueError(f"example {i} alone has {n} tokens > max_tokens={max_tokens}: it fits in no batch")
    order = sorted(range(len(lengths)), key=lambda i: lengths[i]) if sort else range(len(lengths))
    batches, current, longest = [], [], 0
    for i in order:
        new_longest = max(longest, lengths[i])
        if current and (len(current) + 1) * new_longest > max_tokens:   # 再放一个就超预算：封住这一批
            batches.append(current)
            current, new_longest = [], lengths[i]
        current.append(i)
        longest = new_longest
    if current:
        batches.append(current)
    return batches


def padding_waste(lengths, batches) -> float:
    """填充浪费：填充的词元占填充后总词元的比例，1 − Σ 真实长度 / Σ (样本数 × 批内最长)。"""
    real = sum(lengths[i] for b in batches for i in b)
    padded = sum(len(b) * max(lengths[i] for i in b) for b in batches)
    return 1.0 - real / padded
# --8<-- [end:token-batches]


# --8<-- [start:adam]
@torch.no_grad()
def adam_step(params, grads, state: dict, lr: float, betas=(0.9, 0.98), eps: float = 1e-9,
              weight_decay: float = 0.0, decoupled: bool = False) -> None:
    """Adam 的一步（论文 §5.3：β₁ = 0.9，β₂ = 0.98，ε = 10⁻⁹），原地更新 params。

    m ← β₁ m + (1 − β₁) g                 一阶矩（梯度的指数滑动平均）
    v ← β₂ v + (1 − β₂) g²                二阶矩（梯度平方的指数滑动平均）
    m̂ = m / (1 − β₁ᵗ)，v̂ = v / (1 − β₂ᵗ)   偏差校正：m、v 从 0 出发，前几步偏小
    θ ← θ − lr · m̂ / (√v̂ + ε)
    weight_decay：decoupled=False 是 Adam 的 L2（把 λθ 加进梯度，再被 √v̂ 缩放）；
    decoupled=True 是 AdamW（θ ← θ − lr·λ·θ，不经过 √v̂）。state 初始为 {}。
    """
    params, grads = list(params), list(grads)
    if len(grads) != len(params) or len(state.get("m", params)) != len(params):
        raise ValueError(f"params, grads and state['m'] must have one entry per parameter, got {len(params)} params, "
                         f"{len(grads)} grads, {len(state.get('m', params))} moments")
    beta1, beta2 = betas
    t = state["t"] = state.get("t", 0) + 1
    if "m" not in state:
        state["m"] = [torch.zeros_like(p) for p in params]
        state["v"] = [torch.zeros_like(p) for p in params]
    for p, g, m, v in zip(params, grads, state["m"], state["v"]):
        if weight_decay and decoupled:
            p.mul_(1 - lr * weight_decay)          # AdamW：衰减直接作用在参数上
        elif weight_decay:
            g = g + weight_decay * p               # Adam + L2：衰减混进梯度
        m.mul_(beta1).add_(g, alpha=1 - beta1)
        v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
        m_hat = m / (1 - beta1 ** t)
        v_hat = v / (1 - beta2 ** t)
        p.sub_(lr * m_hat / (v_hat.sqrt() + eps))
# --8<-- [end:adam]


# --8<-- [start:flops]
def training_flops(params_per_source_token: int, params_per_target_token: int,
                   source_tokens: float, target_tokens: float) -> float:
    """训练的浮点运算量，6ND 估计：每个词元、每个参数，前向 2 次（乘、加），反向 4 次。

    编码器–解码器里源词元只经过编码器，目标词元经过解码器和输出投影，所以两边分开算。
    注意力分数 QKᵀ 与加权和的运算量（每层约 4·n·d，n 为句长）不在其中：n ≪ 6d 时可以忽略。
    """
    return 6.0 * (params_per_source_token * source_tokens + params_per_target_token * target_tokens)
# --8<-- [end:flops]
