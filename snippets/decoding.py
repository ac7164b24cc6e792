"""解码与评测：用训练好的 Transformer 逐词生成目标序列（第 02 章），以及第 09 章的束搜索、BLEU、
检查点平均与投机采样。

decode_step 是一步：给出最新的词和缓存，返回下一个词的 logits；greedy_decode 每步取 argmax。
束搜索（论文 §6.1）beam_search 只要一个 step_log_probs(prefixes) 函数；BeamStepper 用同一个 decode_step
把读者的模型包成这个函数，并按选中的束重排 DecoderCache 里的 K、V。corpus_bleu 从零写出语料级 BLEU
（与 sacreBLEU 的默认设置相同）；average_checkpoints 平均若干个 state_dict；speculative_step 是投机采样的一轮验证。

页面先引入 snippets/attention.py 与 snippets/transformer.py 的小节（含两个 kv-cache），再引入
本文件的小节；所以这里直接使用 DecoderCache、check_token_ids 这些名字。下面这行导入在所有
小节之外，只在 `import snippets.decoding` 时生效（页面上不显示）。
第 09 章的小节在输入检查处按名字调用 snippets/checks.py 的 _check_tensor（页面在算法之后引入它）。
测试：tests/ch02/test_ch02_claims.py、tests/ch02/test_ch02_transformer.py、tests/ch09/。
"""

from snippets.checks import _check_tensor  # noqa: F401  (小节里按名字使用)
from snippets.transformer import DecoderCache, check_token_ids  # noqa: F401  (小节里按名字使用)

# --8<-- [start:imports]
import math
import re
from collections import Counter

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
    eos_id：一行生成了它就算结束，之后这一行只补 eos_id（与 llama.greedy_generate 相同；Hugging Face 补的是
    pad_token_id）；所有行都结束时提前停下，m ≤ max_new_tokens。None 时恰好生成 max_new_tokens 个词。
    """
    if not 0 < max_new_tokens <= model.max_len:
        raise ValueError(f"max_new_tokens={max_new_tokens} must be in [1, max_len={model.max_len}]")
    if eos_id is not None and not 0 <= eos_id < model.vocab_size:
        raise ValueError(f"eos_id must lie in [0, vocab_size={model.vocab_size}), got eos_id={eos_id!r}")
    cache = DecoderCache(model, model.encode(src, src_mask), src_mask)  # 编码器只跑这一次
    token = torch.full((src.shape[0], 1), bos_id, dtype=torch.long, device=src.device)
    finished = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
    tokens, logits_per_step = [], []
    for _ in range(max_new_tokens):
        logits = decode_step(model, token, cache)         # (batch, vocab)
        token = logits.argmax(dim=-1, keepdim=True)       # (batch, 1)：取概率最大的词
        if eos_id is not None:
            token = token.masked_fill(finished[:, None], eos_id)  # 已结束的行只补 eos
            finished |= token.squeeze(1) == eos_id
        tokens.append(token)
        logits_per_step.append(logits)
        if eos_id is not None and bool(finished.all()):
            break
    tokens = torch.cat(tokens, dim=1)                     # (batch, m)
    if return_logits:
        return tokens, torch.stack(logits_per_step, dim=1)   # (batch, m, vocab)
    return tokens
# --8<-- [end:greedy-decode]


# --8<-- [start:beam-search]
def length_penalty(length, alpha=0.6):
    """GNMT 的长度惩罚 lp(Y) = ((5 + |Y|) / 6)^α；|Y| = 1 时为 1。"""
    return ((5 + length) / 6) ** alpha


@torch.no_grad()
def greedy_search(step_log_probs, bos, eos, max_len=50):
    """贪心：每步只留概率最大的一个词。接口与 beam_search 相同，用来和它对比。"""
    if max_len < 1:
        raise ValueError(f"max_len must be >= 1, got max_len={max_len}")
    prefix = torch.tensor([[bos]])                           # (1, t)
    for _ in range(max_len):
        token = int(step_log_probs(prefix)[0].argmax())
        prefix = torch.cat([prefix, torch.tensor([[token]])], dim=1)
        if token == eos:
            break
    return prefix[0, 1:].tolist()


@torch.no_grad()
def beam_search(step_log_probs, bos, eos, beam_size=4, max_len=50, alpha=0.6):
    """束搜索（论文 §6.1：束宽 4，α = 0.6）。返回得分最高的完成假设的词 id（不含 bos）。

    step_log_probs(prefixes)：prefixes (B, t) 的 LongTensor（每行以 bos 开头）→ 下一个词的 log 概率 (B, V)。
    每步在全部扩展里取累计 log 概率最高的 k 个：以 eos 结尾的记为完成（占掉一个名额），其余留在束里，
    所以 beam_size=1 就是贪心。完成假设的得分 = Σ log p / lp(|Y|)，|Y| 数生成的词（含 eos）；
    到 max_len 还没有 eos 的假设原样完成。
    """
    if beam_size < 1:
        raise ValueError(f"beam_size must be >= 1, got beam_size={beam_size}")
    if max_len < 1:
        raise ValueError(f"max_len must be >= 1, got max_len={max_len}")
    alive = torch.full((1, 1), bos, dtype=torch.long)        # (B, t)：活着的前缀
    alive_scores = torch.zeros(1, dtype=torch.float64)       # (B,)：各前缀的 Σ log p
    finished = []                                            # [(归一化得分, 词列表)]
    for t in range(1, max_len + 1):                          # t = 这一步之后的 |Y|
        log_probs = step_log_probs(alive)                    # (B, V)
        _check_tensor("step_log_probs(prefixes)", log_probs, "(B, V)", (alive.shape[0], None))
        vocab = log_probs.shape[1]
        total = (alive_scores[:, None] + log_probs.double()).reshape(-1)    # (B·V,)
        # 取前 k 个扩展；以 eos 结尾的完成，也占一个名额（下一步再从活前缀的扩展里取满 k 个）
        top_scores, top_index = total.topk(min(beam_size, total.numel()))
        keep, keep_scores = [], []
        for score, index in zip(top_scores.tolist(), top_index.tolist()):
            if score == -math.inf:
                break                                        # 概率为 0 的扩展不算假设
            row, token = divmod(index, vocab)
            if token == eos or t == max_len:                 # 完成：以 eos 结尾，或到了最大长度
                finished.append((score / length_penalty(t, alpha), alive[row, 1:].tolist() + [token]))
            else:
                keep.append(alive[row].tolist() + [token])
                keep_scores.append(score)
        if not keep:
            break
        alive = torch.tensor(keep)                           # (B', t + 1)
        alive_scores = torch.tensor(keep_scores, dtype=torch.float64)
        # 提前结束：续写只会让 Σ log p 变小（≤ 当前值 ≤ 0），lp 最多涨到 lp(max_len)，
        # 所以任何续写的得分 ≤ 最好的活前缀得分 / lp 的最大值；已完成的最好得分不低于它，就不会再被超过
        if finished:
            best_possible = alive_scores.max().item() / max(length_penalty(t + 1, alpha),
                                                            length_penalty(max_len, alpha))
            if max(f[0] for f in finished) >= best_possible:
                break
    return max(finished, key=lambda f: f[0])[1]
# --8<-- [end:beam-search]


# --8<-- [start:beam-stepper]
class BeamStepper:
    """把读者的 Transformer 包成 beam_search 要的 step_log_probs（一个源句 src (1, n)，不带 padding）。

    编码器只跑一次；每次调用只把每个前缀的最后一个词送进解码器（KV 缓存），
    调用之间按「新前缀去掉最后一个词 = 哪个旧前缀」找到父亲，把缓存的行重排成新束的顺序。
    """

    def __init__(self, model, src):
        if src.dim() != 2 or src.shape[0] != 1:
            raise ValueError(f"src must have shape (1, n), got shape {tuple(src.shape)}")
        self.model = model
        self.memory = model.encode(src)                      # (1, n, d)
        self.cache, self.prev = None, None

    @torch.no_grad()
    def __call__(self, prefixes):                            # prefixes (B, t)
        prefixes = prefixes.to(self.memory.device)           # beam_search 在 CPU 上拼前缀；搬到模型所在的设备
        batch, t = prefixes.shape
        if t == 1:                                           # 第一步：只有 bos，新建缓存
            self.cache = DecoderCache(self.model, self.memory.expand(batch, -1, -1))
        else:
            if self.prev is None or self.prev.shape[1] != t - 1:
                raise ValueError(f"prefixes {tuple(prefixes.shape)} must extend the previous call's prefixes "
                                 f"by one token, got previous {None if self.prev is None else tuple(self.prev.shape)}")
            same = (prefixes[:, None, :-1] == self.prev[None]).all(-1)     # (B, B_prev)
            if not bool(same.any(1).all()):
                raise ValueError(f"a prefix in {tuple(prefixes.shape)} extends no previous prefix")
            parent = same.double().argmax(1)                 # (B,)：每个新前缀的父亲
            self.cache.memory = self.cache.memory[parent]
            for self_kv, cross_kv in self.cache.layers:      # 自注意力与交叉注意力的 K、V 都按父亲重排
                for kv in (self_kv, cross_kv):
                    kv.k, kv.v = kv.k[parent], kv.v[parent]  # (B, h, ·, d_k)
        self.prev = prefixes
        logits = decode_step(self.model, prefixes[:, -1:], self.cache)     # (B, V)
        return logits.log_softmax(-1)
# --8<-- [end:beam-stepper]


# --8<-- [start:bleu]
def tokenize_13a(line):
    """sacreBLEU 的默认分词 13a（mteval-v13a）：标点与符号前后加空格，数字里的 . , 不拆。"""
    line = line.rstrip().replace("<skipped>", "").replace("-\n", "").replace("\n", " ")
    for entity, char in (("&quot;", '"'), ("&amp;", "&"), ("&lt;", "<"), ("&gt;", ">")):
        line = line.replace(entity, char)
    line = re.sub(r"([\{-\~\[-\` -\&\(-\+\:-\@\/])", r" \1 ", f" {line} ")
    line = re.sub(r"([^0-9])([\.,])", r"\1 \2 ", line)     # 前面不是数字的 . ,
    line = re.sub(r"([\.,])([^0-9])", r" \1 \2", line)     # 后面不是数字的 . ,
    line = re.sub(r"([0-9])(-)", r"\1 \2 ", line)           # 数字后的连字符
    return line.split()


def split_compounds(line):
    """tensor2tensor 的 EN-DE 评测脚本（get_ende_bleu.sh）的一步：把连字符复合词 a-b 拆成 a ##AT##-##AT## b。"""
    return re.sub(r"(\S)-(\S)", r"\1 ##AT##-##AT## \2", line)


def ngrams(tokens, n):
    """tokens 里所有 n 元组及其次数。"""
    if n < 1:
        raise ValueError(f"n must be >= 1, got n={n}")
    return Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))


def bleu_statistics(hypothesis, reference, max_order=4, tokenize=tokenize_13a):
    """一个句子的充分统计量：假设长度 c、参考长度 r、各阶裁剪后的匹配数与总 n 元组数。"""
    if max_order < 1:
        raise ValueError(f"max_order must be >= 1, got max_order={max_order}")
    hyp, ref = tokenize(hypothesis), tokenize(reference)
    matches, totals = [], []
    for n in range(1, max_order + 1):
        h, r = ngrams(hyp, n), ngrams(ref, n)
        matches.append(sum(min(count, r[g]) for g, count in h.items()))   # 裁剪：最多算参考里的次数
        totals.append(sum(h.values()))
    return len(hyp), len(ref), matches, totals


def corpus_bleu(hypotheses, references, max_order=4, tokenize=tokenize_13a, smooth="exp"):
    """语料级 BLEU（0–100）：先把所有句子的统计量加起来，再算精确率、几何平均与简短惩罚。

    默认与 sacrebleu.corpus_bleu(hypotheses, [references]) 相同：13a 分词、区分大小写、
    smooth="exp"：某阶匹配数为 0 时用 mteval 的 'exp' 平滑（第 k 个为 0 的阶记作 1 / (2^k · 总数)）。
    smooth="none" 不平滑：任何一阶匹配数为 0，BLEU 就是 0（Papineni 等 2002、multi-bleu.perl，
    即 sacreBLEU 的 smooth_method='none'）。tokenize=str.split 是「已分词的 BLEU」：按空格切，不再分词；
    multi-bleu.perl 的算法是 tokenize=str.split、smooth="none"（Moses 的 scripts/generic/multi-bleu.perl：my_log(0) = −9999999999）。
    """
    if len(hypotheses) != len(references):
        raise ValueError(f"hypotheses and references must have the same length, "
                         f"got {len(hypotheses)} and {len(references)}")
    if max_order < 1:  # 否则一阶也不算，BLEU 悄悄得 0
        raise ValueError(f"max_order must be >= 1, got max_order={max_order}")
    if smooth not in ("exp", "none"):
        raise ValueError(f"smooth must be 'exp' or 'none' (sacreBLEU's 'floor' and 'add-k' are not "
                         f"implemented here), got smooth={smooth!r}")
    c = r = 0
    matches, totals = [0] * max_order, [0] * max_order
    for hyp, ref in zip(hypotheses, references):
        hyp_len, ref_len, m, t = bleu_statistics(hyp, ref, max_order, tokenize)
        c, r = c + hyp_len, r + ref_len
        matches = [a + b for a, b in zip(matches, m)]
        totals = [a + b for a, b in zip(totals, t)]
    if c == 0 or not any(matches):
        return 0.0
    brevity_penalty = min(1.0, math.exp(1 - r / c))          # BP = min(1, e^{1 − r/c})
    log_precisions, zeros = [], 0
    for m, t in zip(matches, totals):
        if t == 0:                                           # 假设短到没有这一阶的 n 元组：BLEU 为 0
            return 0.0
        if m == 0:
            if smooth == "none":                             # 不平滑：几何平均里有一个 0
                return 0.0
            zeros += 1
            m = 1 / 2 ** zeros                               # 'exp' 平滑
        log_precisions.append(math.log(m / t))
    return 100 * brevity_penalty * math.exp(sum(log_precisions) / max_order)
# --8<-- [end:bleu]


# --8<-- [start:checkpoint-average]
def average_checkpoints(state_dicts):
    """检查点平均（论文 §6.1：base 取最后 5 个，big 取最后 20 个）：浮点张量逐元素取平均。

    state_dicts 可以是列表，也可以是逐个读入的迭代器，如 (torch.load(p) for p in paths)：这里只留一份
    float64 的累加和（8 字节 × 参数个数），不随检查点个数 m 增长。平均在 float64 里做，再转回第一个检查点的 dtype。
    整数张量（步数计数、BatchNorm 的 num_batches_tracked）不取平均，取最后一个检查点的值。
    """
    sums, kinds, ints, count = {}, {}, {}, 0
    for i, sd in enumerate(state_dicts):
        if i == 0:
            kinds = {key: (t.shape, t.dtype) for key, t in sd.items()}
        elif set(sd) != set(kinds):
            raise ValueError(f"checkpoint {i} has different keys: missing {sorted(set(kinds) - set(sd))}, "
                             f"extra {sorted(set(sd) - set(kinds))}")
        for key, t in sd.items():
            shape, dtype = kinds[key]
            if t.shape != shape:
                raise ValueError(f"{key}: checkpoint {i} has shape {tuple(t.shape)}, "
                                 f"checkpoint 0 has shape {tuple(shape)}")
            if t.is_floating_point() != dtype.is_floating_point:
                raise ValueError(f"{key}: checkpoint {i} has dtype {t.dtype}, checkpoint 0 has dtype {dtype}")
            if not t.is_floating_point():
                ints[key] = t                                # 整数张量：留最后一个
            elif i == 0:
                sums[key] = t.detach().to(torch.float64, copy=True)    # 复制一份，不改调用者的张量
            else:
                sums[key] += t.detach()                      # 累加在 float64 里
        count += 1
    if count == 0:
        raise ValueError("state_dicts must hold at least one checkpoint, got 0")
    return {key: (sums[key] / count).to(dtype) if dtype.is_floating_point else ints[key].clone()
            for key, (shape, dtype) in kinds.items()}
# --8<-- [end:checkpoint-average]


# --8<-- [start:speculative]
def speculative_step(target_probs, draft_probs, draft_tokens, uniforms):
    """投机采样的一轮验证（Leviathan 等 2023 的记号：目标分布 p，草稿分布 q）。

    target_probs (γ+1, V)：目标模型一次前向并行给出的 p(· | 前缀, x_1…x_i)，i = 0…γ；
    draft_probs (γ, V)：草稿模型生成 x_{i+1} 时的 q；draft_tokens (γ,)：x_{i+1} ~ q；
    uniforms (γ,)：U(0, 1) 随机数，第 i 个决定是否接受 x_{i+1}。
    返回 (accepted, next_probs)：被接受的 x_1…x_k（列表），以及第 k+1 个词要从中采样的分布 (V,)。
    """
    gamma = draft_tokens.shape[0]
    _check_tensor("target_probs", target_probs, "(gamma + 1, V)", (gamma + 1, None))
    _check_tensor("draft_probs", draft_probs, "(gamma, V)", (gamma, target_probs.shape[1]))
    _check_tensor("uniforms", uniforms, "(gamma,)", (gamma,))
    if ((uniforms < 0) | (uniforms >= 1)).any():             # u = 1 时拒绝后可能得到 0/0
        raise ValueError(f"uniforms must lie in [0, 1), got min {float(uniforms.min())}, max {float(uniforms.max())}")
    accepted = []
    for i in range(gamma):
        x = int(draft_tokens[i])
        p, q = target_probs[i, x], draft_probs[i, x]
        if uniforms[i] * q < p:                              # u < p(x)/q(x)：以概率 min(1, p/q) 接受
            accepted.append(x)
            continue
        residual = (target_probs[i] - draft_probs[i]).clamp(min=0)     # max(0, p − q)
        return accepted, residual / residual.sum()           # 拒绝：从剩余分布 p' 重新采样
    return accepted, target_probs[gamma]                     # 全部接受：再从 p 白送一个词


def expected_tokens_per_round(accept, gamma):
    """每个草稿词以概率 a = accept 被接受（相互独立）时，一轮（目标模型一次前向）产出的期望词数。"""
    if accept == 1:
        return gamma + 1
    return (1 - accept ** (gamma + 1)) / (1 - accept)       # 1 + a + … + a^γ
# --8<-- [end:speculative]


# --8<-- [start:training-cost]
GPU_TFLOPS = {"K80": 2.8, "K40": 3.7, "M40": 6.0, "P100": 9.5}   # 论文脚注 5：持续单精度 TFLOPS 的估计


def training_flops(hours, gpus, gpu_type):
    """表 2 的训练成本：训练时间 × GPU 数 × 每块 GPU 的持续单精度浮点能力（§6.1）。"""
    return hours * 3600 * gpus * GPU_TFLOPS[gpu_type] * 1e12
# --8<-- [end:training-cost]
