"""第 12 章：多头潜在注意力（Multi-head Latent Attention，MLA；DeepSeek-V2，arXiv 2405.04434 §2.1）。

K、V 由一个共享的低维潜向量 c（d_latent 维）升维得到；位置信息走一条解耦的 RoPE 键 k^R（d_rope 维，
所有头共用）。缓存每个词元只存 c 与 k^R：每层 d_latent + d_rope 个数。absorbed=True 时把 W^{UK} 吸收进
查询一侧、W^{UV} 吸收进输出一侧，只用缓存里的 c 与 k^R 算出同一个输出。

简化（页面上写明）：不压缩查询（论文另有 d_c' = 1536 的查询压缩，只省激活，不影响缓存），不用偏置
（有偏置时吸收多出一项常数），没有论文里 c、c^Q 之后的 RMSNorm。

页面先引入 snippets/checks.py 的 imports、checks 两节与 snippets/positional.py 的 imports、rope 两节；
本文件的小节按名字使用 _check_tensor、apply_rope。下面两行导入在所有小节之外。测试：tests/ch12/。
"""

from snippets.checks import _check_tensor  # noqa: F401  (小节里按名字使用)
from snippets.positional import apply_rope  # noqa: F401  (小节里按名字使用)

# --8<-- [start:imports]
import math

import torch
from torch import nn
# --8<-- [end:imports]


# --8<-- [start:mla]
class MultiHeadLatentAttention(nn.Module):
    """因果自注意力。x (batch, n, d_model) → out (batch, n, d_model)。

    每个头 i：q_i = [q_i^C; RoPE(q_i^R)]（d_head + d_rope 维），k_i = [W_i^{UK} c; RoPE(k^R)]，v_i = W_i^{UV} c，
    c = W^{DKV} x（d_latent 维），k^R = W^{KR} x（d_rope 维，所有头共用）。
    """

    def __init__(self, d_model, n_heads, d_head, d_latent, d_rope):
        super().__init__()
        _check_mla_sizes(d_model, n_heads, d_head, d_latent, d_rope)
        self.d_model, self.n_heads, self.d_head = d_model, n_heads, d_head
        self.d_latent, self.d_rope = d_latent, d_rope
        self.w_q = nn.Linear(d_model, n_heads * d_head, bias=False)  # 内容查询 q^C
        self.w_qr = nn.Linear(d_model, n_heads * d_rope, bias=False)  # 每个头自己的 RoPE 查询 q^R
        self.w_dkv = nn.Linear(d_model, d_latent, bias=False)  # W^{DKV}：压缩成潜向量 c
        self.w_kr = nn.Linear(d_model, d_rope, bias=False)  # W^{KR}：共用的 RoPE 键
        self.w_uk = nn.Linear(d_latent, n_heads * d_head, bias=False)  # W^{UK}：c → 各头的 k^C
        self.w_uv = nn.Linear(d_latent, n_heads * d_head, bias=False)  # W^{UV}：c → 各头的 v
        self.w_o = nn.Linear(n_heads * d_head, d_model, bias=False)  # W^O

    def latent_cache(self, x):
        """缓存里存的东西：c (batch, n, d_latent) 与 RoPE 之后的 k^R (batch, n, d_rope)。"""
        return self.w_dkv(x), apply_rope(self.w_kr(x))

    def forward(self, x, absorbed=False):
        _check_tensor("x", x, "(batch, n, d_model)", (None, None, self.d_model), self.w_q.weight.dtype)
        batch, n, _ = x.shape
        h, d_h = self.n_heads, self.d_head
        c, k_rope = self.latent_cache(x)  # (batch, n, d_latent), (batch, n, d_rope)
        q_c = self.w_q(x).view(batch, n, h, d_h).transpose(1, 2)  # (batch, h, n, d_head)
        q_r = apply_rope(self.w_qr(x).view(batch, n, h, self.d_rope).transpose(1, 2))  # (batch, h, n, d_rope)
        w_uk = self.w_uk.weight.view(h, d_h, self.d_latent)  # (h, d_head, d_latent)
        w_uv = self.w_uv.weight.view(h, d_h, self.d_latent)  # (h, d_head, d_latent)
        scale = 1.0 / math.sqrt(d_h + self.d_rope)
        rope_scores = q_r @ k_rope.unsqueeze(1).transpose(-2, -1)  # (batch, h, n, n)：k^R 所有头共用
        if absorbed:  # q^Cᵀ (W^{UK} c) = (W^{UK}ᵀ q^C)ᵀ c：查询先映射到潜空间，直接和缓存里的 c 点积
            q_lat = q_c @ w_uk  # (batch, h, n, d_latent)
            scores = q_lat @ c.unsqueeze(1).transpose(-2, -1) + rope_scores  # (batch, h, n, n)
        else:  # 朴素：先把 c 升维成每个头的 K
            k_c = torch.einsum("hdc,bnc->bhnd", w_uk, c)  # (batch, h, n, d_head)
            scores = q_c @ k_c.transpose(-2, -1) + rope_scores
        causal = torch.ones(n, n, dtype=torch.bool, device=x.device).tril()  # (n, n)
        weights = torch.softmax((scores * scale).masked_fill(~causal, float("-inf")), dim=-1)  # (batch, h, n, n)
        if absorbed:  # Σ_j a_ij (W^{UV} c_j) = W^{UV} (Σ_j a_ij c_j)：先在潜空间加权，最后再升维
            o_lat = weights @ c.unsqueeze(1)  # (batch, h, n, d_latent)
            heads = o_lat @ w_uv.transpose(-2, -1)  # (batch, h, n, d_head)
        else:
            v = torch.einsum("hdc,bnc->bhnd", w_uv, c)  # (batch, h, n, d_head)
            heads = weights @ v
        return self.w_o(heads.transpose(1, 2).reshape(batch, n, h * d_h))  # (batch, n, d_model)
# --8<-- [end:mla]


# --8<-- [start:checks]
def _check_mla_sizes(d_model, n_heads, d_head, d_latent, d_rope):
    sizes = {"d_model": d_model, "n_heads": n_heads, "d_head": d_head, "d_latent": d_latent, "d_rope": d_rope}
    for name, x in sizes.items():
        if not isinstance(x, int) or isinstance(x, bool) or x <= 0:
            raise ValueError(f"{name} must be a positive int, got {name}={x!r} ({sizes})")
    if d_rope % 2 != 0:
        raise ValueError(f"d_rope must be even (RoPE rotates pairs), got d_rope={d_rope} ({sizes})")
    if d_latent >= 2 * n_heads * d_head:
        raise ValueError(f"d_latent={d_latent} must be smaller than the 2·n_heads·d_head = {2 * n_heads * d_head} "
                         f"numbers MHA caches, or the latent saves nothing ({sizes})")
# --8<-- [end:checks]
