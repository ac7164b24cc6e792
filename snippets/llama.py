"""一个 LLaMA 式的只解码器（decoder-only）语言模型，全部用前面各章已有的零件拼成：
RMSNorm（第 05 章，snippets/norms.py）、SwiGLUFFN（第 05 章，snippets/ffn.py）、
旋转位置编码 apply_rope_half / apply_rope（第 07 章，snippets/positional.py）、
分组查询注意力 GroupedQueryAttention（第 04 章，snippets/multihead.py）、
KV 缓存 KVCache 与公式 (1) scaled_dot_product_attention（第 01、02 章，snippets/attention.py），
以及词嵌入 TokenEmbedding（第 02 章，snippets/transformer.py）。

本文件不另写注意力：RotaryGroupedQueryAttention 沿用 GroupedQueryAttention 的 w_q、w_k、w_v、w_o 和
分组方式，只在投影之后、进缓存之前把 q、k 转一下，注意力本身仍是 scaled_dot_product_attention。
与 Hugging Face LlamaForCausalLM 逐项对照（复制权重后 logits 相同、贪心解码逐词相同）的测试在
tests/equivalence/test_equivalence_llama.py。

页面先引入 snippets/attention.py 的 imports、sdpa、masks、mha、kv-cache、checks，snippets/multihead.py
的 imports、gqa，snippets/norms.py 的 imports、rmsnorm、checks，snippets/ffn.py 的 imports、swiglu，
snippets/checks.py 的 imports、checks，snippets/positional.py 的 imports、rope，snippets/transformer.py 的
imports、embedding，再引入本文件的小节；所以本文件的小节直接使用这些名字。下面这几行导入在所有小节之外，
只在 `import snippets.llama` 时生效（页面上不显示）。
节之间的依赖：rotary-gqa 只要 imports；block 要 rotary-gqa；model 要 block；generate 要 model。
"""

from snippets.attention import KVCache, _check_mha_inputs, scaled_dot_product_attention  # noqa: F401
from snippets.ffn import SwiGLUFFN  # noqa: F401  (小节里按名字使用)
from snippets.multihead import GroupedQueryAttention
from snippets.norms import RMSNorm  # noqa: F401
from snippets.positional import apply_rope, apply_rope_half  # noqa: F401
from snippets.transformer import TokenEmbedding, check_token_ids  # noqa: F401

# --8<-- [start:imports]
import torch
from torch import nn
# --8<-- [end:imports]


# --8<-- [start:rotary-gqa]
class RotaryGroupedQueryAttention(GroupedQueryAttention):
    """带 RoPE 的因果分组查询自注意力：LLaMA 2/3、Mistral、Qwen 的注意力层。

    与 GroupedQueryAttention 相同的 w_q (d_model -> d_model)、w_k、w_v (d_model -> n_kv_heads·d_head)、w_o，
    LLaMA 不带偏置（bias=False）。rope="half"：维度 i 与 i + d_head/2 配对（Hugging Face、GPT-NeoX 的写法）；
    rope="interleaved"：维度 2i 与 2i+1 配对（RoFormer、Meta 原始 LLaMA 代码的写法）。
    forward(x (batch, n, d_model), cache=None) 只做自注意力，因果掩码在这里生成：
    cache 里已有 t 个位置时，新来的 n 个位置编号 t … t+n−1，第 i 个新位置看前 t + i + 1 个键。
    返回 out (batch, n, d_model) 与 weights (batch, n_heads, n, t + n)。
    """

    def __init__(self, d_model, n_heads, n_kv_heads, base=10000.0, rope="half", bias=False):
        super().__init__(d_model, n_heads, n_kv_heads, bias=bias)
        if rope not in ("half", "interleaved"):
            raise ValueError(f"rope must be 'half' or 'interleaved', got rope={rope!r}")
        if self.d_head % 2 != 0:
            raise ValueError(f"RoPE rotates pairs of dimensions: d_head = d_model / n_heads = "
                             f"{d_model} / {n_heads} = {self.d_head} must be even")
        self.base, self.rope = base, rope

    def _rotate(self, x, positions):
        # x: (batch, heads, n, d_head)；每个头在自己的 d_head 维里转，转角只看位置
        if self.rope == "half":
            return apply_rope_half(x, positions, self.base)
        return apply_rope(x, positions, self.base)

    def forward(self, x, cache=None):
        if self.check_inputs:
            _check_mha_inputs(self, x, x, x, None, cache)
        batch, n, _ = x.shape
        past = 0 if cache is None else cache.length                                    # 缓存里已有 t 个位置
        positions = torch.arange(past, past + n, device=x.device)                      # (n,)：t … t+n−1
        q = self.w_q(x).view(batch, n, self.n_heads, self.d_head).transpose(1, 2)      # (batch, h, n, d_head)
        k = self.w_k(x).view(batch, n, self.n_kv_heads, self.d_head).transpose(1, 2)   # (batch, g, n, d_head)
        v = self.w_v(x).view(batch, n, self.n_kv_heads, self.d_head).transpose(1, 2)   # (batch, g, n, d_head)
        # 先转后存：缓存里的 K 已经按各自的位置转过，以后每一步直接读，不再转
        q, k = self._rotate(q, positions), self._rotate(k, positions)
        if cache is not None:
            k, v = cache.update(k, v)                                                  # (batch, g, t + n, d_head)
        k = k.repeat_interleave(self.group, dim=1)                                     # (batch, h, t + n, d_head)
        v = v.repeat_interleave(self.group, dim=1)
        # (n, t + n)：第 i 个新位置看键 j ≤ t + i（右下对齐的因果掩码；t = 0 时就是 causal_mask(n)）
        mask = torch.ones(n, past + n, dtype=torch.bool, device=x.device).tril(past)
        out, weights = scaled_dot_product_attention(q, k, v, mask, self.check_inputs)  # (batch, h, n, d_head)
        out = out.transpose(1, 2).reshape(batch, n, self.d_model)                      # Concat：(batch, n, d_model)
        return self.w_o(out), weights
# --8<-- [end:rotary-gqa]


# --8<-- [start:block]
class LlamaBlock(nn.Module):
    """一层 LLaMA：pre-norm 的两个子层，归一化用 RMSNorm，前馈网络用 SwiGLU，都不带偏置。

    x = x + Attention(RMSNorm(x))；x = x + SwiGLU(RMSNorm(x))。
    """

    def __init__(self, d_model, n_heads, n_kv_heads, d_ff, eps=1e-6, base=10000.0, rope="half"):
        super().__init__()
        self.attn_norm = RMSNorm(d_model, eps)
        self.attn = RotaryGroupedQueryAttention(d_model, n_heads, n_kv_heads, base, rope)
        self.ffn_norm = RMSNorm(d_model, eps)
        self.ffn = SwiGLUFFN(d_model, d_ff)

    def forward(self, x, cache=None):
        # x: (batch, n, d_model)；cache：这一层的 KVCache（增量解码时）
        x = x + self.attn(self.attn_norm(x), cache)[0]
        return x + self.ffn(self.ffn_norm(x))                      # (batch, n, d_model)
# --8<-- [end:block]


# --8<-- [start:model]
class LlamaDecoder(nn.Module):
    """只解码器语言模型：词嵌入（不乘 √d，也不加位置编码：位置全在 RoPE 里）-> n_layers 个 LlamaBlock
    -> 末尾 RMSNorm -> 输出投影（无偏置）。tie_weights=True 时输出投影与词嵌入共用一个矩阵。

    forward(tokens (batch, n), caches=None) 返回 logits (batch, n, vocab_size)。
    caches：new_caches() 给出的每层一个 KVCache；传入时 tokens 只含还没处理过的新位置。
    """

    def __init__(self, vocab_size, d_model, n_layers, n_heads, n_kv_heads, d_ff,
                 eps=1e-6, base=10000.0, rope="half", tie_weights=False):
        super().__init__()
        self.vocab_size = vocab_size
        self.embed = TokenEmbedding(vocab_size, d_model, scale_embedding=False)
        self.layers = nn.ModuleList(
            LlamaBlock(d_model, n_heads, n_kv_heads, d_ff, eps, base, rope) for _ in range(n_layers))
        self.norm = RMSNorm(d_model, eps)                                # 最后一层之后的归一化
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)        # (d -> |V|)
        if tie_weights:
            self.lm_head.weight = self.embed.weight

    def new_caches(self):
        return [KVCache() for _ in self.layers]                          # 每层一个，存 n_kv_heads 个头

    def forward(self, tokens, caches=None):
        x = self.embed(tokens)                                           # (batch, n, d_model)
        if caches is None:
            caches = [None] * len(self.layers)
        elif len(caches) != len(self.layers):
            raise ValueError(f"caches must hold one KVCache per layer ({len(self.layers)}), got {len(caches)} "
                             f"(tokens shape {tuple(tokens.shape)})")
        for layer, cache in zip(self.layers, caches):
            x = layer(x, cache)
        return self.lm_head(self.norm(x))                                # (batch, n, vocab_size)
# --8<-- [end:model]


# --8<-- [start:generate]
def greedy_generate(model, prompt, max_new_tokens, eos_id=None):
    """贪心解码，带 KV 缓存：提示整段一次算完（预填充），之后每步只把上一步的新词送进模型。

    prompt (batch, n)；返回 (batch, n + 生成的词数)。eos_id：一行生成了它就算结束，之后这一行只补 eos_id；
    所有行都结束时提前停下。None 时恰好生成 max_new_tokens 个词。
    """
    check_token_ids(prompt, model.vocab_size, name="prompt")
    if not isinstance(max_new_tokens, int) or isinstance(max_new_tokens, bool) or max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be a positive int, got {max_new_tokens!r} "
                         f"(prompt shape {tuple(prompt.shape)})")
    if eos_id is not None and not 0 <= eos_id < model.vocab_size:
        raise ValueError(f"eos_id must lie in [0, vocab_size={model.vocab_size}), got eos_id={eos_id!r}")
    caches = model.new_caches()
    logits = model(prompt, caches)                                     # 预填充：(batch, n, vocab)
    tokens = prompt
    done = torch.zeros(prompt.shape[0], dtype=torch.bool, device=prompt.device)
    for step in range(max_new_tokens):
        if step > 0:
            logits = model(tokens[:, -1:], caches)                     # 只送新词：(batch, 1, vocab)
        next_token = logits[:, -1].argmax(dim=-1)                      # (batch,)
        if eos_id is not None:
            next_token = next_token.masked_fill(done, eos_id)          # 已结束的行只补 eos
            done = done | (next_token == eos_id)
        tokens = torch.cat([tokens, next_token[:, None]], dim=1)       # (batch, n + step + 1)
        if eos_id is not None and bool(done.all()):
            break
    return tokens
# --8<-- [end:generate]
