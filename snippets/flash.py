"""第 12 章：FlashAttention 的前向（分块 + 在线 softmax + logsumexp）、HBM 访问次数的计数与闭式，
以及屋顶线模型（roofline）用到的算术强度。

flash_attention 建立在第 01 章的 online_softmax_update（snippets/attention.py 的 online-softmax 一节）
之上：那一节已经写好了「并入一块分数」的递推，这里只加上第 12 章需要的三样东西：查询块与键块可以
不同大小、因果掩码按块跳过、返回反向传播要用的 logsumexp。页面先引入 attention.py 的 imports、
online-softmax 两节，再引入本文件各节；所以下面从 snippets.attention 的导入写在各节之外。
测试：tests/ch12/。
"""

# --8<-- [start:imports]
import math
from fractions import Fraction

import torch
# --8<-- [end:imports]

from snippets.attention import _check_qkv, _shapes, online_softmax_update  # noqa: E402,F401  (页面先引入这两节)


# --8<-- [start:flash]
def flash_attention(q, k, v, causal=False, block_q=64, block_k=64):
    """FlashAttention 的前向：返回 (out, lse)，out 与 softmax(QKᵀ/√d_k)V 精确相等（只差浮点舍入的顺序）。

    q (..., n_q, d_k)，k (..., n_k, d_k)，v (..., n_k, d_v)；block_q、block_k：查询块、键块的大小。
    out (..., n_q, d_v)，与 q 同 dtype；lse (..., n_q) = log Σ_j exp(s_ij)，s = qkᵀ/√d_k，被遮住的位置不计入。
    m、ℓ、未归一化的输出与 lse 至少用 float32（bf16/fp16 的输入也一样），和真实内核在寄存器里的累加一样。
    causal=True：掩码对齐右下角（bottom-right），要求 n_q ≤ n_k，查询 i 只看 j ≤ i + (n_k − n_q)，
    即 q 是 k 的最后 n_q 个位置（解码一步：1 个查询看全部缓存）；n_q = n_k 时就是通常的 j ≤ i。
    整块都在对角线右上方的键块直接跳过（不读、不算）。
    同时存在的分数只有 block_q × block_k 个：除 out、lse 外，额外内存 O(block_q·block_k + block_q·d)。
    """
    _check_flash(q, k, v, causal, block_q, block_k)
    n_q, n_k, d_k = q.shape[-2], k.shape[-2], q.shape[-1]
    acc_dtype = torch.promote_types(q.dtype, torch.float32)  # 累加的精度：至少 float32
    offset = n_k - n_q  # 右下角对齐：查询 i 是第 i + offset 个位置
    out = q.new_empty(q.shape[:-1] + v.shape[-1:])  # (..., n_q, d_v)，与 q 同 dtype
    lse = q.new_empty(q.shape[:-1], dtype=acc_dtype)  # (..., n_q)
    for i in range(0, n_q, block_q):  # 外层：查询块（FlashAttention-2 的顺序，各块彼此独立，可以并行）
        q_blk = q[..., i:i + block_q, :].to(acc_dtype) / math.sqrt(d_k)  # (..., bq, d_k)
        bq = q_blk.shape[-2]
        m = q_blk.new_full(q_blk.shape[:-1] + (1,), float("-inf"))  # (..., bq, 1)
        l = q_blk.new_zeros(q_blk.shape[:-1] + (1,))  # (..., bq, 1)
        acc = q_blk.new_zeros(q_blk.shape[:-1] + v.shape[-1:])  # (..., bq, d_v)，不归一化
        for j in range(0, n_k, block_k):  # 内层：键块，K_j、V_j 读进片上 SRAM
            if causal and j > i + bq - 1 + offset:
                break  # 这一块的每个键都在每个查询之后：整块跳过
            k_blk = k[..., j:j + block_k, :].to(acc_dtype)  # (..., bk, d_k)
            s = q_blk @ k_blk.transpose(-2, -1)  # (..., bq, bk)
            if causal and j + s.shape[-1] - 1 > i + offset:  # 块跨过对角线：块内遮住 j > i + offset 的位置
                rows = torch.arange(i + offset, i + offset + bq, device=q.device)[:, None]  # (bq, 1)
                cols = torch.arange(j, j + s.shape[-1], device=q.device)[None, :]  # (1, bk)
                s = s.masked_fill(cols > rows, float("-inf"))
            v_blk = v[..., j:j + block_k, :].to(acc_dtype)  # (..., bk, d_v)
            m, l, acc = online_softmax_update(m, l, acc, s, v_blk)  # 第 01 章的递推
        out[..., i:i + bq, :] = acc / l  # 只在最后除一次 ℓ（FlashAttention-2），写回时转成 q 的 dtype
        lse[..., i:i + bq] = (m + torch.log(l)).squeeze(-1)  # L = m + log ℓ，反向传播只存它
    return out, lse
# --8<-- [end:flash]


# --8<-- [start:hbm]
def flash_block_sizes(d, sram_elems, order="flash"):
    """块大小 (B_r, B_c)，M = sram_elems = SRAM 能放下的元素数。

    "flash"：论文算法 1（外层 K、V）：B_c = ⌈M/(4d)⌉，B_r = min(B_c, d)。
    "flash2"：FlashAttention-2 的顺序（外层 Q）把这条规则对调：B_r = ⌈M/(4d)⌉，B_c = min(B_r, d)；
    外层的块要大，因为外层块读一次、内层块要反复读。两种规则下 Q_i、K_j、V_j、O_i、S_ij 各占 O(M)。
    """
    _check_order(order)
    big = math.ceil(sram_elems / (4 * d))
    if order == "flash2":
        return big, min(big, d)
    return min(big, d), big


def hbm_accesses(n, d, sram_bytes, method, bytes_per_value=2):
    """按算法的循环数出 HBM 读写的元素个数（读 + 写），n = 序列长度，d = 头宽。

    "standard"：论文的算法 0，三个内核 S = QKᵀ、P = softmax(S)、O = PV，每个内核把输入读一遍、输出写一遍。
    "flash"：论文的算法 1，外层遍历 K、V 块（B_c 行），内层遍历 Q 块（B_r 行）；每次内层迭代读 Q_i、O_i、
    ℓ_i、m_i，写回 O_i、ℓ_i、m_i（开头把 O、ℓ、m 初始化的 nd + 2n 次写不计）。
    "flash2"：FlashAttention-2 的顺序，也是 flash_attention 的顺序：外层遍历 Q 块（B_r 行），Q_i 读一次，
    内层遍历 K、V 块，全部 K、V 读一遍；m、ℓ、O_i 留在片上，最后写一次 O_i 与 L_i。
    sram_bytes / bytes_per_value = M 个元素。
    """
    _check_hbm(n, d, sram_bytes, method, bytes_per_value)
    if method == "standard":
        kernels = [  # (读的元素数, 写的元素数)
            (n * d + n * d, n * n),  # S = QKᵀ：读 Q、K，写 S
            (n * n, n * n),  # P = softmax(S)：读 S，写 P
            (n * n + n * d, n * d),  # O = PV：读 P、V，写 O
        ]
        return sum(r + w for r, w in kernels)
    b_r, b_c = flash_block_sizes(d, sram_bytes // bytes_per_value, method)
    total = 0
    if method == "flash2":
        for i in range(0, n, b_r):  # 外层：Q_i 读进 SRAM，m、ℓ、O_i 留在片上
            rows = min(b_r, n - i)
            total += rows * d
            for j in range(0, n, b_c):  # 内层：K_j、V_j 读进 SRAM
                total += 2 * min(b_c, n - j) * d
            total += rows * d + rows  # 写回 O_i 与 L_i
        return total
    for j in range(0, n, b_c):  # 外层：K_j、V_j 读进 SRAM
        cols = min(b_c, n - j)
        total += 2 * cols * d
        for i in range(0, n, b_r):  # 内层：读 Q_i、O_i、ℓ_i、m_i，算完写回 O_i、ℓ_i、m_i
            rows = min(b_r, n - i)
            total += (2 * rows * d + 2 * rows) + (rows * d + 2 * rows)
    return total


def hbm_closed_form(n, d, sram_bytes, method, bytes_per_value=2):
    """同一件事的闭式：standard = 4n² + 4nd；flash = 2nd + ⌈n/B_c⌉·(3nd + 4n) ≈ 12n²d²/M；
    flash2 = 2nd + n + ⌈n/B_r⌉·2nd ≈ 8n²d²/M。后两个都是 Θ(n²d²/M)。"""
    _check_hbm(n, d, sram_bytes, method, bytes_per_value)
    if method == "standard":
        return 4 * n * n + 4 * n * d
    b_r, b_c = flash_block_sizes(d, sram_bytes // bytes_per_value, method)
    if method == "flash2":
        return 2 * n * d + n + math.ceil(n / b_r) * 2 * n * d
    return 2 * n * d + math.ceil(n / b_c) * (3 * n * d + 4 * n)
# --8<-- [end:hbm]


# --8<-- [start:roofline]
# 加速器的峰值（NVIDIA 的规格表；稠密 = 不用 2:4 结构化稀疏，即表中带星号的稀疏值的一半；BF16 张量核心）与 HBM 带宽
ACCELERATORS = {
    "A100 SXM 80GB": {"bf16_dense_flops": 312e12, "hbm_bytes_per_s": 2.039e12,
                      "source": "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/"
                                "nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf"},
    "H100 SXM": {"bf16_dense_flops": 989.5e12, "hbm_bytes_per_s": 3.35e12,
                 "source": "https://resources.nvidia.com/en-us-gpu-resources/h100-datasheet-24306"},
    "H200 SXM": {"bf16_dense_flops": 989.5e12, "hbm_bytes_per_s": 4.8e12,
                 "source": "https://www.nvidia.com/en-us/data-center/h200/"},
}


def ridge_point(peak_flops, bytes_per_s):
    """屋顶线的拐点：算术强度超过 peak / bandwidth（FLOP/B）才可能受算力限制。"""
    return peak_flops / bytes_per_s


def attainable_flops(intensity, peak_flops, bytes_per_s):
    """屋顶线：min(峰值算力, 强度 × 带宽)。"""
    return min(peak_flops, intensity * bytes_per_s)


def linear_intensity(tokens, d_in, d_out, bytes_per_value=2):
    """一个线性层 Y = XW 的算术强度：FLOPs = 2·tokens·d_in·d_out；字节 = (W + X + Y) 各读写一次。"""
    flops = 2 * tokens * d_in * d_out
    nbytes = (d_in * d_out + tokens * d_in + tokens * d_out) * bytes_per_value
    return flops / nbytes


def decode_attention_intensity(n_heads, n_kv_heads, bytes_per_value=2):
    """解码一步的注意力（每个头 1 个查询，读整段 KV 缓存）：2·n_heads / (n_kv_heads · bytes_per_value)。

    每个 KV 头的 d_head·t 个 K 与 d_head·t 个 V 被 n_heads/n_kv_heads 个查询头各用一次（QKᵀ、PV 各 2 FLOP）；
    与缓存长度 t、头宽 d_head 都无关。
    """
    return 2 * n_heads / (n_kv_heads * bytes_per_value)


def mla_decode_flops_per_position(n_heads, d_head, d_latent, d_rope, absorbed=True):
    """MLA 解码一步（每个头 1 个查询）在每个缓存位置上、每层的 FLOPs。缓存里每个位置只有 c（d_latent）与 k^R（d_rope）。

    absorbed=True：查询已映射进潜空间，每个头与 c、k^R 点积（2(d_latent + d_rope)），再在潜空间里加权 c
    （2·d_latent）：2h(2d_latent + d_rope)，像一个 d_latent + d_rope 维键、d_latent 维值、所有头共用的 MQA。
    absorbed=False：先把这个位置的 c 升维成每个头的 k^C 与 v（2·2·h·d_head·d_latent），再做普通的注意力
    （2h(2d_head + d_rope)）。两者都不计与缓存长度无关的投影（q、W^{UK} 吸收、W^{UV}、W^O）。
    """
    _check_mla_intensity(n_heads=n_heads, d_head=d_head, d_latent=d_latent, d_rope=d_rope, absorbed=absorbed)
    if absorbed:
        return 2 * n_heads * (2 * d_latent + d_rope)
    return 4 * n_heads * d_head * d_latent + 2 * n_heads * (2 * d_head + d_rope)


def mla_decode_intensity(n_heads, d_head, d_latent, d_rope, absorbed=True, bytes_per_value=2):
    """MLA 解码一步的注意力强度（FLOP/B）：每个缓存位置的 FLOPs 除以读出它的 (d_latent + d_rope)·b 字节。

    吸收后是 2h(2d_c + d_h^R) / ((d_c + d_h^R)·b)，DeepSeek-V2（h = 128、d_c = 512、d_h^R = 64、bf16）约 242。
    """
    _check_mla_intensity(bytes_per_value=bytes_per_value)
    flops = mla_decode_flops_per_position(n_heads, d_head, d_latent, d_rope, absorbed)
    return flops / ((d_latent + d_rope) * bytes_per_value)


def compute_bound_batch(d_model, peak_flops, bytes_per_s, bytes_per_value=2):
    """解码时 d_model × d_model 线性层受算力限制的最小批大小 t（每个请求 1 个词元，t 个词元）。

    强度 I(t) = 2t·d² / (b·(d² + 2td)) = 2td / (b(d + 2t)) 随 t 增大、趋于 d/b 而不超过它（b = bytes_per_value）。
    I(t) ≥ 拐点 I* 解出 t ≥ b·I*·d / (2(d − b·I*))：只在 d > b·I* 时有解（bf16 时 d > 2I*，H100 上 d ≥ 591），
    否则任何批大小都受带宽限制，抛出 ValueError。用分数（Fraction）做精确的有理数运算，再向上取整。
    """
    _check_roofline(d_model, peak_flops, bytes_per_s, bytes_per_value)
    ridge = Fraction(peak_flops) / Fraction(bytes_per_s)  # 拐点 I*，浮点输入的精确值
    if d_model <= bytes_per_value * ridge:
        raise ValueError(f"d_model={d_model} is bandwidth-bound at every batch: the intensity of a d×d layer "
                         f"stays below d_model/bytes_per_value = {d_model / bytes_per_value:g} FLOP/B, "
                         f"and the ridge point is {float(ridge):.4g} FLOP/B")
    return math.ceil(bytes_per_value * ridge * d_model / (2 * (d_model - bytes_per_value * ridge)))
# --8<-- [end:roofline]


# --8<-- [start:checks]
def _check_flash(q, k, v, causal, block_q, block_k):
    _check_qkv(q, k, v)
    for name, b in (("block_q", block_q), ("block_k", block_k)):
        if not isinstance(b, int) or isinstance(b, bool) or b <= 0:
            raise ValueError(f"{name} must be a positive int, got {name}={b!r}: {_shapes(q=q, k=k, v=v)}")
    if not isinstance(causal, bool):
        raise ValueError(f"causal must be True or False, got causal={causal!r}: {_shapes(q=q, k=k, v=v)}")
    if causal and q.shape[-2] > k.shape[-2]:  # 右下角对齐时前 n_q − n_k 个查询一个键也看不到
        raise ValueError(f"causal=True (bottom-right aligned) needs n_q <= n_k, got {_shapes(q=q, k=k, v=v)}")


def _check_order(order):
    if order not in ("flash", "flash2"):
        raise ValueError(f"order must be 'flash' or 'flash2', got order={order!r}")


def _check_roofline(d_model, peak_flops, bytes_per_s, bytes_per_value):
    for name, x in (("d_model", d_model), ("bytes_per_value", bytes_per_value)):
        if not isinstance(x, int) or isinstance(x, bool) or x <= 0:
            raise ValueError(f"{name} must be a positive int, got {name}={x!r}")
    for name, x in (("peak_flops", peak_flops), ("bytes_per_s", bytes_per_s)):
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) or x <= 0:
            raise ValueError(f"{name} must be a positive finite number, got {name}={x!r}")


def _check_mla_intensity(absorbed=True, **sizes):
    if not isinstance(absorbed, bool):
        raise ValueError(f"absorbed must be True or False, got absorbed={absorbed!r}")
    for name, x in sizes.items():
        if not isinstance(x, int) or isinstance(x, bool) or x <= 0:
            raise ValueError(f"{name} must be a positive int, got {name}={x!r} ({sizes})")


def _check_hbm(n, d, sram_bytes, method, bytes_per_value):
    if method not in ("standard", "flash", "flash2"):
        raise ValueError(f"method must be 'standard', 'flash' or 'flash2', got method={method!r}")
    for name, x in (("n", n), ("d", d), ("sram_bytes", sram_bytes), ("bytes_per_value", bytes_per_value)):
        if not isinstance(x, int) or isinstance(x, bool) or x <= 0:
            raise ValueError(f"{name} must be a positive int, got {name}={x!r}")
    if sram_bytes // bytes_per_value < 4 * d:
        raise ValueError(f"sram_bytes={sram_bytes} holds fewer than 4·d = {4 * d} values of {bytes_per_value} B")
# --8<-- [end:checks]
