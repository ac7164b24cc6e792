"""解码：用训练好的 Transformer 逐词生成目标序列（第 02 章）。

decode_step 是一步：给出最新的词和缓存，返回下一个词的 logits；greedy_decode 每步取 argmax。
束搜索（论文 §6.1）可以用同一个 decode_step：对 logits 取 log_softmax 累加得分，
再按选中的束重排 DecoderCache 里自注意力的 K、V。

页面先引入 snippets/attention.py 与 snippets/transformer.py 的小节（含两个 kv-cache），再引入
本文件的小节；所以这里直接使用 DecoderCache、check_token_ids 这些名字。下面这行导入在所有
小节之外，只在 `import snippets.decoding` 时生效（页面上不显示）。
测试：tests/ch02/test_ch02_claims.py、tests/ch02/test_ch02_transformer.py。
"""

from snippets.transformer import DecoderCache, check_token_ids  # noqa: F401  (小节里按名字使用)

# --8<-- [start:imports]
import torch
# --8<-- [end:imports]


# --8<-- [start:decode-step]
def decode_step(model, token, cache):
    """解码器的一步：最新的一个目标词 token (batch, 1) → 下一个词的 logits (batch, vocab)。

    cache 是这次解码的 DecoderCache：新位置的 K、V 追加进去，旧位置的直接读出。
    """
    check_token_ids(token, model.vocab_size, name="token")
    if token.shape[1] != 1:
        raise ValueError(f"token must have shape (batch, 1), got shape {tuple(token.shape)}")
    y = model.decode(token, cache.memory, cache.src_mask, cache=cache)  # (batch, 1, d_model)
    return model.output_projection(y)[:, -1]                             # (batch, vocab)
# --8<-- [end:decode-step]


# --8<-- [start:greedy-decode]
@torch.no_grad()
def greedy_decode(model, src, max_new_tokens, bos_id, src_mask=None, eos_id=None, return_logits=False):
    """贪心解码：编码器跑 1 次，解码器每生成一个词跑 1 步（每步只处理 1 个新位置）。

    src (batch, n)；返回生成的词 (batch, m)（不含 BOS）；return_logits=True 时再返回每步的 logits (batch, m, vocab)。
    """
    if not 0 < max_new_tokens <= model.max_len:
        raise ValueError(f"max_new_tokens={max_new_tokens} must be in [1, max_len={model.max_len}]")
    cache = DecoderCache(model, model.encode(src, src_mask), src_mask)  # 编码器只跑这一次
    token = torch.full((src.shape[0], 1), bos_id, dtype=torch.long, device=src.device)
    finished = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
    tokens, logits_per_step = [], []
    for _ in range(max_new_tokens):
        logits = decode_step(model, token, cache)         # (batch, vocab)
        token = logits.argmax(dim=-1, keepdim=True)       # (batch, 1)：取概率最大的词
        tokens.append(token)
        logits_per_step.append(logits)
        if eos_id is not None:
            finished |= token.squeeze(1) == eos_id
            if bool(finished.all()):
                break
    tokens = torch.cat(tokens, dim=1)                     # (batch, m)
    if return_logits:
        return tokens, torch.stack(logits_per_step, dim=1)   # (batch, m, vocab)
    return tokens
# --8<-- [end:greedy-decode]
