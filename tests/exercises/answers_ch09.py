"""第 09 章练习的答案（见 answers_ch01.py 的说明）。"""

import math
from collections import Counter

import torch


def _beam(step_log_probs, bos, eos, beam_size, max_len, alpha, penalty=True, eos_in_length=True, stop_first=False,
          eos_slot=True, check=True):
    if check and beam_size < 1:
        raise ValueError(f"beam_size must be >= 1, got beam_size={beam_size}")
    alive, scores, finished = [[bos]], [0.0], []
    for t in range(1, max_len + 1):
        lp = step_log_probs(torch.tensor(alive)).double()
        cands = sorted(((scores[b] + lp[b, w].item(), b, w) for b in range(len(alive)) for w in range(lp.shape[1])),
                       reverse=True)
        keep, kept = [], []
        for score, b, w in cands:
            if len(keep) + (len(finished) if not eos_slot else 0) >= beam_size and eos_slot:
                break
            if not eos_slot and len(keep) >= beam_size:
                break
            seq = alive[b][1:] + [w]
            if w == eos or t == max_len:
                length = len(seq) if eos_in_length or w != eos else len(seq) - 1
                norm = ((5 + length) / 6) ** alpha if penalty else 1.0
                finished.append((score / norm, seq))
                if eos_slot:
                    keep.append(None)
            else:
                keep.append(alive[b] + [w])
                kept.append(score)
        alive = [k for k in keep if k is not None]
        scores = kept
        if not alive or (stop_first and finished):
            break
    return max(finished, key=lambda f: f[0])[1]


def beam_no_penalty(step_log_probs, bos, eos, beam_size=4, max_len=50, alpha=0.6):
    return _beam(step_log_probs, bos, eos, beam_size, max_len, alpha, penalty=False)


def beam_length_without_eos(step_log_probs, bos, eos, beam_size=4, max_len=50, alpha=0.6):
    return _beam(step_log_probs, bos, eos, beam_size, max_len, alpha, eos_in_length=False)


def beam_stops_at_first(step_log_probs, bos, eos, beam_size=4, max_len=50, alpha=0.6):
    return _beam(step_log_probs, bos, eos, beam_size, max_len, alpha, stop_first=True)


def beam_eos_takes_no_slot(step_log_probs, bos, eos, beam_size=4, max_len=50, alpha=0.6):
    return _beam(step_log_probs, bos, eos, beam_size, max_len, alpha, eos_slot=False)


def beam_no_check(step_log_probs, bos, eos, beam_size=4, max_len=50, alpha=0.6):
    return _beam(step_log_probs, bos, eos, max(beam_size, 1), max_len, alpha, check=False)


def beam_exhaustive_pruned(step_log_probs, bos, eos, beam_size=4, max_len=50, alpha=0.6):
    """写法不同：整批张量运算（topk 在展平的 B·V 上），不提前结束，直到束空或到 max_len。"""
    if not isinstance(beam_size, int) or beam_size < 1:
        raise ValueError(f"beam_size={beam_size} must be a positive int")
    alive = torch.tensor([[bos]])
    scores = torch.zeros(1, dtype=torch.float64)
    best, best_seq = -math.inf, None
    for t in range(1, max_len + 1):
        total = (scores[:, None] + step_log_probs(alive).double()).flatten()
        vals, idx = total.topk(min(beam_size, total.numel()))
        vocab = total.numel() // alive.shape[0]
        rows, toks = idx // vocab, idx % vocab
        done = (toks == eos) | (t == max_len)
        for v, r, w in zip(vals[done].tolist(), rows[done].tolist(), toks[done].tolist()):
            s = v / ((5 + t) / 6) ** alpha
            if s > best:
                best, best_seq = s, alive[r, 1:].tolist() + [w]
        if done.all():
            break
        alive = torch.cat([alive[rows[~done]], toks[~done][:, None]], dim=1)
        scores = vals[~done]
    return best_seq


def _stats(hyp, ref, max_order=4, clip=True, ref_totals=False, off_by_one=False, check=True):
    if check:
        for name, v in (("hypothesis", hyp), ("reference", ref)):
            if not isinstance(v, list):
                raise TypeError(f"{name} must be a list of tokens")
    matches, totals = [], []
    for n in range(1, max_order + 1):
        stop = len(hyp) - n + (0 if off_by_one else 1)
        h = Counter(tuple(hyp[i:i + n]) for i in range(max(stop, 0)))
        r = Counter(tuple(ref[i:i + n]) for i in range(len(ref) - n + 1))
        matches.append(sum(min(c, r[g]) if clip else (c if g in r else 0) for g, c in h.items()))
        totals.append(sum(r.values()) if ref_totals else sum(h.values()))
    return len(hyp), len(ref), matches, totals


def stats_no_clip(hypothesis, reference, max_order=4):
    return _stats(hypothesis, reference, max_order, clip=False)


def stats_ref_totals(hypothesis, reference, max_order=4):
    return _stats(hypothesis, reference, max_order, ref_totals=True)


def stats_off_by_one(hypothesis, reference, max_order=4):
    return _stats(hypothesis, reference, max_order, off_by_one=True)


def stats_no_check(hypothesis, reference, max_order=4):
    return _stats(list(hypothesis), list(reference), max_order, check=False)


def stats_counter_and(hypothesis, reference, max_order=4):
    """写法不同：裁剪匹配就是两个 Counter 的交（&，逐项取 min）。"""
    if not isinstance(hypothesis, list) or not isinstance(reference, list):
        raise TypeError("hypothesis and reference must be lists of tokens")
    grams = [(Counter(zip(*[hypothesis[k:] for k in range(n)])), Counter(zip(*[reference[k:] for k in range(n)])))
             for n in range(1, max_order + 1)]
    return (len(hypothesis), len(reference), [sum((h & r).values()) for h, r in grams],
            [sum(h.values()) for h, _ in grams])


def _bleu_from(c, r, m, t):
    if c == 0 or any(x == 0 for x in m):
        return 0.0
    return 100 * min(1.0, math.exp(1 - r / c)) * math.exp(sum(math.log(a / b) for a, b in zip(m, t)) / 4)


def _check_lengths(hypotheses, references):
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} references")


def _corpus(hypotheses, references, per_sentence=False, two_sided=False, check=True):
    if check:
        _check_lengths(hypotheses, references)
    if per_sentence:
        return sum(_bleu_from(*stats_counter_and(h, r)) for h, r in zip(hypotheses, references)) / len(hypotheses)
    c = r = 0
    m, t = [0] * 4, [0] * 4
    for h, ref in zip(hypotheses, references):
        a, b, mm, tt = stats_counter_and(h, ref)
        c, r = c + a, r + b
        m, t = [x + y for x, y in zip(m, mm)], [x + y for x, y in zip(t, tt)]
    if two_sided and c and all(m):
        return 100 * math.exp(-abs(1 - r / c)) * math.exp(sum(math.log(a / b) for a, b in zip(m, t)) / 4)
    return _bleu_from(c, r, m, t)


def bleu_sentence_average(hypotheses, references):
    return _corpus(hypotheses, references, per_sentence=True)


def bleu_two_sided_penalty(hypotheses, references):
    return _corpus(hypotheses, references, two_sided=True)


def bleu_arithmetic_mean(hypotheses, references):
    _check_lengths(hypotheses, references)
    c = r = 0
    m, t = [0] * 4, [0] * 4
    for h, ref in zip(hypotheses, references):
        a, b, mm, tt = stats_counter_and(h, ref)
        c, r = c + a, r + b
        m, t = [x + y for x, y in zip(m, mm)], [x + y for x, y in zip(t, tt)]
    if c == 0 or not all(m):
        return 0.0
    return 100 * min(1.0, math.exp(1 - r / c)) * sum(a / b for a, b in zip(m, t)) / 4  # 算术平均


def bleu_no_check(hypotheses, references):
    return _corpus(hypotheses, references, check=False)


def bleu_via_sacrebleu_formula(hypotheses, references):
    """写法不同：几何平均写成 Π p_n^{1/4}，BP 写成分段。"""
    if len(hypotheses) != len(references):
        raise ValueError(f"references has {len(references)} sentences, hypotheses {len(hypotheses)}")
    stats = [stats_counter_and(h, r) for h, r in zip(hypotheses, references)]
    c, r = sum(s[0] for s in stats), sum(s[1] for s in stats)
    m = [sum(s[2][n] for s in stats) for n in range(4)]
    t = [sum(s[3][n] for s in stats) for n in range(4)]
    if c == 0 or 0 in m:
        return 0.0
    bp = 1.0 if c > r else math.exp(1 - r / c)
    geo = 1.0
    for a, b in zip(m, t):
        geo *= (a / b) ** 0.25
    return 100 * bp * geo


WRONG = {
    "ch09.beam_search": [("length-penalty", beam_no_penalty), ("length-penalty", beam_length_without_eos),
                         ("length-penalty", beam_stops_at_first),
                         ("bad-beam_size", beam_no_check)],
    "ch09.bleu_statistics": [("matches", stats_no_clip), ("matches", stats_ref_totals), ("matches", stats_off_by_one),
                             ("bad-hypothesis", stats_no_check)],
    "ch09.corpus_bleu": [("corpus-level", bleu_sentence_average), ("brevity", bleu_two_sided_penalty),
                         ("corpus-level", bleu_arithmetic_mean), ("bad-references", bleu_no_check)],
}
RIGHT = {"ch09.beam_search": [beam_exhaustive_pruned], "ch09.bleu_statistics": [stats_counter_and],
         "ch09.corpus_bleu": [bleu_via_sacrebleu_formula]}
