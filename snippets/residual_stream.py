"""第 11 章「残差流与深度」背后的代码：深度注意力（Attention Residuals 的核心运算）、Block AttnRes 的
两阶段计算，以及一个把残差连接换成深度注意力的仅解码器语言模型 AttnResDecoder。

来源：Kimi Team, "Attention Residuals", arXiv 2603.15031（§3–3.2）。模型用读者已有的积木：
snippets/attention.py 的 MultiHeadAttention 与 causal_mask，snippets/transformer.py 的 TokenEmbedding、
PositionalEncoding、PositionwiseFeedForward，snippets/norms.py 的 RMSNorm，输入检查用 snippets/checks.py
的 _check_tensor。页面先引入这些小节（放在「回顾」里），再引入本文件的小节；所以本文件的小节直接按
名字使用它们。下面这几行导入在所有小节之外，只在 `import snippets.residual_stream` 时生效。
测试：tests/ch11/。
"""

from snippets.attention import MultiHeadAttention, causal_mask  # noqa: F401  (小节里按名字使用)
from snippets.checks import _check_tensor  # noqa: F401
from snippets.norms import RMSNorm  # noqa: F401
from snippets.transformer import PositionalEncoding, PositionwiseFeedForward, TokenEmbedding  # noqa: F401

# --8<-- [start:imports]
import math

import torch
from torch import nn
# --8<-- [end:imports]


# --8<-- [start:depth-attention]
def depth_weights(values, query, gain=None, eps=1e-6):
    """深度注意力的权重：α_s = softmax_s(query · rmsnorm(values[s]))，每个位置各算各的。

    values (K, ..., d)：K 个深度来源（嵌入、各子层的输出或块摘要）叠在第 0 维；
    query (d,)：这个子层的伪查询 w_l，一个参数，不由隐藏状态算出；gain (d,)：键的 RMSNorm 增益。
    返回 α (K, ...)：沿第 0 维（深度）归一化，不是沿词元。
    """
    _check_depth_inputs(values, query, gain)
    rms = torch.sqrt(values.pow(2).mean(dim=-1, keepdim=True) + eps)   # (K, ..., 1)
    keys = values / rms                                                # (K, ..., d)：只归一化键
    if gain is not None:
        keys = keys * gain
    logits = keys @ query                                              # (K, ...)：没有 1/√d，没有温度
    return torch.softmax(logits, dim=0)                                # (K, ...)：对深度做 softmax


def depth_attention(values, query, gain=None, eps=1e-6):
    """h = Σ_s α_s · values[s]：键 = 值，值不归一化；query 为零时 α = 1/K，h 是各来源的平均。"""
    alpha = depth_weights(values, query, gain, eps)                    # (K, ...)
    return (alpha.unsqueeze(-1) * values).sum(dim=0)                   # (..., d)


def rms_keys(value, eps=1e-6):
    """一个来源的键 k̂ = v / rms(v)（不带增益的 RMSNorm）。每个来源只算一次，此后每一层复用。"""
    return value / torch.sqrt(value.pow(2).mean(dim=-1, keepdim=True) + eps)   # (..., d)


def depth_attention_cached(values, keys, query, gain=None):
    """与 depth_attention 相同的 h 与 α，但来源不叠成一个张量：模型里用这个写法。

    values：K 个来源 [(..., d)]；keys：它们的 rms_keys，事先算好、跨层复用。
    logit_s = k̂_s · (w ⊙ g)：增益并进查询（起作用的只有 w ⊙ g）。h 逐个来源累加，
    反向传播只为这一层留下 K 个权重（每个位置 K 个标量），不再复制一份全部来源。
    返回 h (..., d) 与 α (K, ...)。
    """
    _check_cached_inputs(values, keys, query, gain)
    q = query if gain is None else query * gain                        # (d,)
    logits = torch.stack([k @ q for k in keys])                        # (K, ...)：没有 1/√d
    alpha = torch.softmax(logits, dim=0)                               # (K, ...)：对深度做 softmax
    h = alpha[0].unsqueeze(-1) * values[0]                             # (..., d)
    for a, v in zip(alpha[1:], values[1:]):
        h = h + a.unsqueeze(-1) * v                                    # 累加，不 stack
    return h, alpha
# --8<-- [end:depth-attention]


# --8<-- [start:two-phase]
def inter_block_phase(blocks, queries, gains=None, eps=1e-6):
    """第一阶段：第 n 块里 S 个子层的伪查询一次算完对 n 个已完成块摘要的注意力（还没归一化）。

    blocks (n, ..., d)：b_0（嵌入）… b_{n−1}；queries (S, d)；gains (S, d) 或 None。
    返回 m (S, ...)：每行最大 logit；z (S, ...) = Σ_j exp(logit_j − m)；acc (S, ..., d) = Σ_j exp(logit_j − m)·b_j。
    """
    _check_phase_inputs(blocks, queries, gains)
    rms = torch.sqrt(blocks.pow(2).mean(dim=-1, keepdim=True) + eps)   # (n, ..., 1)
    keys = blocks / rms                                                # (n, ..., d)
    q = queries if gains is None else queries * gains                  # (S, d)：增益并进查询，一次矩阵乘
    logits = torch.einsum("sd,n...d->sn...", q, keys)                  # (S, n, ...)
    m = logits.max(dim=1).values                                       # (S, ...)
    p = torch.exp(logits - m.unsqueeze(1))                             # (S, n, ...)
    return m, p.sum(dim=1), torch.einsum("sn...,n...d->s...d", p, blocks)


def merge_partial(m, z, acc, partial, query, gain=None, eps=1e-6):
    """第二阶段的一步：把块内部分和 partial (..., d) 当作第 n+1 个来源，用在线 softmax 并进第一阶段的一行。

    m、z (...) 与 acc (..., d) 是第一阶段里这个子层的那一行；partial 为 None（块内第一层）时直接归一化。
    """
    if partial is None:
        return acc / z.unsqueeze(-1)                                   # (..., d)
    rms = torch.sqrt(partial.pow(2).mean(dim=-1, keepdim=True) + eps)  # (..., 1)
    logit = (partial / rms) @ (query if gain is None else query * gain)  # (...)
    m_new = torch.maximum(m, logit)                                    # 新的最大值
    old, new = torch.exp(m - m_new), torch.exp(logit - m_new)          # 旧部分的缩放、新来源的权重
    z_new = z * old + new                                              # (...)
    acc_new = acc * old.unsqueeze(-1) + new.unsqueeze(-1) * partial    # (..., d)
    return acc_new / z_new.unsqueeze(-1)


def block_attnres_two_phase(blocks, sublayers, queries, gains=None, eps=1e-6):
    """一个块的两阶段计算。blocks (n, ..., d)：已完成的 n 个块摘要；sublayers：块内 S 个子层 f_i（(..., d) -> (..., d)）；
    queries (S, d)。返回各子层的输入 [h_1 … h_S] 和这个块的摘要 b_n = Σ_i f_i(h_i)。"""
    m, z, acc = inter_block_phase(blocks, queries, gains, eps)         # 第一阶段：与块内计算无关，可批量
    partial, inputs = None, []
    for i, f in enumerate(sublayers):                                  # 第二阶段：块内逐层，顺序进行
        g = None if gains is None else gains[i]
        h = merge_partial(m[i], z[i], acc[i], partial, queries[i], g, eps)   # (..., d)
        inputs.append(h)
        out = f(h)
        partial = out if partial is None else partial + out           # 块内：普通的求和
    return inputs, partial
# --8<-- [end:two-phase]


# --8<-- [start:decoder]
class AttnResDecoder(nn.Module):
    """仅解码器语言模型：每个注意力子层、每个 FFN 子层之前，用深度注意力代替残差求和。

    - n_blocks=None：Full AttnRes，来源是嵌入和此前每个子层的输出；
    - n_blocks=N：Block AttnRes，2·n_layers 个子层分成 N 块，每块 S = ⌈2·n_layers / N⌉ 个子层
      （除不尽时最后一块较短），来源是已完成的块摘要和当前块的部分和；
    - residual="standard"：同样的积木、pre-RMSNorm 的普通残差 h ← h + f(RMSNorm(h))，作基线。
    伪查询初始化为零（开始时 α 均匀）；每个 AttnRes 运算有一个伪查询 w_l 和一个键 RMSNorm 增益，
    共 2d 个参数；最后还有一个汇总所有来源、送往输出层的 AttnRes。
    """

    def __init__(self, vocab_size, n_layers, d_model, n_heads, d_ff, n_blocks=None,
                 residual="attnres", max_len=512):
        super().__init__()
        if residual not in ("attnres", "standard"):
            raise ValueError(f"residual must be 'attnres' or 'standard', got residual={residual!r}")
        self.residual, self.n_sublayers = residual, 2 * n_layers
        self.block_size = self._block_size(n_blocks)
        self.embed = TokenEmbedding(vocab_size, d_model)                        # ×√d
        self.positional = PositionalEncoding(d_model, max_len, dropout=0.0)     # 正弦位置编码
        self.sublayers = nn.ModuleList()                                        # 注意力、FFN 交替
        for _ in range(n_layers):
            self.sublayers.append(MultiHeadAttention(d_model, n_heads))
            self.sublayers.append(PositionwiseFeedForward(d_model, d_ff, dropout=0.0))
        self.norms = nn.ModuleList(RMSNorm(d_model) for _ in range(self.n_sublayers))   # pre-norm
        if residual == "attnres":
            # 2L 个子层各一个，加上送往输出层的那一个：(2L + 1, d)
            self.queries = nn.Parameter(torch.zeros(self.n_sublayers + 1, d_model))     # 伪查询，零初始化
            self.key_gains = nn.Parameter(torch.ones(self.n_sublayers + 1, d_model))    # 键 RMSNorm 的增益
        self.final_norm = RMSNorm(d_model)
        self.output_projection = nn.Linear(d_model, vocab_size, bias=False)
        self.trace = None                                                       # record=True 时的测量

    def _block_size(self, n_blocks):
        if n_blocks is None:
            return 1 if self.residual == "attnres" else None                   # Full：每个输出自成一块
        if self.residual != "attnres":
            raise ValueError(f"n_blocks={n_blocks} needs residual='attnres', got residual={self.residual!r}")
        if not isinstance(n_blocks, int) or not 1 <= n_blocks <= self.n_sublayers:
            raise ValueError(f"n_blocks must be an int in [1, {self.n_sublayers}] (2·n_layers sublayers), "
                             f"got n_blocks={n_blocks!r}")
        size = math.ceil(self.n_sublayers / n_blocks)
        if math.ceil(self.n_sublayers / size) != n_blocks:
            raise ValueError(f"n_blocks={n_blocks} cannot split {self.n_sublayers} sublayers into blocks of "
                             f"{size} with one shorter last block")
        return size

    def _sublayer(self, j, x, mask, weights=None):
        # x: (batch, n, d)；偶数 j 是注意力，奇数 j 是 FFN；都先 RMSNorm（pre-norm）
        a = self.norms[j](x)
        if j % 2 == 0:
            out, w = self.sublayers[j](a, a, a, mask=mask)                     # (batch, n, d), (batch, h, n, n)
            if weights is not None:
                weights.append(w)                                               # record=True：留下每层的注意力权重
            return out
        return self.sublayers[j](a)                                             # (batch, n, d)

    def forward(self, tokens, record=False, mask=None):
        # tokens (batch, n) -> logits (batch, n, |V|)
        # mask：None 时是因果掩码；也可以传一个 (n, n) 的 bool 掩码（True = 可以看，比如滑动窗口），每层共用
        x0 = self.positional(self.embed(tokens))                                # (batch, n, d)：v_0 = b_0
        if mask is None:
            mask = causal_mask(tokens.shape[1], device=tokens.device)           # (n, n)
        _check_decoder_mask(mask, tokens.shape[1])
        inputs, outputs, alphas = [], [], []
        weights = [] if record else None                                        # 每个注意力子层 (batch, h, n, n)
        if self.residual == "standard":
            h = x0
            for j in range(self.n_sublayers):
                inputs.append(h)
                out = self._sublayer(j, h, mask, weights)
                outputs.append(out)
                h = h + out                                                     # h_{l+1} = h_l + f_l(h_l)
            final = h
        else:
            done, partial = [x0], None                                          # 已完成的块摘要；当前块的部分和
            keys = [rms_keys(x0)]                                               # 已完成来源的键：每个只算一次
            for j in range(self.n_sublayers):
                values = done + ([] if partial is None else [partial])          # K_j 个来源，各 (batch, n, d)
                ks = keys + ([] if partial is None else [rms_keys(partial)])    # 部分和每层都变，它的键现算
                h, alpha = depth_attention_cached(values, ks, self.queries[j], self.key_gains[j])  # (batch, n, d)
                alphas.append(alpha)                                            # (K_j, batch, n)
                inputs.append(h)
                out = self._sublayer(j, h, mask, weights)
                outputs.append(out)
                partial = out if partial is None else partial + out             # 块内：普通求和
                if (j + 1) % self.block_size == 0 or j + 1 == self.n_sublayers:
                    done.append(partial)                                        # 块结束：摘要 b_n
                    keys.append(rms_keys(partial))
                    partial = None
            final, alpha = depth_attention_cached(done, keys, self.queries[-1], self.key_gains[-1])  # 输出层汇总
            alphas.append(alpha)
        if record:
            self.trace = {"x0": x0, "inputs": inputs, "outputs": outputs, "final": final,
                          "alphas": alphas, "attention": weights}
        return self.output_projection(self.final_norm(final))                   # (batch, n, |V|)
# --8<-- [end:decoder]


# --8<-- [start:checks]
VALUE_CHECKS = True  # 读数值的检查（掩码的对角线与上三角）；meta 张量没有数值，契约测试在 meta 上把它关掉


def _check_depth_inputs(values, query, gain):
    """values (K, ..., d) 至少一个来源；query、gain 都是 (d,)。"""
    if not isinstance(values, torch.Tensor) or values.dim() < 2:
        shape = tuple(values.shape) if isinstance(values, torch.Tensor) else type(values).__name__
        raise ValueError(f"values must have shape (K, ..., d) with the depth sources on dim 0, got {shape}")
    _check_tensor("values", values, "(K, ..., d)", (None,) * values.dim())
    if values.shape[0] < 1:
        raise ValueError(f"values must hold at least one source (K >= 1), got values {tuple(values.shape)}")
    d = values.shape[-1]
    _check_tensor("query", query, f"(d,) with d = values.shape[-1] = {d}", (d,))
    if gain is not None:
        _check_tensor("gain", gain, f"(d,) with d = values.shape[-1] = {d}", (d,))


def _check_cached_inputs(values, keys, query, gain):
    """values、keys：同样长度（≥ 1）的来源列表，每个张量形状相同 (..., d)；query、gain 都是 (d,)。"""
    if not isinstance(values, (list, tuple)) or not isinstance(keys, (list, tuple)) or len(values) < 1:
        raise ValueError(f"values and keys must be non-empty lists of sources (..., d), got "
                         f"{type(values).__name__} of length {len(values) if hasattr(values, '__len__') else '?'}")
    if len(keys) != len(values):
        raise ValueError(f"keys must hold one key per source: len(values)={len(values)}, len(keys)={len(keys)}")
    shape = tuple(values[0].shape)
    for name, group in (("values", values), ("keys", keys)):
        for s, t in enumerate(group):
            _check_tensor(f"{name}[{s}]", t, f"{shape} like values[0]", shape)
    d = shape[-1]
    _check_tensor("query", query, f"(d,) with d = values[0].shape[-1] = {d}", (d,))
    if gain is not None:
        _check_tensor("gain", gain, f"(d,) with d = values[0].shape[-1] = {d}", (d,))


def _check_phase_inputs(blocks, queries, gains):
    """blocks (n, ..., d) 至少一个块；queries (S, d) 至少一行；gains 与 queries 同形状或 None。先查形状，再取下标。"""
    if not isinstance(blocks, torch.Tensor) or blocks.dim() < 2:
        got = tuple(blocks.shape) if isinstance(blocks, torch.Tensor) else type(blocks).__name__
        raise ValueError(f"blocks must have shape (n, ..., d) with the completed blocks on dim 0, got {got}")
    _check_tensor("blocks", blocks, "(n, ..., d)", (None,) * blocks.dim())
    if blocks.shape[0] < 1:
        raise ValueError(f"blocks must hold at least one block (b_0), got blocks {tuple(blocks.shape)}")
    d = blocks.shape[-1]
    _check_tensor("queries", queries, f"(S, d) with S >= 1 and d = blocks.shape[-1] = {d}", (None, d))
    if queries.shape[0] < 1:
        raise ValueError(f"queries must hold at least one query (S >= 1), got queries {tuple(queries.shape)}")
    if gains is not None:
        _check_tensor("gains", gains, f"(S, d) like queries {tuple(queries.shape)}", tuple(queries.shape))


def _check_decoder_mask(mask, n):
    """AttnResDecoder 的 mask：bool (n, n)，对角线全 True（每个位置看得到自己），对角线以上全 False（因果）。"""
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool or tuple(mask.shape) != (n, n):
        got = f"{mask.dtype} {tuple(mask.shape)}" if isinstance(mask, torch.Tensor) else type(mask).__name__
        raise ValueError(f"mask must be a bool tensor of shape (n, n) = ({n}, {n}) (True = may attend), got {got}")
    if VALUE_CHECKS and (not mask.diagonal().all() or mask.triu(1).any()):
        raise ValueError(f"mask (n = {n}) must let every position see itself and nothing after it")
# --8<-- [end:checks]
