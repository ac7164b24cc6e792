"""第 09 章的练习：带长度惩罚的束搜索、BLEU 的句子统计量、语料级 BLEU。参考答案：snippets/decoding.py。"""

from __future__ import annotations

import torch

from snippets import decoding
from snippets.exercises.core import Case, Exercise, Failure, Property, Text, compare, raises, register

DERIV = "09-decoding-and-bleu/derivation.md"
BLEU = "09-decoding-and-bleu/derivation-bleu.md"
CODE = ("09-decoding-and-bleu/code.md", "code")


# --------------------------------------------------------------------------- beam_search
class MarkovModel:
    """玩具模型：下一个词的 log 概率只由上一个词决定（log_probs 的第 last 行）。"""

    def __init__(self, log_probs):
        self.log_probs = log_probs  # (V, V)

    def __call__(self, prefixes):
        return self.log_probs[prefixes[:, -1]]  # (B, V)

    def __deepcopy__(self, memo):
        return MarkovModel(self.log_probs.clone())


def _ref_beam(step_log_probs, bos, eos, beam_size=4, max_len=50, alpha=0.6):
    return decoding.beam_search(step_log_probs, bos, eos, beam_size, max_len, alpha)


def _make_beam(rng, vocab, beam_size, max_len, alpha, sharp):
    logits = torch.randn(vocab, vocab, generator=rng, dtype=torch.float64) * sharp
    logits[:, 0] -= 1.0  # eos = 0：不太早结束
    model = MarkovModel(torch.log_softmax(logits, dim=-1))
    shown = {"step_log_probs": Text(f"马尔可夫玩具模型：下一个词的 log 概率 = 下表的第「上一个词」行（{vocab} 个词，eos = 0，bos = {vocab - 1}）"),
             "log_probs 表": model.log_probs, "bos, eos": (vocab - 1, 0), "beam_size": beam_size, "max_len": max_len,
             "alpha": alpha}
    return Case((model, vocab - 1, 0), {"beam_size": beam_size, "max_len": max_len, "alpha": alpha}, show=shown)


def _make_penalty(rng, ratio, short, beam_size, max_len):
    """两个候选：[eos]（Σ log p = s1）与 [1, eos]（Σ log p = s2 = ratio·s1）；谁赢取决于长度惩罚怎么算。"""
    import math

    vocab, s1 = 5, math.log(short)
    s2 = ratio * s1
    probs = torch.rand(vocab, vocab, generator=rng, dtype=torch.float64) * 0.1 + 0.05
    a = 0.5
    probs[vocab - 1] = torch.tensor([short, a, 0.0, 0.0, 0.0], dtype=torch.float64)  # bos 之后
    probs[vocab - 1, 2:4] = (1 - short - a) / 2
    q = math.exp(s2) / a  # 1 之后接 eos 的概率
    probs[1] = torch.tensor([q, 0.0, 0.0, 0.0, 0.0], dtype=torch.float64)
    probs[1, 1:4] = (1 - q) / 3
    probs[2:4, 0] = 0.02  # 其余的词很少结束：长假设得分低
    probs[2:4] /= probs[2:4].sum(-1, keepdim=True)
    model = MarkovModel(probs.clamp_min(1e-12).log())
    shown = {"step_log_probs": Text(f"马尔可夫玩具模型（{vocab} 个词，eos = 0，bos = 4）：候选 [0] 的 Σ log p = {s1:.4f}，"
                                    f"候选 [1, 0] 的 Σ log p = {s2:.4f}"),
             "log_probs 表": model.log_probs, "bos, eos": (4, 0), "beam_size": beam_size, "max_len": max_len, "alpha": 0.6}
    return Case((model, 4, 0), {"beam_size": beam_size, "max_len": max_len, "alpha": 0.6}, show=shown)


def _same_tokens(fn, case, reference):
    expected = reference(*case.args, **case.kwargs)
    got = fn(*case.args, **case.kwargs)
    if isinstance(got, torch.Tensor):
        got = got.tolist()
    if list(got) != expected:
        model = case.args[0]

        def score(tokens):
            prefix, total = [case.args[1]], 0.0
            for token in tokens:
                total += model.log_probs[prefix[-1], token].item()
                prefix.append(token)
            return total

        alpha = case.kwargs["alpha"]
        raise Failure(f"输出的词不对：期望 {expected}（Σ log p = {score(expected):.4f}，"
                      f"除以 lp 后 {score(expected) / decoding.length_penalty(len(expected), alpha):.4f}），\n"
                      f"得到 {list(got)}（Σ log p = {score(list(got)):.4f}，"
                      f"除以 lp 后 {score(list(got)) / decoding.length_penalty(len(list(got)), alpha):.4f}）")


BEAM_DIMS = {"vocab": [3, 4, 5, 6], "max_len": [1, 2, 3, 5, 7], "alpha": [0.6, 0.0, 1.0], "sharp": [1.0, 2.0, 0.5]}

register(Exercise(
    id="ch09.beam_search", name="beam_search", questions=("9.1", "9.2"), title="带长度惩罚的束搜索",
    signature="beam_search(step_log_probs, bos, eos, beam_size=4, max_len=50, alpha=0.6)",
    statement="束搜索（论文 §6.1：束宽 4，α = 0.6）。step_log_probs(prefixes) 把 (B, t) 的前缀（每行以 bos 开头）映射到下一个词的"
              " log 概率 (B, V)。每一步在全部扩展里取累计 log 概率最高的 beam_size 个：以 eos 结尾的记为完成（也占一个名额），"
              "其余留在束里；走到 max_len 还没有 eos 的假设原样完成。完成假设的得分是 Σ log p / lp(|Y|)，"
              "lp(|Y|) = ((5 + |Y|)/6)^α，|Y| 数生成的词（含 eos，不含 bos）。返回得分最高的完成假设（不含 bos 的词 id 列表）。"
              "提前结束不能改变结果。",
    shapes="step_log_probs：(B, t) LongTensor → (B, V)；bos、eos 是词 id；beam_size、max_len 正整数 → list[int]。",
    bad_input="beam_size < 1：ValueError，报错信息写出 beam_size。",
    reference=_ref_beam, solution=CODE,
    stub='''def beam_search(step_log_probs, bos, eos, beam_size=4, max_len=50, alpha=0.6):
    """每步取累计 log 概率最高的 beam_size 个扩展；以 eos 结尾的完成（占名额），到 max_len 的也完成。
    得分 Σ log p / ((5 + |Y|)/6)^α，|Y| 含 eos。返回得分最高的完成假设（词 id 列表，不含 bos）。
    beam_size < 1：ValueError（写出 beam_size）。"""
    raise NotImplementedError("在这里写你的实现")
''',
    properties=[
        Property("greedy", "beam_size = 1：就是贪心解码",
                 "束里只留一个前缀时，每步取概率最大的那个词；以 eos 结尾就完成。", DERIV, "beam-search",
                 lambda rng, **d: _make_beam(rng, beam_size=1, **d), _same_tokens, dims=BEAM_DIMS),
        Property("length-penalty", "短假设与长假设相争：按 Σ log p / lp(|Y|) 比较，|Y| 含 eos，α = 0.6",
                 "完成假设的得分要除以 lp(|Y|) = ((5 + |Y|)/6)^α，|Y| 数生成的词、包括 eos；"
                 "第一个假设完成时不能就此停下：更长的假设除以更大的 lp 之后可能胜出。", DERIV, "length-penalty",
                 _make_penalty, _same_tokens,
                 dims={"ratio": [1.03, 1.06, 1.09, 1.105, 1.11, 1.13, 1.2], "short": [0.3, 0.25],
                       "beam_size": [2, 3], "max_len": [3, 4, 6]}, tries=24),
        Property("matches", "beam_size = 2…4：与参考的束搜索选出同一个假设（随机玩具模型、不同的 α 与 max_len）",
                 "完成的假设也占一个名额；得分要除以 lp(|Y|)，|Y| 含 eos；走到 max_len 的假设也要算作完成；"
                 "不要在第一个假设完成时就停下，只有确定不会被超过时才能提前结束。", DERIV, "length-penalty",
                 _make_beam, _same_tokens,
                 dims={**BEAM_DIMS, "beam_size": [2, 3, 4]}, tries=16),
        Property("bad-beam_size", "beam_size = 0：ValueError，并写出参数名 beam_size",
                 "检查 beam_size ≥ 1。", DERIV, "beam-search",
                 lambda rng: _make_beam(rng, 3, 0, 3, 0.6, 1.0), raises("beam_size")),
    ],
))


# --------------------------------------------------------------------------- bleu_statistics, corpus_bleu
def _ref_stats(hypothesis, reference, max_order=4):
    for name, value in (("hypothesis", hypothesis), ("reference", reference)):
        if not isinstance(value, list) or not all(isinstance(w, str) for w in value):
            raise TypeError(f"{name} must be a list of tokens (str), got {type(value).__name__}")
    c, r, matches, totals = decoding.bleu_statistics(" ".join(hypothesis), " ".join(reference), max_order, str.split)
    return c, r, matches, totals


WORDS = "the cat sat on mat a dog".split()


def _sentence(rng, length, vocab):
    return [WORDS[int(i)] for i in torch.randint(vocab, (length,), generator=rng)]


def _edit(rng, ref, edits, vocab):
    hyp = list(ref)
    for _ in range(edits):
        kind, where = int(torch.randint(3, (1,), generator=rng)), int(torch.randint(len(hyp) + 1, (1,), generator=rng))
        word = WORDS[int(torch.randint(vocab, (1,), generator=rng))]
        if kind == 0 and hyp:
            hyp[min(where, len(hyp) - 1)] = word
        elif kind == 1 and len(hyp) > 1:
            del hyp[min(where, len(hyp) - 1)]
        else:
            hyp.insert(where, word)
    return hyp


def _make_stats(rng, ref_len, edits, vocab):
    ref = _sentence(rng, ref_len, vocab)
    return Case((_edit(rng, ref, edits, vocab), ref))


def _same_stats(fn, case, reference):
    compare(tuple(fn(*case.args, **case.kwargs)), tuple(reference(*case.args, **case.kwargs)), what="(c, r, matches, totals)")


register(Exercise(
    id="ch09.bleu_statistics", name="bleu_statistics", questions=("9.3",), title="BLEU 的句子统计量",
    signature="bleu_statistics(hypothesis, reference, max_order=4)",
    statement="一个句子对的充分统计量（已分好词）：假设长度 c、参考长度 r，以及 n = 1 … max_order 各阶的"
              "裁剪匹配数 matches[n−1]（假设里每个 n 元组最多算它在参考里出现的次数）和假设的 n 元组总数 totals[n−1]。",
    shapes="hypothesis、reference 是词（str）的列表 → (c, r, matches, totals)：两个 int 和两个长 max_order 的 int 列表。",
    bad_input="hypothesis 或 reference 不是词的列表（例如一整个字符串）：TypeError，报错信息写出出错的参数名。",
    reference=_ref_stats, solution=CODE,
    stub='''def bleu_statistics(hypothesis, reference, max_order=4):
    """(c, r, matches, totals)：matches[n−1] 是裁剪后的 n 元组匹配数，totals[n−1] 是假设的 n 元组数。
    hypothesis、reference 是词的列表；不是列表（例如字符串）：TypeError（写出参数名）。"""
    raise NotImplementedError("在这里写你的实现")
''',
    properties=[
        Property("matches", "各阶的裁剪匹配数与 n 元组总数都对（重复的词、长短不一的句子）",
                 "长度为 L 的句子有 L − n + 1 个 n 元组（L < n 时为 0）；假设里重复的 n 元组最多算参考里的次数（裁剪）；"
                 "totals 数的是假设的 n 元组，不是参考的。", BLEU, "bleu", _make_stats, _same_stats,
                 dims={"ref_len": [1, 2, 3, 5, 8], "edits": [0, 1, 2, 4], "vocab": [2, 3, 7]}, tries=16),
        Property("bad-hypothesis", "hypothesis 是一整个字符串：TypeError，并写出参数名 hypothesis",
                 "字符串也能迭代（一个字符一个词）：先检查它是不是 list。", BLEU, "bleu",
                 lambda rng: Case(("the cat sat", ["the", "cat", "sat"]), note="hypothesis 是字符串"), raises("hypothesis")),
    ],
))


def _ref_bleu(hypotheses, references):
    if len(hypotheses) != len(references):
        raise ValueError(f"hypotheses and references must have the same length, got {len(hypotheses)} and "
                         f"{len(references)}")
    return decoding.corpus_bleu([" ".join(h) for h in hypotheses], [" ".join(r) for r in references],
                                tokenize=str.split, smooth="none")


def _make_corpus(rng, sentences, ref_len, edits, longer):
    refs, hyps = [], []
    for i in range(sentences):
        ref = _sentence(rng, ref_len + i, 7)
        hyp = _edit(rng, ref, edits, 7)
        if longer and i == 0:
            hyp = hyp + hyp[:3]  # 第一句的假设比参考长
        elif not longer:
            hyp = hyp[:len(ref)]  # 不比参考长
        refs.append(ref)
        hyps.append(hyp)
    return Case((hyps, refs))


def _close_bleu(fn, case, reference):
    compare(fn(*case.args), float(reference(*case.args)), atol=1e-6, rtol=1e-6, what="BLEU")


register(Exercise(
    id="ch09.corpus_bleu", name="corpus_bleu", questions=("9.3", "9.4"), title="语料级 BLEU",
    signature="corpus_bleu(hypotheses, references)",
    statement="语料级 BLEU（0–100，4 阶，不平滑，已分好词）：先把所有句子的 c、r、各阶匹配数与总数加起来，再算"
              " p_n = 匹配数/总数、几何平均 exp(Σ log p_n / 4) 和简短惩罚 BP = min(1, exp(1 − r/c))；"
              "BLEU = 100·BP·几何平均。任何一阶的匹配数为 0（或 c = 0）时 BLEU 为 0。不是各句 BLEU 的平均。",
    shapes="hypotheses、references：等长的列表，每项是词（str）的列表 → float。",
    bad_input="hypotheses 与 references 的句子数不同：ValueError，报错信息写出 references。",
    reference=_ref_bleu, solution=CODE,
    stub='''def corpus_bleu(hypotheses, references):
    """语料级 BLEU（4 阶、不平滑）：统计量先在全部句子上相加，再算 100·BP·exp(Σ log p_n / 4)。
    hypotheses、references 是等长的词列表的列表 → float。句子数不同：ValueError（写出 references）。"""
    raise NotImplementedError("在这里写你的实现")
''',
    properties=[
        Property("corpus-level", "多个句子：统计量先相加再算，不是各句 BLEU 的平均",
                 "语料级 BLEU 把各句的匹配数、总数、c、r 分别相加后只算一次；平均各句 BLEU 得到的是另一个数。",
                 BLEU, "corpus-level", _make_corpus, _close_bleu,
                 dims={"sentences": [2, 3, 5], "ref_len": [5, 8, 12], "edits": [1, 2, 3], "longer": [False]}),
        Property("brevity", "假设比参考长时不罚，短时按 BP = exp(1 − r/c) 罚",
                 "BP 只罚短：c ≥ r 时 BP = 1；r、c 是整个语料的总长度。几何平均是 exp(Σ log p_n / 4)。",
                 BLEU, "bleu", _make_corpus, _close_bleu,
                 dims={"sentences": [1, 2, 3], "ref_len": [5, 8], "edits": [0, 1, 2], "longer": [True, False]}),
        Property("bad-references", "句子数不同：ValueError，并写出参数名 references",
                 "zip 会悄悄截断到较短的那个：先比较两个列表的长度。", BLEU, "corpus-level",
                 lambda rng: Case(([["a", "b"]], [["a", "b"], ["c"]]), note="1 个假设，2 个参考"), raises("references")),
    ],
))
