"""第 13 章：环形注意力（ring attention）/ 上下文并行，在一台机器上模拟设备循环。

每个「设备」持有序列的一段 Q、K、V；K、V 块沿环传 P 步，每一步各设备把收到的块用第 01 章的
online_softmax_update（snippets/attention.py 的 online-softmax 一节）并进自己的 (m, ℓ, acc)。
页面先引入 attention.py 的 imports、online-softmax 两节，所以下面的导入写在各节之外。测试：tests/ch13/。
"""

# --8<-- [start:imports]
import math

import torch
# --8<-- [end:imports]

from snippets.attention import online_softmax_update  # noqa: E402  (页面先引入 online-softmax 一节)


# --8<-- [start:ring]
def ring_attention(q, k, v, n_devices, causal=False):
    """把长度 n 切成 n_devices 段，模拟环：第 s 步设备 p 收到第 (p − s) mod P 段的 K、V。

    q (..., n, d_k)，k (..., n, d_k)，v (..., n, d_v) → (..., n, d_v)（q 的 dtype），与 softmax(QKᵀ/√d_k)V 相等。
    每个设备任何时候只存自己的 Q 段、一段 K/V 与 (m, ℓ, acc)：内存 O(n/P · d)，通信 P − 1 步。
    """
    n, d_k = q.shape[-2], q.shape[-1]
    if not isinstance(n_devices, int) or isinstance(n_devices, bool) or not 1 <= n_devices <= n:
        raise ValueError(f"n_devices must be an int in [1, n], got {n_devices!r}: q {tuple(q.shape)}")
    bounds = [round(p * n / n_devices) for p in range(n_devices + 1)]  # 各段的起止
    segs = [slice(bounds[p], bounds[p + 1]) for p in range(n_devices)]
    acc_dtype = torch.promote_types(q.dtype, torch.float32)  # m、ℓ、acc 至少用 float32 累加
    state = []
    for p in range(n_devices):  # 每个设备的初始状态
        qp = q[..., segs[p], :].to(acc_dtype) / math.sqrt(d_k)
        state.append([qp, qp.new_full(qp.shape[:-1] + (1,), float("-inf")), qp.new_zeros(qp.shape[:-1] + (1,)),
                      qp.new_zeros(qp.shape[:-1] + v.shape[-1:])])
    for step in range(n_devices):  # 环转一圈：P 步（P − 1 次传递）
        for p in range(n_devices):  # 真实系统里各设备同时算这一步
            src = (p - step) % n_devices
            qp, m, l, acc = state[p]
            s = qp @ k[..., segs[src], :].to(acc_dtype).transpose(-2, -1)  # (..., n_p, n_src)
            if causal:
                rows = torch.arange(bounds[p], bounds[p + 1], device=q.device)[:, None]
                cols = torch.arange(bounds[src], bounds[src + 1], device=q.device)[None, :]
                s = s.masked_fill(cols > rows, float("-inf"))
            state[p][1:] = online_softmax_update(m, l, acc, s, v[..., segs[src], :].to(acc_dtype))
    return torch.cat([acc / l for _, _, l, acc in state], dim=-2).to(q.dtype)  # 写回时转成 q 的 dtype
# --8<-- [end:ring]
