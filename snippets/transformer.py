"""第 02 章「Transformer 全景」背后的代码：从零写的编码器–解码器 Transformer 与它的 KV 缓存。
解码（贪心解码）在 snippets/decoding.py。测试：tests/ch02/。

页面先引入 snippets/attention.py 的 imports、sdpa、masks、mha、checks 小节（讲 KV 缓存的页面
还有 kv-cache），再引入本文件的小节；所以本文件的小节直接使用 MultiHeadAttention、KVCache
这些名字，好像它们就定义在上面。下面这行导入在所有小节之外，
只在 `import snippets.transformer` 时生效（页面上不显示）。
"""

from snippets.attention import KVCache, MultiHeadAttention  # noqa: F401  (小节里按名字使用)
from snippets.positional import pe_offset_matrix, sinusoidal_positional_encoding  # noqa: F401  (同上；第 07 章)

# --8<-- [start:imports]
import math

import torch
from torch import nn
# --8<-- [end:imports]


# --8<-- [start:positional-encoding]
class PositionalEncoding(nn.Module):
    """把正弦位置编码加到嵌入上，再做 dropout（论文 §5.4 的「嵌入 + PE 之和」上的 dropout）。"""

    def __init__(self, d_model: int, max_len: int = 1024, dropout: float = 0.1):
        super().__init__()
        self.max_len = max_len
        self.dropout = nn.Dropout(dropout)
        # 不是参数，不参与训练；persistent=False：不写进 state_dict，可随时重算
        self.register_buffer("pe", sinusoidal_positional_encoding(max_len, d_model), persistent=False)

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        # x: (batch, n, d_model)；offset：第一个位置的编号（增量解码时 = 已生成的长度）
        n = x.shape[1]
        if offset < 0 or offset + n > self.max_len:
            raise ValueError(
                f"sequence positions {offset}..{offset + n - 1} (offset={offset}) exceed max_len={self.max_len} "
                f"or start below 0 (x has shape {tuple(x.shape)})"
            )
        return self.dropout(x + self.pe[offset:offset + n].to(x.dtype))  # (batch, n, d_model)
# --8<-- [end:positional-encoding]


# --8<-- [start:embedding]
class TokenEmbedding(nn.Module):
    """词嵌入（论文 §3.4）：查表，再乘 √d_model（scale_embedding=True 时）。

    权重是一个 (vocab_size, d_model) 的 nn.Parameter，以便与另一个嵌入和输出投影共享。
    """

    def __init__(self, vocab_size: int, d_model: int, scale_embedding: bool = True):
        super().__init__()
        self.vocab_size = vocab_size
        self.d_model = d_model
        self.scale = math.sqrt(d_model) if scale_embedding else 1.0
        # 初始化为 N(0, 1/d_model)：乘 √d_model 后每维方差约为 1，和位置编码同一量级。
        # 权重共享时它也是输出投影：与当前输入词元无关的 logits 方差约为 1；但残差流里留着
        # 当前输入词元 y 的 √d·e_y，第 y 列的 logit 约为 c·√d（c ≤ 1），初始时 argmax 就是 y
        self.weight = nn.Parameter(torch.randn(vocab_size, d_model) / math.sqrt(d_model))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        # tokens: (batch, n) 整数 id  ->  (batch, n, d_model)
        check_token_ids(tokens, self.vocab_size, name="tokens")
        return nn.functional.embedding(tokens, self.weight) * self.scale


VALUE_CHECKS = True  # 读数值的检查（词 id 是否越界）；meta 张量没有数值，契约测试在 meta 上把它关掉


def check_token_ids(tokens: torch.Tensor, vocab_size: int, name: str) -> None:
    """词 id 必须是 (batch, n) 的整数张量，取值在 [0, vocab_size)。"""
    if not isinstance(tokens, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of token ids, got {type(tokens).__name__}")
    if tokens.dtype not in (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8):
        raise TypeError(
            f"{name} must hold integer token ids (torch.long), got dtype {tokens.dtype} "
            f"with shape {tuple(tokens.shape)}"
        )
    if tokens.dim() != 2:
        raise ValueError(f"{name} must have shape (batch, n), got shape {tuple(tokens.shape)}")
    if VALUE_CHECKS and tokens.numel() > 0:
        lo, hi = int(tokens.min()), int(tokens.max())
        if lo < 0 or hi >= vocab_size:
            raise ValueError(
                f"{name} holds ids in [{lo}, {hi}], outside the vocabulary [0, {vocab_size}) "
                f"(shape {tuple(tokens.shape)})"
            )
# --8<-- [end:embedding]


# --8<-- [start:ffn]
class PositionwiseFeedForward(nn.Module):
    """逐位置前馈网络（论文 §3.3）：FFN(x) = max(0, x W1 + b1) W2 + b2。

    同一组权重作用在每个位置上，位置之间不交换信息（相当于两个核大小为 1 的卷积）。
    参数量：d_model·d_ff + d_ff + d_ff·d_model + d_model = 2·d·d_ff + d_ff + d。
    """

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.1):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)     # W1: (d_model -> d_ff), b1: (d_ff,)
        self.linear2 = nn.Linear(d_ff, d_model)     # W2: (d_ff -> d_model), b2: (d_model,)
        # 两层之间的 dropout 论文 §5.4 没有写；tensor2tensor 的开关 relu_dropout 在论文时期的
        # transformer_base_v1 里是 0.0。这里与 torch.nn.TransformerEncoderLayer 一样用同一个 p（一个偏离）
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # x: (batch, n, d_model)
        hidden = torch.relu(self.linear1(x))        # (batch, n, d_ff)
        return self.linear2(self.dropout(hidden))   # (batch, n, d_model)
# --8<-- [end:ffn]


# --8<-- [start:encoder-layer]
def add_and_norm(x, sublayer, norm: nn.LayerNorm, dropout: nn.Dropout, norm_first: bool):
    """残差连接 + LayerNorm，两种放法：

    post-LN（论文 §3.1，norm_first=False）：LayerNorm(x + Dropout(Sublayer(x)))
    pre-LN （norm_first=True）：           x + Dropout(Sublayer(LayerNorm(x)))
    """
    if norm_first:
        return x + dropout(sublayer(norm(x)))
    return norm(x + dropout(sublayer(x)))


class EncoderLayer(nn.Module):
    """编码器层：多头自注意力 + 残差/LN，再接 FFN + 残差/LN。"""

    def __init__(self, d_model: int, num_heads: int, d_ff: int,
                 dropout: float = 0.1, norm_first: bool = False, eps: float = 1e-5, d_k: int | None = None):
        super().__init__()
        self.d_model = d_model
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, num_heads, d_k=d_k)   # d_k=None：d_model / h
        self.ffn = PositionwiseFeedForward(d_model, d_ff, dropout)
        self.norm1 = nn.LayerNorm(d_model, eps=eps)
        self.norm2 = nn.LayerNorm(d_model, eps=eps)
        self.dropout1 = nn.Dropout(dropout)         # 残差 dropout（论文 §5.4）
        self.dropout2 = nn.Dropout(dropout)
        self.attn_weights = None                    # 最近一次的自注意力权重，供可视化

    def _self_attention(self, x, src_mask):
        # Q、K、V 都来自同一个序列 x；src_mask 只遮住 padding 的键，不遮未来
        out, weights = self.self_attn(x, x, x, mask=src_mask)  # (batch, n, d), (batch, h, n, n)
        self.attn_weights = weights.detach()
        return out

    def forward(self, x: torch.Tensor, src_mask: torch.Tensor | None = None) -> torch.Tensor:
        # x: (batch, n, d_model)；src_mask: bool，可广播到 (batch, h, n, n)，True = 可以看
        check_d_model(x, self.d_model, name="x")
        x = add_and_norm(x, lambda h: self._self_attention(h, src_mask),
                         self.norm1, self.dropout1, self.norm_first)
        x = add_and_norm(x, self.ffn, self.norm2, self.dropout2, self.norm_first)
        return x                                     # (batch, n, d_model)


def check_d_model(x: torch.Tensor, d_model: int, name: str) -> None:
    if x.dim() != 3 or x.shape[-1] != d_model:
        raise ValueError(
            f"{name} must have shape (batch, n, d_model={d_model}), got shape {tuple(x.shape)}"
        )
# --8<-- [end:encoder-layer]


# --8<-- [start:decoder-layer]
class DecoderLayer(nn.Module):
    """解码器层：带因果掩码的自注意力、交叉注意力（K/V 来自编码器输出）、FFN，各带残差/LN。"""

    def __init__(self, d_model: int, num_heads: int, d_ff: int,
                 dropout: float = 0.1, norm_first: bool = False, eps: float = 1e-5, d_k: int | None = None):
        super().__init__()
        self.d_model = d_model
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, num_heads, d_k=d_k)   # d_k=None：d_model / h
        self.cross_attn = MultiHeadAttention(d_model, num_heads, d_k=d_k)
        self.ffn = PositionwiseFeedForward(d_model, d_ff, dropout)
        self.norm1 = nn.LayerNorm(d_model, eps=eps)
        self.norm2 = nn.LayerNorm(d_model, eps=eps)
        self.norm3 = nn.LayerNorm(d_model, eps=eps)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.dropout3 = nn.Dropout(dropout)
        self.self_attn_weights = None                # (batch, h, m, m)，供可视化
        self.cross_attn_weights = None               # (batch, h, m, n)

    def _self_attention(self, y, tgt_mask, cache=None):
        # Q、K、V 都来自目标序列 y；tgt_mask 是因果掩码：位置 i 只看 j ≤ i
        out, weights = self.self_attn(y, y, y, mask=tgt_mask, cache=cache)
        self.self_attn_weights = weights.detach()
        return out

    def _cross_attention(self, y, memory, memory_mask, cache=None):
        # Q 来自解码器 y (batch, m, d)；K、V 来自编码器输出 memory (batch, n, d)。
        # 不需要因果掩码（整个源句都已知），只遮住源句的 padding
        out, weights = self.cross_attn(y, memory, memory, mask=memory_mask, cache=cache)
        self.cross_attn_weights = weights.detach()   # (batch, h, m, n)
        return out

    def forward(self, y: torch.Tensor, memory: torch.Tensor,
                tgt_mask: torch.Tensor | None = None,
                memory_mask: torch.Tensor | None = None,
                cache: tuple | None = None) -> torch.Tensor:
        # y: (batch, m, d_model)；memory: (batch, n, d_model)
        # cache：增量解码时是这一层的 (自注意力的 KVCache, 交叉注意力的 KVCache)，原样交给两个注意力模块
        check_d_model(y, self.d_model, name="y")
        check_d_model(memory, self.d_model, name="memory")
        if memory.shape[0] != y.shape[0]:
            raise ValueError(f"batch mismatch: y has shape {tuple(y.shape)}, "
                             f"memory has shape {tuple(memory.shape)}")
        self_cache, cross_cache = cache if cache is not None else (None, None)
        y = add_and_norm(y, lambda h: self._self_attention(h, tgt_mask, self_cache),
                         self.norm1, self.dropout1, self.norm_first)
        y = add_and_norm(y, lambda h: self._cross_attention(h, memory, memory_mask, cross_cache),
                         self.norm2, self.dropout2, self.norm_first)
        y = add_and_norm(y, self.ffn, self.norm3, self.dropout3, self.norm_first)
        return y                                     # (batch, m, d_model)
# --8<-- [end:decoder-layer]


# --8<-- [start:model]
class Transformer(nn.Module):
    """编码器–解码器 Transformer（论文图 1）。

    - tie_weights=True：源嵌入、目标嵌入、softmax 前的输出投影共用同一个矩阵（§3.4，要求共享词表）。
    - norm_first=False：论文的 post-LN；True：pre-LN，此时编码器和解码器栈末尾各加一个 LayerNorm
      （否则残差流没有归一化就进入交叉注意力和输出投影）。post-LN 没有末尾 LayerNorm。
    - scale_embedding=True：嵌入乘 √d_model（§3.4）。
    - d_k：查询、键的头宽（默认 d_model / h；表 3 (B) 把它调小，值的头宽不变）。
    """

    def __init__(self, vocab_size: int, d_model: int = 512, num_heads: int = 8,
                 num_layers: int = 6, d_ff: int = 2048, dropout: float = 0.1,
                 max_len: int = 1024, tie_weights: bool = True, norm_first: bool = False,
                 scale_embedding: bool = True, d_k: int | None = None):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError(f"d_model={d_model} must be divisible by num_heads={num_heads}")
        self.vocab_size, self.d_model, self.num_heads = vocab_size, d_model, num_heads
        self.num_layers, self.max_len = num_layers, max_len
        self.src_embed = TokenEmbedding(vocab_size, d_model, scale_embedding)
        self.tgt_embed = TokenEmbedding(vocab_size, d_model, scale_embedding)
        self.positional = PositionalEncoding(d_model, max_len, dropout)   # 编码器、解码器共用
        self.encoder_layers = nn.ModuleList(
            EncoderLayer(d_model, num_heads, d_ff, dropout, norm_first, d_k=d_k) for _ in range(num_layers))
        self.decoder_layers = nn.ModuleList(
            DecoderLayer(d_model, num_heads, d_ff, dropout, norm_first, d_k=d_k) for _ in range(num_layers))
        self.encoder_norm = nn.LayerNorm(d_model) if norm_first else nn.Identity()
        self.decoder_norm = nn.LayerNorm(d_model) if norm_first else nn.Identity()
        self.output_projection = nn.Linear(d_model, vocab_size, bias=False)  # (d -> |V|)
        if tie_weights:
            # 三处共用同一个 nn.Parameter：同一块存储，梯度累加到一起
            self.tgt_embed.weight = self.src_embed.weight
            self.output_projection.weight = self.src_embed.weight

    def encode(self, src: torch.Tensor, src_mask: torch.Tensor | None = None) -> torch.Tensor:
        # src: (batch, n) 词 id -> memory: (batch, n, d_model)
        check_token_ids(src, self.vocab_size, name="src")
        x = self.positional(self.src_embed(src))                 # (batch, n, d)
        for layer in self.encoder_layers:
            x = layer(x, src_mask)
        return self.encoder_norm(x)

    def decode(self, tgt: torch.Tensor, memory: torch.Tensor,
               src_mask: torch.Tensor | None = None,
               tgt_mask: torch.Tensor | None = None,
               cache: "DecoderCache | None" = None) -> torch.Tensor:
        # tgt: (batch, m) 右移一位的目标 id（首位是 BOS）；memory: (batch, n, d)
        # cache：增量解码时传入（见 kv-cache 一节），tgt 只含还没处理过的新位置
        # 返回解码器最后一层的输出 (batch, m, d_model)
        check_token_ids(tgt, self.vocab_size, name="tgt")
        m = tgt.shape[1]
        past = 0 if cache is None else cache.length              # 缓存里已有的目标位置数 t
        if tgt_mask is None:
            # (m, t + m)：新位置 i 只看 j ≤ t + i；t = 0 时就是 causal_mask(m)
            tgt_mask = torch.ones(m, past + m, dtype=torch.bool, device=tgt.device).tril(past)
        elif tuple(tgt_mask.shape[-2:]) != (m, past + m):
            raise ValueError(f"tgt_mask has shape {tuple(tgt_mask.shape)}, but the target has length m={m} "
                             f"(tgt shape {tuple(tgt.shape)}) after {past} cached positions: "
                             f"it must end in ({m}, {past + m})")
        y = self.positional(self.tgt_embed(tgt), offset=past)    # (batch, m, d)
        layer_caches = [None] * len(self.decoder_layers) if cache is None else cache.layers
        for layer, layer_cache in zip(self.decoder_layers, layer_caches):
            y = layer(y, memory, tgt_mask, src_mask, cache=layer_cache)
        if cache is not None:
            cache.length += m
        return self.decoder_norm(y)

    def forward(self, src: torch.Tensor, tgt: torch.Tensor,
                src_mask: torch.Tensor | None = None,
                tgt_mask: torch.Tensor | None = None) -> torch.Tensor:
        # src: (batch, n)，tgt: (batch, m)  ->  logits: (batch, m, vocab_size)
        if src.shape[0] != tgt.shape[0]:
            raise ValueError(f"batch mismatch: src has shape {tuple(src.shape)}, "
                             f"tgt has shape {tuple(tgt.shape)}")
        memory = self.encode(src, src_mask)
        return self.output_projection(self.decode(tgt, memory, src_mask, tgt_mask))
# --8<-- [end:model]


# --8<-- [start:kv-cache]
class DecoderCache:
    """增量解码的缓存：每个解码器层一对 KVCache，交给 Transformer.decode 的 cache 参数。

    - 自注意力：K、V 各 (batch, h, t, d_k)，每解码一步增长一行（t = 已处理的目标位置数）；
    - 交叉注意力：K、V 各 (batch, h, n, d_k)，第一步由编码器输出 memory 算出，之后不再变。
    memory 和源句掩码 src_mask 也存在这里：一次解码自始至终用同一份。
    """

    def __init__(self, model: "Transformer", memory: torch.Tensor,
                 src_mask: torch.Tensor | None = None):
        check_d_model(memory, model.d_model, name="memory")
        self.memory, self.src_mask = memory, src_mask
        self.length = 0                                   # 已处理的目标位置数 t
        self.layers = [(KVCache(), KVCache(static=True)) for _ in model.decoder_layers]

    def self_attention_nbytes(self) -> int:
        return sum(self_kv.nbytes() for self_kv, _ in self.layers)

    def cross_attention_nbytes(self) -> int:
        return sum(cross_kv.nbytes() for _, cross_kv in self.layers)
# --8<-- [end:kv-cache]


# --8<-- [start:param-count]
def encoder_layer_param_count(d: int, d_ff: int) -> int:
    # 自注意力 4 个 (d×d 权重 + d 偏置)；FFN 2·d·d_ff + d_ff + d；2 个 LayerNorm 各 2d
    return 4 * (d * d + d) + 2 * d * d_ff + d_ff + d + 4 * d


def decoder_layer_param_count(d: int, d_ff: int) -> int:
    # 自注意力 + 交叉注意力 8 个 (d×d + d)；FFN；3 个 LayerNorm 各 2d
    return 8 * (d * d + d) + 2 * d * d_ff + d_ff + d + 6 * d


def transformer_param_count(vocab_size: int, d_model: int, num_layers: int, d_ff: int,
                            tie_weights: bool = True, norm_first: bool = False) -> int:
    """与上面的 Transformer 模块逐项对应的闭式参数量（注意力头数 h 不出现）。

    共享权重：嵌入矩阵只算一次 |V|·d；不共享：源嵌入、目标嵌入、输出投影各一份（无偏置）。
    post-LN 没有末尾 LayerNorm；pre-LN 的编码器栈、解码器栈末尾各有一个（各 2d）。
    """
    total = num_layers * (encoder_layer_param_count(d_model, d_ff)
                          + decoder_layer_param_count(d_model, d_ff))
    total += vocab_size * d_model * (1 if tie_weights else 3)
    if norm_first:
        total += 2 * (2 * d_model)
    return total


def count_parameters(module: nn.Module) -> int:
    # module.parameters() 对共享的 nn.Parameter 只返回一次
    return sum(p.numel() for p in module.parameters())
# --8<-- [end:param-count]
