"""第 05 章「前馈网络、残差与层归一化」里的前馈网络代码：SwiGLU 前馈网络，把 FFN 读成
「键–值记忆」的分解，以及参数量、FLOPs 的闭式公式。

论文的 FFN（ReLU，两层）就是 snippets/transformer.py 的 PositionwiseFeedForward（小节 ffn），
本文件不重写它。页面按文件顺序引入各节；每节只需要 imports 一节。测试：tests/ch05/。
"""

# --8<-- [start:imports]
import math

import torch
import torch.nn.functional as F
from torch import nn
# --8<-- [end:imports]


# --8<-- [start:ffn-as-memory]
def ffn_memory_terms(w1: torch.Tensor, b1: torch.Tensor, w2: torch.Tensor,
                     x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """把 FFN(x) = ReLU(x W1 + b1) W2 + b2 拆成 d_ff 个「记忆槽」（Geva et al., 2021 的读法）。

    第 i 个槽有一把键 k_i（W1 的第 i 列）和一个值 v_i（W2 的第 i 行）；
    系数 m_i = ReLU(x·k_i + b1_i) 决定值 v_i 以多大权重加进输出：FFN(x) = Σ_i m_i v_i + b2。
    权重用 nn.Linear 的存法传入：w1 (d_ff, d)、b1 (d_ff,)、w2 (d, d_ff)。
    返回 coeffs (..., d_ff) 和 values (d_ff, d)。
    """
    if x.shape[-1] != w1.shape[1] or w2.shape[1] != w1.shape[0]:
        raise ValueError(f"shapes do not chain: x {tuple(x.shape)}, w1 {tuple(w1.shape)}, "
                         f"w2 {tuple(w2.shape)}")
    coeffs = torch.relu(x @ w1.T + b1)       # (..., d_ff)：m_i = ReLU(x·k_i + b_i)
    values = w2.T                            # (d_ff, d)：第 i 行是 v_i
    return coeffs, values
# --8<-- [end:ffn-as-memory]


# --8<-- [start:swiglu]
class SwiGLUFFN(nn.Module):
    """SwiGLU 前馈网络（Shazeer, 2020）：FFN(x) = (Swish(x W_gate) ⊙ x W_up) W_down。

    Swish(z) = z·sigmoid(z)（即 SiLU）。和 LLaMA 等模型一样不带偏置。
    三个矩阵共 3·d·d_ff 个参数；要与 d_ff = 4d 的两矩阵 FFN（8d²）持平，取 d_ff ≈ 8d/3。
    """

    def __init__(self, d_model: int, d_ff: int):
        super().__init__()
        self.w_gate = nn.Linear(d_model, d_ff, bias=False)   # (d -> d_ff)，过 Swish 的一路
        self.w_up = nn.Linear(d_model, d_ff, bias=False)     # (d -> d_ff)，线性的一路
        self.w_down = nn.Linear(d_ff, d_model, bias=False)   # (d_ff -> d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # x: (batch, n, d_model)
        gate = F.silu(self.w_gate(x))                        # (batch, n, d_ff)
        return self.w_down(gate * self.w_up(x))              # (batch, n, d_model)


def swiglu_hidden_size(d_model: int, multiple_of: int = 256,
                       ffn_dim_multiplier: float | None = None) -> int:
    """LLaMA 的取法：先取 4d 的 2/3（与 ReLU FFN 参数持平），可再乘一个系数，
    最后向上取整到 multiple_of 的倍数（矩阵尺寸对硬件友好）。"""
    hidden = int(2 * (4 * d_model) / 3)                      # ⌊8d/3⌋
    if ffn_dim_multiplier is not None:
        hidden = int(ffn_dim_multiplier * hidden)
    return multiple_of * math.ceil(hidden / multiple_of)
# --8<-- [end:swiglu]


# --8<-- [start:counts]
def ffn_param_count(d: int, d_ff: int) -> int:
    # 论文的 FFN：W1 (d×d_ff) + b1 (d_ff) + W2 (d_ff×d) + b2 (d)
    return 2 * d * d_ff + d_ff + d


def swiglu_param_count(d: int, d_ff: int) -> int:
    # 三个无偏置矩阵
    return 3 * d * d_ff


def mha_param_count(d: int) -> int:
    # W^Q、W^K、W^V、W^O 各 d×d，各带偏置 d
    return 4 * (d * d + d)


def encoder_layer_flops(n: int, d: int, d_ff: int) -> dict:
    """一个编码器层对长度 n 的序列做一次前向的矩阵乘法 FLOPs（一次乘加算 2 次）。

    注意力：Q、K、V、O 四个投影 4·2nd²；分数 QKᵀ 与加权和 AV 各 2n²d。
    FFN：两个矩阵 2·2·n·d·d_ff。不计 softmax、ReLU、LayerNorm、偏置这些逐元素运算。
    """
    attention = 8 * n * d * d + 4 * n * n * d
    ffn = 4 * n * d * d_ff
    return {"attention": attention, "ffn": ffn, "total": attention + ffn}


def moe_ffn_counts(d: int, d_ff: int, num_experts: int, top_k: int) -> dict:
    """混合专家（MoE）层：num_experts 个论文式 FFN，加一个无偏置的路由器 (d → num_experts)，
    每个词元只送进得分最高的 top_k 个专家。

    params         全部参数：专家 E·(2·d·d_ff + d_ff + d)，路由器 d·E
    active_params  一个词元实际用到的参数：top_k 个专家 + 路由器
    flops_per_token  一个词元的矩阵乘法 FLOPs：路由器 2·d·E，每个被选中的专家 4·d·d_ff
    （不计 softmax、top-k 选择、按权重相加这些逐元素运算）
    """
    if not 1 <= top_k <= num_experts:
        raise ValueError(f"top_k must be in [1, num_experts={num_experts}], got {top_k}")
    expert = ffn_param_count(d, d_ff)
    router = d * num_experts
    return {"params": num_experts * expert + router,
            "active_params": top_k * expert + router,
            "flops_per_token": 2 * d * num_experts + top_k * 4 * d * d_ff}
# --8<-- [end:counts]
