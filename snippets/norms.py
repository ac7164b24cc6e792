"""第 05 章「前馈网络、残差与层归一化」里的归一化与深度代码：从零写的 LayerNorm、RMSNorm，
它们的雅可比矩阵，BatchNorm 在词元上的做法（用来对比），以及初始化时逐层梯度范数的测量。

页面按文件顺序引入各节。节之间的依赖：每节都要 imports；layernorm、rmsnorm 还要最后一节 checks
（检查函数 _check_last_dim，页面在算法之后引入它）；其余各节只要 imports（depth-gradients 接收
一组现成的层，不关心层是怎么写的）。测试：tests/ch05/。

统一约定：归一化都作用在最后一维（特征维 d）上；形状不对时抛 ValueError，写出参数名和形状。
"""

# --8<-- [start:imports]
import math

import torch
from torch import nn
# --8<-- [end:imports]


# --8<-- [start:layernorm]
class LayerNorm(nn.Module):
    """层归一化（Ba et al., 2016）：对每个位置的 d 个特征各自归一化，再乘增益、加偏置。

    LN(u) = γ ⊙ (u − μ·1) / √(σ² + ε) + β，μ、σ² 是这一行 d 个数的均值和（有偏）方差。
    只用同一个位置自己的数：不跨位置，也不跨批里的其他样本。
    """

    def __init__(self, d: int, eps: float = 1e-5):
        super().__init__()
        self.d, self.eps = d, eps
        self.gain = nn.Parameter(torch.ones(d))    # γ：初始化为 1
        self.bias = nn.Parameter(torch.zeros(d))   # β：初始化为 0

    def forward(self, u: torch.Tensor) -> torch.Tensor:
        # u: (..., d)，例如 (batch, n, d)
        _check_last_dim(u, self.d, "u")
        mu = u.mean(dim=-1, keepdim=True)                          # (..., 1) 每行的均值
        var = (u - mu).pow(2).mean(dim=-1, keepdim=True)           # (..., 1) 有偏方差（除以 d）
        u_hat = (u - mu) / torch.sqrt(var + self.eps)              # (..., d) 均值 0、方差约 1
        return self.gain * u_hat + self.bias                       # (..., d)
# --8<-- [end:layernorm]


# --8<-- [start:rmsnorm]
class RMSNorm(nn.Module):
    """均方根归一化（Zhang & Sennrich, 2019）：不减均值，只除以均方根，再乘增益 g。

    RMSNorm(x) = g ⊙ x / √(mean(x²) + ε)。没有偏置 β，也没有「减均值」这一步。
    """

    def __init__(self, d: int, eps: float = 1e-6):
        super().__init__()
        self.d, self.eps = d, eps
        self.gain = nn.Parameter(torch.ones(d))    # g：初始化为 1

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # x: (..., d)
        _check_last_dim(x, self.d, "x")
        rms = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)   # (..., 1)
        return self.gain * (x / rms)                                        # (..., d)
# --8<-- [end:rmsnorm]


# --8<-- [start:norm-jacobians]
def layernorm_jacobian(u: torch.Tensor, gain: torch.Tensor | None = None,
                       eps: float = 1e-5) -> torch.Tensor:
    """LayerNorm 在一个向量 u (d,) 处的雅可比矩阵 ∂LN(u)/∂u，闭式，返回 (d, d)。

    记 s = √(σ² + ε)，û = (u − μ·1)/s，则
        J = diag(γ) · (1/s) · (I − 1·1ᵀ/d − û·ûᵀ/d)。
    括号里的矩阵把 1 方向（整体平移）和 û 方向（整体缩放）去掉；ε = 0 时它恰是
    投影到这两个方向的正交补（d − 2 维）上的正交投影。
    """
    if u.dim() != 1:
        raise ValueError(f"u must be one vector of shape (d,), got shape {tuple(u.shape)}")
    d = u.shape[0]
    s = torch.sqrt(u.var(unbiased=False) + eps)                     # 标量
    u_hat = (u - u.mean()) / s                                      # (d,)
    one = torch.ones(d, dtype=u.dtype, device=u.device)
    eye = torch.eye(d, dtype=u.dtype, device=u.device)
    p = eye - torch.outer(one, one) / d - torch.outer(u_hat, u_hat) / d   # (d, d)
    j = p / s
    if gain is not None:
        j = gain.to(u.dtype).unsqueeze(1) * j                       # 左乘 diag(γ)：第 i 行乘 γ_i
    return j


def rmsnorm_jacobian(x: torch.Tensor, gain: torch.Tensor | None = None,
                     eps: float = 1e-6) -> torch.Tensor:
    """RMSNorm 在 x (d,) 处的雅可比矩阵，闭式，返回 (d, d)。

    记 r = √(mean(x²) + ε)，x̂ = x / r，则 J = diag(g) · (1/r) · (I − x̂·x̂ᵀ/d)：
    只去掉 x̂ 方向（整体缩放），不去掉 1 方向（RMSNorm 不减均值）。
    """
    if x.dim() != 1:
        raise ValueError(f"x must be one vector of shape (d,), got shape {tuple(x.shape)}")
    d = x.shape[0]
    r = torch.sqrt(x.pow(2).mean() + eps)
    x_hat = x / r
    j = (torch.eye(d, dtype=x.dtype, device=x.device) - torch.outer(x_hat, x_hat) / d) / r
    if gain is not None:
        j = gain.to(x.dtype).unsqueeze(1) * j
    return j
# --8<-- [end:norm-jacobians]


# --8<-- [start:token-batchnorm]
def batchnorm_over_tokens(x: torch.Tensor, keep: torch.Tensor | None = None,
                          eps: float = 1e-5) -> torch.Tensor:
    """BatchNorm 用在 (batch, n, d) 上时做的事（训练模式，不带 γ、β）：每个特征 j
    用「批里所有样本、所有位置」的均值和方差归一化。

    keep: 可选的 bool (batch, n)，True = 参与统计的位置（例如只统计真实词元、不统计填充）。
    不传时所有位置都参与统计，和 nn.BatchNorm1d 直接作用在补齐后的张量上一样。
    """
    if x.dim() != 3:
        raise ValueError(f"x must have shape (batch, n, d), got shape {tuple(x.shape)}")
    if keep is None:
        keep = torch.ones(x.shape[:2], dtype=torch.bool, device=x.device)
    if keep.shape != x.shape[:2]:
        raise ValueError(f"keep must have shape (batch, n) = {tuple(x.shape[:2])}, got {tuple(keep.shape)}")
    w = keep.unsqueeze(-1).to(x.dtype)                              # (batch, n, 1)：参与统计的位置为 1
    count = w.sum(dim=(0, 1))                                       # 参与统计的词元数
    mu = (x * w).sum(dim=(0, 1)) / count                            # (d,) 每个特征一个均值
    var = ((x - mu).pow(2) * w).sum(dim=(0, 1)) / count             # (d,) 每个特征一个（有偏）方差
    return (x - mu) / torch.sqrt(var + eps)                         # (batch, n, d)
# --8<-- [end:token-batchnorm]


# --8<-- [start:depth-gradients]
def xavier_init_(module: nn.Module) -> nn.Module:
    """把 module 里所有 nn.Linear 的权重改成 Xavier 均匀初始化、偏置清零（Xiong et al., 2020
    分析时假设的初始化）；LayerNorm 保持 γ = 1、β = 0。返回 module 本身。"""
    for sub in module.modules():
        if isinstance(sub, nn.Linear):
            nn.init.xavier_uniform_(sub.weight)
            if sub.bias is not None:
                nn.init.zeros_(sub.bias)
    return module


def gradient_norms_per_layer(layers: nn.ModuleList, final_norm: nn.Module, head: nn.Module,
                             x: torch.Tensor, targets: torch.Tensor) -> dict:
    """让 x (batch, n, d) 依次穿过 layers，再经 final_norm 和读出层 head，对交叉熵损失求梯度。

    返回三条逐层曲线（第 l 项对应第 l 层，l 从 1 数起）：
      param_grad   第 l 层全部参数梯度的 Frobenius 范数 ‖∂L/∂θ_l‖
      input_grad   损失对第 l 层输入（残差流 x_{l−1}）的梯度范数 ‖∂L/∂x_{l−1}‖
      stream_rms   残差流 x_l 的均方根（第 0 项是输入 x_0，共 len(layers) + 1 项）
    """
    streams = [x.detach().requires_grad_(True)]                     # x_0
    h = streams[0]
    for layer in layers:
        h = layer(h)                                                # (batch, n, d)
        h.retain_grad()                                             # 留下 ∂L/∂x_l
        streams.append(h)
    logits = head(final_norm(h))                                    # (batch, n, vocab)
    loss = nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
    for p in list(layers.parameters()) + list(head.parameters()) + list(final_norm.parameters()):
        p.grad = None
    loss.backward()
    param_grad = [math.sqrt(sum(p.grad.pow(2).sum().item() for p in layer.parameters()))
                  for layer in layers]
    input_grad = [t.grad.norm().item() for t in streams[:-1]]
    stream_rms = [t.detach().pow(2).mean().sqrt().item() for t in streams]
    return {"loss": loss.item(), "param_grad": param_grad, "input_grad": input_grad,
            "stream_rms": stream_rms}
# --8<-- [end:depth-gradients]


# --8<-- [start:checks]
def _check_last_dim(x: torch.Tensor, d: int, name: str) -> None:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.dim() < 1 or x.shape[-1] != d:
        raise ValueError(f"{name} must have last dimension d={d}, got shape {tuple(x.shape)}")
# --8<-- [end:checks]
