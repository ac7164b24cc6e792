"""第 06 章「嵌入、权重共享与分词」：查表与独热向量、共享参数的分组、嵌入与位置编码的尺度之比。"""

# --8<-- [start:imports]
import math

import torch
from torch import nn
# --8<-- [end:imports]


# --8<-- [start:lookup]
def one_hot_lookup(tokens: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """查表的另一种写法：独热矩阵乘嵌入矩阵。tokens (batch, n)，weight (|V|, d) -> (batch, n, d)。"""
    if tokens.dtype != torch.long:
        raise TypeError(f"tokens must be torch.long ids, got dtype {tokens.dtype} with shape {tuple(tokens.shape)}")
    if weight.dim() != 2:
        raise ValueError(f"weight must have shape (vocab_size, d_model), got shape {tuple(weight.shape)}")
    one_hot = nn.functional.one_hot(tokens, weight.shape[0]).to(weight.dtype)  # (batch, n, |V|)
    return one_hot @ weight                                                     # (batch, n, d)
# --8<-- [end:lookup]


# --8<-- [start:tying]
def shared_parameter_groups(model: nn.Module) -> list[list[str]]:
    """给共享的参数分组：同一组里的几个名字是同一个 nn.Parameter（同一块内存，data_ptr 相同），只算一份参数。

    按参数对象分组，不按 data_ptr：meta 设备上每个张量的 data_ptr 都是 0，按它分组会把所有参数算成一组。
    """
    groups: dict[int, list[str]] = {}
    for name, p in model.named_parameters(remove_duplicate=False):
        groups.setdefault(id(p), []).append(name)
    return [names for names in groups.values() if len(names) > 1]
# --8<-- [end:tying]


# --8<-- [start:scale]
def embedding_to_pe_ratio(weight: torch.Tensor, scale: float, pe: torch.Tensor) -> float:
    """输入嵌入（查表结果乘 scale）与位置编码的均方根范数之比：√(E‖scale·e_v‖² / E‖P_pos‖²)。

    weight (|V|, d) 的元素取自 N(0, σ²) 时 E‖scale·e_v‖² = scale²·d·σ²；正弦编码每个位置 ‖P_pos‖² = d/2，
    所以 scale = √d 时比值约为 √(2dσ²)：σ² = 1 得 √(2d)，σ² = 1/d 得 √2。
    """
    if weight.dim() != 2 or pe.dim() != 2 or weight.shape[1] != pe.shape[1]:
        raise ValueError(f"weight (|V|, d) and pe (max_len, d) must share d, got shapes "
                         f"{tuple(weight.shape)} and {tuple(pe.shape)}")
    emb_sq = (scale * weight.detach()).pow(2).sum(-1).double().mean()  # E‖scale·e_v‖²，按行求和后再取平均
    pe_sq = pe.detach().pow(2).sum(-1).double().mean()                 # E‖P_pos‖²
    return math.sqrt(float(emb_sq / pe_sq))
# --8<-- [end:scale]
