"""Chapter 09, 推理与评测：束搜索、检查点平均与 BLEU: the code in snippets/decoding.py (beam search, BLEU,
checkpoint averaging, speculative sampling, Table 2's training cost) and the claims the pages cite
(CONVENTIONS.md, "Claims"). The experiment's claims are in test_ch09_experiments.py."""

from __future__ import annotations

import itertools
import math

import pytest
import sacrebleu
import torch

from snippets.decoding import (GPU_TFLOPS, BeamStepper, average_checkpoints, beam_search, bleu_statistics,
                               corpus_bleu, expected_tokens_per_round, greedy_search, length_penalty,
                               speculative_step, split_compounds, tokenize_13a, training_flops)
from snippets.experiments import toy_translation as toy
from snippets.transformer import Transformer
from tests.support.pages import assert_states, chapter
from tests.support.sections import DOCS

F64 = torch.float64
CH09 = chapter("09")
INDEX = CH09 + "index.md"
DERIVATION = CH09 + "derivation.md"
BLEU_PAGE = CH09 + "derivation-bleu.md"
INTERVIEW = CH09 + "interview.md"


# ---------- toy step functions: a fixed next-token distribution for each prefix ----------

def table_step(table: dict, vocab: int):
    """step_log_probs from {prefix tuple (without bos): {token: prob}}; unlisted prefixes end with eos (id 0)."""
    def step(prefixes):
        rows = []
        for row in prefixes.tolist():
            probs = torch.zeros(vocab, dtype=F64)
            for token, p in table.get(tuple(row[1:]), {0: 1.0}).items():
                probs[token] = p
            rows.append(probs.log())
        return torch.stack(rows)
    return step


def random_step(vocab: int, seed: int, sharpness: float = 2.0):
    """step_log_probs whose distribution depends on the whole prefix (a fixed random table, built on demand)."""
    cache = {}

    def step(prefixes):
        out = []
        for row in prefixes.tolist():
            key = tuple(row)
            if key not in cache:
                g = torch.Generator().manual_seed(seed * 1_000_003 + hash(key) % 1_000_003)
                cache[key] = (sharpness * torch.randn(vocab, generator=g, dtype=F64)).log_softmax(-1)
            out.append(cache[key])
        step.calls += 1
        return torch.stack(out)
    step.calls = 0
    return step


def exhaustive_search(step, bos, eos, vocab, max_len, alpha):
    """Score every sequence up to max_len (ending in eos, or max_len tokens without eos) and return the best."""
    others = [v for v in range(vocab) if v != eos]
    candidates = [list(body) + [eos] for n in range(max_len) for body in itertools.product(others, repeat=n)]
    candidates += [list(body) for body in itertools.product(others, repeat=max_len)]
    best, best_score = None, -math.inf
    for seq in candidates:
        total = sum(step(torch.tensor([[bos] + seq[:t]]))[0, tok].item() for t, tok in enumerate(seq))
        score = total / length_penalty(len(seq), alpha)
        if score > best_score:
            best, best_score = seq, score
    return best, len(candidates)


# ---------- beam search ----------

@pytest.mark.claim("ch09-beam-exhaustive", paper="§6.1",
                   title="束足够宽时，束搜索 = 穷举搜索",
                   text="束宽不小于长度 ≤ max_len 的全部序列数时，beam_search 的结果与穷举全部序列、按 Σlog p / lp 打分取最大"
                        "的结果相同；提前结束的规则在这些情形里确实触发过，也没有改变结果")
def test_beam_search_equals_exhaustive_search_when_the_beam_covers_everything():
    vocab, eos, bos, max_len = 3, 0, 3, 4                 # tokens 0..2 (0 = eos), bos = 3 never generated
    early = 0
    for seed in range(12):
        for alpha in (0.0, 0.6, 1.0):
            step = random_step(vocab, seed)
            truth, n_sequences = exhaustive_search(step, bos, eos, vocab, max_len, alpha)
            step.calls = 0
            assert beam_search(step, bos, eos, beam_size=n_sequences, max_len=max_len,
                               alpha=alpha) == truth
            early += step.calls < max_len                 # stopped before max_len steps
    assert n_sequences == 31
    assert early > 0
    # a case built for the stopping rule: after step 1 the finished [eos] (0.55) beats the alive A (0.45) at the
    # current length, but A B B B B eos wins once the length penalty (α = 1) rewards its length
    EOS, A, B, BOS = range(4)
    table = {(): {EOS: 0.55, A: 0.45}, **{(A,) + (B,) * i: {B: 0.99, EOS: 0.01} for i in range(4)}}
    step = table_step(table, 4)
    truth, _ = exhaustive_search(step, BOS, EOS, 3, 6, 1.0)
    assert truth == [A, B, B, B, B, EOS]
    assert beam_search(step, BOS, EOS, beam_size=2, max_len=6, alpha=1.0) == truth


@pytest.mark.claim("ch09-search-space", paper="§6.1",
                   title="精确的 argmax 做不到：|V|^n 个候选",
                   text="长度恰为 n 的候选有 |V|^n 个；|V| = 37000、n = 50 时约 10^228 个；测试里的小问题"
                        "（3 个词、最大长度 4）一共 31 个序列，穷举数得出来")
def test_the_search_space_is_exponential():
    assert round(50 * math.log10(37000)) == 228
    _, n = exhaustive_search(random_step(3, 0), 3, 0, 3, 4, 0.6)
    assert n == sum(2 ** (L - 1) for L in range(1, 5)) + 2 ** 4 == 31
    assert_states(DERIVATION, "10^{228}", "1+2+4+8+16=31")


@pytest.mark.claim("ch09-beam-beats-greedy", paper="§6.1",
                   title="两步的例子：贪心输给束宽 2",
                   text="第一步 A 0.6、B 0.4，A 之后最好的续写只有 0.4，B 之后 eos 有 0.9：贪心得到 A X eos，概率 0.24；"
                        "束宽 2 得到 B eos，概率 0.36")
def test_greedy_loses_to_a_beam_of_two():
    EOS, A, B, X, Y, BOS = range(6)
    table = {(): {A: 0.6, B: 0.4}, (A,): {X: 0.4, Y: 0.3, EOS: 0.3}, (B,): {EOS: 0.9, X: 0.1}}
    step = table_step(table, 6)
    greedy = greedy_search(step, BOS, EOS, max_len=5)
    beam = beam_search(step, BOS, EOS, beam_size=2, max_len=5, alpha=0.0)
    assert greedy == [A, X, EOS] and beam == [B, EOS]

    def prob(seq):
        return math.exp(sum(step(torch.tensor([[BOS] + seq[:t]]))[0, tok].item() for t, tok in enumerate(seq)))
    assert prob(greedy) == pytest.approx(0.24) and prob(beam) == pytest.approx(0.36)
    assert_states(DERIVATION, "0.6\\times0.4\\times1=0.24", "0.4\\times0.9=0.36")


@pytest.mark.claim("ch09-beam-one-greedy", paper="§6.1",
                   title="束宽为 1 的束搜索与贪心解码逐词相同",
                   text="beam_search 每步只取前 k 个扩展，以 eos 结尾的也占一个名额：beam_size=1 与 greedy_search 在"
                        "同一个 step 函数上输出相同——第一步 A 0.5、eos 0.45 的例子（取前 2k 个的写法会输出 [eos]），"
                        "以及 40 个随机 step 函数 × α = 0、0.6、1、2，包括以 eos 结束和到 max_len 结束的情形")
def test_a_beam_of_one_is_greedy():
    EOS, A, B, X, Y, BOS = range(6)
    table = {(): {A: 0.5, EOS: 0.45, B: 0.05}, (A,): {X: 0.55, Y: 0.45}}
    step = table_step(table, 6)
    for alpha in (0.0, 0.6):
        assert beam_search(step, BOS, EOS, beam_size=1, max_len=5, alpha=alpha) \
            == greedy_search(step, BOS, EOS, max_len=5) == [A, X, EOS]
    endings = {"eos": 0, "max_len": 0}
    for seed in range(40):
        step = random_step(5, 100 + seed, sharpness=1.5)      # token 0 is eos
        greedy = greedy_search(step, 5, 0, max_len=6)
        endings["eos" if greedy[-1] == 0 else "max_len"] += 1
        for alpha in (0.0, 0.6, 1.0, 2.0):
            assert beam_search(step, 5, 0, beam_size=1, max_len=6, alpha=alpha) == greedy
    assert endings["eos"] >= 5 and endings["max_len"] >= 5


@pytest.mark.claim("ch09-length-penalty", paper="§6.1; GNMT §7",
                   title="长度惩罚 lp(Y) = ((5+|Y|)/6)^α",
                   text="lp(1) = 1；α = 0.6 时 lp(10) ≈ 1.7329、lp(51) ≈ 3.8196；α = 0 时 lp ≡ 1（只比 Σ log p）；"
                        "常数 5 让 lp 在短句上几乎不变：|Y| 从 1 到 2，纯 |Y|^0.6 除以 2^0.6 ≈ 1.52，lp 只除以 (7/6)^0.6 ≈ 1.10；"
                        "|Y| = 10 时纯 |Y|^0.6 ≈ 3.98")
def test_length_penalty_values():
    assert length_penalty(1, 0.6) == 1.0
    assert length_penalty(10, 0.6) == pytest.approx(1.7329, abs=5e-5)
    assert length_penalty(51, 0.6) == pytest.approx(3.8196, abs=5e-5)
    assert all(length_penalty(n, 0.0) == 1.0 for n in range(1, 60))
    assert_states(DERIVATION, "1.7329", "3.8196")
    # the +5: from |Y| = 1 to 2 the score is divided by lp(2)/lp(1), against 2^α for a bare |Y|^α
    step_lp = length_penalty(2, 0.6) / length_penalty(1, 0.6)
    assert round(step_lp, 2) == 1.10 and round(2 ** 0.6, 2) == 1.52 and round(10 ** 0.6, 2) == 3.98
    assert step_lp < 2 ** 0.6 and length_penalty(10, 0.6) < 10 ** 0.6        # the 5 flattens lp, it rewards length less
    assert_states(DERIVATION, "2^{0.6}\\approx1.52", "(7/6)^{0.6}\\approx1.10", "10^{0.6}\\approx3.98",
                  "不是去惩罚短译文")
    assert "常数 5 让短句不至于被过度奖励" not in (DOCS / DERIVATION).read_text(encoding="utf-8")


@pytest.mark.claim("ch09-short-bias", paper="§6.1",
                   title="不做长度归一化，束搜索偏爱短输出",
                   text="第一步 eos 概率 0.4：α = 0 时束搜索输出空译文（log 0.4 ≈ −0.916 高于三词译文的 log 0.378 ≈ −0.973）；"
                        "α = 0.6 时三词译文的得分 −0.819 胜出")
def test_without_length_penalty_beam_search_prefers_the_empty_output():
    EOS, A, B, BOS = range(4)
    table = {(): {EOS: 0.4, A: 0.6}, (A,): {B: 0.7, EOS: 0.3}, (A, B): {EOS: 0.9, B: 0.1}}
    step = table_step(table, 4)
    assert beam_search(step, BOS, EOS, beam_size=4, max_len=6, alpha=0.0) == [EOS]
    assert beam_search(step, BOS, EOS, beam_size=4, max_len=6, alpha=0.6) == [A, B, EOS]
    assert math.log(0.4) == pytest.approx(-0.916, abs=5e-4)
    assert math.log(0.6 * 0.7 * 0.9) == pytest.approx(-0.973, abs=5e-4)
    assert math.log(0.378) / length_penalty(3, 0.6) == pytest.approx(-0.819, abs=5e-4)
    assert_states(DERIVATION, "−0.916", "−0.973", "−0.819")


def test_beam_search_finishes_at_max_len_and_rejects_bad_arguments():
    step = table_step({(): {1: 1.0}, (1,): {1: 1.0}, (1, 1): {1: 1.0}}, 3)     # never emits eos
    assert beam_search(step, 2, 0, beam_size=2, max_len=3) == [1, 1, 1]
    with pytest.raises(ValueError, match="beam_size"):
        beam_search(step, 2, 0, beam_size=0)
    with pytest.raises(ValueError, match="max_len"):
        beam_search(step, 2, 0, max_len=0)
    with pytest.raises(ValueError, match=r"step_log_probs\(prefixes\)"):
        beam_search(lambda p: torch.zeros(p.shape[0] + 1, 3), 2, 0)          # wrong number of rows


@pytest.mark.claim("ch09-beam-cache", paper="§6.1",
                   title="带 KV 缓存的束搜索与不带缓存的相同",
                   text="BeamStepper 每步只把新词送进解码器、按父亲重排 K、V，它给出的 log 概率与整段重算的相差 < 1e-5，"
                        "两者的束搜索结果相同")
def test_beam_stepper_with_kv_cache_equals_full_recomputation():
    torch.manual_seed(0)
    for norm_first in (False, True):
        model = Transformer(12, 16, 2, 2, 32, dropout=0.0, norm_first=norm_first).eval()
        for trial in range(1):
            src = torch.randint(3, 12, (1, 6 + trial))
            stepper = BeamStepper(model, src)
            seen = []

            def full(prefixes):
                with torch.no_grad():
                    return model(src.expand(prefixes.shape[0], -1), prefixes)[:, -1].log_softmax(-1)

            def checked(prefixes):
                a, b = stepper(prefixes), full(prefixes)
                seen.append((a - b).abs().max().item())
                return a

            got = beam_search(checked, 1, 2, beam_size=3, max_len=8, alpha=0.6)
            assert got == beam_search(full, 1, 2, beam_size=3, max_len=8, alpha=0.6)
            assert max(seen) < 1e-5 and len(seen) > 2
    with pytest.raises(ValueError, match="src"):
        BeamStepper(model, torch.randint(3, 12, (2, 5)))


# ---------- BLEU ----------

EDGE_CASES = [
    (["the cat sat on the mat ."], ["the cat sat on the mat ."]),                       # perfect
    ([""], ["a non-empty reference ."]),                                               # empty hypothesis
    (["cat the mat on sat"], ["the cat sat on the mat"]),                              # no 4-gram match
    (["the the the the the the the"], ["the cat is on the mat"]),                      # clipping
    (["a b c d e f g h i j k"], ["a b c d e"]),                                        # longer than the reference
    (["Hello, world! It costs $3.50."], ["Hello world, it costs $ 3.50 ."]),           # 13a punctuation
    (["a b"], ["a b c d"]),                                                            # no 3- or 4-grams at all
    (["x y z", "the cat sat on the mat today", ""], ["x y z w", "the cat sat on a mat today", "y"]),
]


@pytest.mark.claim("ch09-bleu-sacrebleu", paper="§6.1",
                   title="本章的 corpus_bleu 与 sacreBLEU 相同",
                   text="corpus_bleu 与 sacrebleu.corpus_bleu(hyps, [refs]).score（2.6.0，默认设置）在玩具翻译任务的"
                        "各种输出和边界情形（空假设、没有 4 元组匹配、假设比参考长、裁剪、标点）上相差 < 0.01；"
                        "13a 分词逐词相同")
def test_corpus_bleu_equals_sacrebleu():
    cases = list(EDGE_CASES)
    gen = torch.Generator().manual_seed(0)
    pairs = [toy.sample_pair(gen) for _ in range(40)]
    refs = [t for _, t in pairs]
    # the chapter's data: the references, and three kinds of damaged hypotheses
    cases.append((refs, refs))
    cases.append(([" ".join(t.split()[:-2]) for t in refs], refs))                     # truncated
    cases.append(([" ".join(reversed(t.split())) for t in refs], refs))                # scrambled
    cases.append(([s for s, _ in pairs], refs))                                        # untranslated source
    for hyps, rs in cases:
        assert corpus_bleu(hyps, rs) == pytest.approx(sacrebleu.corpus_bleu(hyps, [rs]).score, abs=0.01)
    tok = sacrebleu.BLEU().tokenizer
    for line in [h for hyps, _ in cases for h in hyps] + ["a-b &amp; 3-4 <skipped> x.y, 1,000.5"]:
        assert tokenize_13a(line) == tok(line.rstrip()).split()
    with pytest.raises(ValueError, match="same length"):
        corpus_bleu(["a", "b"], ["a"])
    # the signature the page prints is the one sacreBLEU builds for these settings (sacrebleu/metrics/bleu.py)
    metric = sacrebleu.BLEU()
    metric.corpus_score(["a b c d"], [["a b c d"]])                          # the signature needs one evaluation
    signature = str(metric.get_signature())
    assert signature == f"nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:{sacrebleu.__version__}"
    assert_states(BLEU_PAGE, signature, "BLEUSignature")


@pytest.mark.claim("ch09-brevity-penalty", paper="Papineni et al. 2002",
                   title="简短惩罚 BP = min(1, e^{1−r/c})",
                   text="假设是 8 词参考的前 4 个词时，四阶精确率都是 1，BLEU 只剩简短惩罚 100·e^{1−8/4} ≈ 36.79；"
                        "假设比参考长时 BP = 1，长出来的词只降低精确率")
def test_brevity_penalty():
    ref = "one two three four five six seven eight"
    assert corpus_bleu(["one two three four"], [ref]) == pytest.approx(100 * math.exp(1 - 8 / 4), abs=1e-9)
    assert round(corpus_bleu(["one two three four"], [ref]), 2) == 36.79
    c, r, matches, totals = bleu_statistics(ref + " nine ten", ref)
    assert (c, r) == (10, 8) and matches == [8, 7, 6, 5] and totals == [10, 9, 8, 7]
    p = [m / t for m, t in zip(matches, totals)]
    assert corpus_bleu([ref + " nine ten"], [ref]) == pytest.approx(100 * math.prod(p) ** 0.25, abs=1e-9)
    assert_states(BLEU_PAGE, "36.79")


@pytest.mark.claim("ch09-corpus-vs-sentence", paper="Papineni et al. 2002",
                   title="语料级 BLEU ≠ 句子 BLEU 的平均",
                   text="两句的例子：一句与参考完全相同（句子 BLEU 100），一句是 12 词参考的前 4 个词加一个错词（句子 BLEU 16.49）；"
                        "句子 BLEU 的平均是 58.25，语料级 BLEU 是 54.88")
def test_corpus_bleu_is_not_the_mean_of_sentence_bleu():
    hyps = ["the quick brown fox jumps over the lazy dog", "we went home early today"]
    refs = ["the quick brown fox jumps over the lazy dog",
            "we went home early because the rain did not stop all afternoon"]
    sentence = [corpus_bleu([h], [r]) for h, r in zip(hyps, refs)]
    corpus = corpus_bleu(hyps, refs)
    assert sentence[0] == pytest.approx(100)
    assert round(sentence[1], 2) == 16.49
    assert round(sum(sentence) / 2, 2) == 58.25 and round(corpus, 2) == 54.88
    assert_states(BLEU_PAGE, "16.49", "58.25", "54.88")


@pytest.mark.claim("ch09-bleu-not-accuracy", paper="Papineni et al. 2002",
                   title="BLEU 不是「译对的词的百分比」",
                   text="把 6 词参考倒过来写：每个词都对（一元精确率 1），二到四阶没有一个匹配，BLEU 只有 12.70；"
                        "7 个 the 对参考 the cat is on the mat 的一元精确率，裁剪后是 2/7 而不是 7/7")
def test_bleu_is_not_the_share_of_correct_words():
    ref = "the cat sat on the mat"
    hyp = " ".join(reversed(ref.split()))
    c, r, matches, totals = bleu_statistics(hyp, ref)
    assert matches[0] == totals[0] == 6 and matches[1:] == [0, 0, 0]
    assert round(corpus_bleu([hyp], [ref]), 2) == 12.70
    # clipping: "the" counts at most twice, as often as the reference has it
    _, _, matches, totals = bleu_statistics("the the the the the the the", "the cat is on the mat")
    assert (matches[0], totals[0]) == (2, 7)
    assert_states(BLEU_PAGE, "12.70", "7/7", "2/7")


@pytest.mark.claim("ch09-compound-split", paper="§6.1",
                   title="分词决定数字：拆开连字符的复合词，BLEU 变高",
                   text="tensor2tensor 的 EN-DE 评测脚本把 a-b 拆成 a ##AT##-##AT## b 再按空格算 BLEU（已分词的 BLEU）；"
                        "在本章的例句上，用 sacreBLEU 默认的 exp 平滑，同一对译文与参考拆分前 13.89，拆分后 66.95")
def test_splitting_compounds_inflates_bleu():
    hyp = "die Ost-West-Beziehungen und die Nord-Süd-Achse sind heute wichtig"
    ref = "die Nord-Süd-Beziehungen und die Ost-West-Achse sind jetzt wichtig"
    assert split_compounds("Ost-West-Beziehungen") == "Ost ##AT##-##AT## West ##AT##-##AT## Beziehungen"
    plain = corpus_bleu([hyp], [ref], tokenize=str.split)
    split = corpus_bleu([split_compounds(hyp)], [split_compounds(ref)], tokenize=str.split)
    assert split > plain + 10
    assert (round(plain, 2), round(split, 2)) == (13.89, 66.95)
    assert_states(BLEU_PAGE, "13.89", "66.95")


@pytest.mark.claim("ch09-multi-bleu", paper="§6.1; Papineni et al. 2002",
                   title='multi-bleu.perl 不平滑：`tokenize=str.split`、`smooth="none"`',
                   text='`corpus_bleu(smooth="exp")` 与 `smooth="none"` 分别与 sacreBLEU 2.6.0 的 `smooth_method=\'exp\'`、`\'none\'` '
                        "相同（13a 分词，以及按空格切对 `tokenize='none'`，各种边界情形上相差 < 1e-9）；不平滑时，"
                        "拆复合词的例句拆分前是 0.00（exp 平滑下的 13.89 全部来自平滑），拆分后仍是 66.95；倒过来写的句子是 0.00")
def test_corpus_bleu_smoothing_matches_sacrebleu_and_multi_bleu():
    cases = list(EDGE_CASES)
    gen = torch.Generator().manual_seed(1)
    pairs = [toy.sample_pair(gen) for _ in range(20)]
    refs = [t for _, t in pairs]
    cases.append(([" ".join(t.split()[:-2]) for t in refs], refs))
    cases.append(([" ".join(reversed(t.split())) for t in refs], refs))
    cases += [([h], [r]) for h, r in zip([" ".join(reversed(t.split())) for t in refs[:6]], refs[:6])]
    zero_case = 0
    for smooth in ("exp", "none"):
        for ours, theirs in ((tokenize_13a, "13a"), (str.split, "none")):
            metric = sacrebleu.BLEU(smooth_method=smooth, tokenize=theirs)
            for hyps, rs in cases:
                expected = metric.corpus_score(hyps, [rs]).score
                assert corpus_bleu(hyps, rs, tokenize=ours, smooth=smooth) == pytest.approx(expected, abs=1e-9)
                zero_case += smooth == "none" and expected == 0 and corpus_bleu(hyps, rs, tokenize=ours) > 0
    assert zero_case > 0                                      # smoothing matters on some of these cases
    hyp = "die Ost-West-Beziehungen und die Nord-Süd-Achse sind heute wichtig"
    ref = "die Nord-Süd-Beziehungen und die Ost-West-Achse sind jetzt wichtig"
    assert corpus_bleu([hyp], [ref], tokenize=str.split, smooth="none") == 0.0
    assert round(corpus_bleu([hyp], [ref], tokenize=str.split), 2) == 13.89
    split = corpus_bleu([split_compounds(hyp)], [split_compounds(ref)], tokenize=str.split, smooth="none")
    assert round(split, 2) == 66.95
    reversed_sentence = " ".join(reversed("the cat sat on the mat".split()))
    assert corpus_bleu([reversed_sentence], ["the cat sat on the mat"], smooth="none") == 0.0
    with pytest.raises(ValueError, match="smooth must be 'exp' or 'none'.*smooth='floor'"):
        corpus_bleu(["a"], ["a"], smooth="floor")
    assert_states(BLEU_PAGE, "13.89", "66.95", "0.00")


# ---------- checkpoint averaging ----------

@pytest.mark.claim("ch09-average-identity", paper="§6.1",
                   title="k 个相同的检查点取平均，逐位不变",
                   text="average_checkpoints 对 k 个相同的检查点（k = 1…20）逐位返回原值；两个检查点的平均是逐元素中点；"
                        "整数张量原样保留")
def test_averaging_identical_checkpoints_is_the_identity():
    torch.manual_seed(0)
    model = Transformer(10, 16, 2, 1, 32, dropout=0.0)
    sd = {**model.state_dict(), "step": torch.tensor(123)}
    for k in (1, 2, 5, 20):
        avg = average_checkpoints([sd] * k)
        assert avg.keys() == sd.keys()
        assert all(torch.equal(avg[key], sd[key]) and avg[key].dtype == sd[key].dtype for key in sd)
    other = {k: (v + 1 if v.is_floating_point() else v) for k, v in sd.items()}
    mid = average_checkpoints([sd, other])
    assert all(torch.allclose(mid[k], sd[k] + 0.5) for k in sd if sd[k].is_floating_point())
    half = {k: v.half() if v.is_floating_point() else v for k, v in sd.items()}
    assert average_checkpoints([half, half])["src_embed.weight"].dtype == torch.float16


@pytest.mark.claim("ch09-average-jensen", paper="§6.1",
                   title="二次损失下，平均点的损失不高于各检查点损失的平均",
                   text="对半正定 H 的二次损失 L(θ) = ½(θ−θ*)ᵀH(θ−θ*)，average_checkpoints 给出的平均点满足 "
                        "L(θ̄) ≤ (1/k)ΣL(θ_i)（Jensen 不等式），且在各检查点围绕 θ* 对称抖动时明显更低")
def test_averaging_checkpoints_lowers_a_quadratic_loss():
    gen = torch.Generator().manual_seed(0)
    d = 12
    a = torch.randn(d, d, generator=gen, dtype=F64)
    h, center = a @ a.T / d, torch.randn(d, generator=gen, dtype=F64)

    def loss(theta):
        e = theta - center
        return 0.5 * (e @ h @ e).item()

    for k in (2, 5, 20):
        ckpts = [{"w": center + 0.3 * torch.randn(d, generator=gen, dtype=F64)} for _ in range(k)]
        avg = average_checkpoints(ckpts)["w"]
        mean_loss = sum(loss(c["w"]) for c in ckpts) / k
        assert loss(avg) <= mean_loss + 1e-12
        if k == 20:
            assert loss(avg) < 0.25 * mean_loss        # independent noise shrinks roughly like 1/k


@pytest.mark.claim("ch09-average-permutation", paper="§6.1",
                   title="置换对称：独立训练的模型不能逐元素平均",
                   text="把读者的 FFN 的隐藏单元换一个顺序（W₁ 的行、b₁、W₂ 的列同时置换），输出逐位相同；"
                        "把原模型与置换后的模型用 average_checkpoints 平均，输出就变了")
def test_a_permuted_copy_computes_the_same_function_but_averaging_breaks_it():
    from snippets.transformer import PositionwiseFeedForward
    torch.manual_seed(0)
    ffn = PositionwiseFeedForward(8, 32, dropout=0.0).double().eval()
    perm = torch.randperm(32)
    sd = ffn.state_dict()
    permuted = {"linear1.weight": sd["linear1.weight"][perm], "linear1.bias": sd["linear1.bias"][perm],
                "linear2.weight": sd["linear2.weight"][:, perm], "linear2.bias": sd["linear2.bias"]}
    other = PositionwiseFeedForward(8, 32, dropout=0.0).double().eval()
    other.load_state_dict(permuted)
    x = torch.randn(2, 5, 8, dtype=F64)
    assert torch.allclose(ffn(x), other(x), atol=1e-12)
    mixed = PositionwiseFeedForward(8, 32, dropout=0.0).double().eval()
    mixed.load_state_dict(average_checkpoints([sd, permuted]))
    assert (mixed(x) - ffn(x)).abs().max().item() > 1e-2


def test_average_checkpoints_rejects_mismatches_naming_the_key():
    sd = {"w": torch.ones(2, 3), "step": torch.tensor(5)}
    with pytest.raises(ValueError, match="at least one"):
        average_checkpoints([])
    with pytest.raises(ValueError, match="missing \\['step'\\]"):
        average_checkpoints([sd, {"w": torch.ones(2, 3)}])
    with pytest.raises(ValueError, match=r"w: checkpoint 1 has shape \(3, 2\)"):
        average_checkpoints([sd, {"w": torch.ones(3, 2), "step": torch.tensor(5)}])
    with pytest.raises(ValueError, match=r"step: checkpoint 1 has dtype torch.float32"):
        average_checkpoints([sd, {"w": torch.ones(2, 3), "step": torch.tensor(6.0)}])


def test_average_checkpoints_streams_and_keeps_the_last_integer_buffer():
    """An iterator of checkpoints is consumed one at a time (at most two alive: the one being added and the
    next one being built); integer buffers (step counters) take the last checkpoint's value; inputs are not
    modified, float64 ones included."""
    import gc
    import weakref

    alive = {"now": 0, "peak": 0}

    class Checkpoint(dict):                                   # a dict that can be watched with weakref.finalize
        pass

    def released():
        alive["now"] -= 1

    def load(k):
        gen = torch.Generator().manual_seed(0)
        for i in range(k):
            gc.collect()
            ckpt = Checkpoint(w=torch.randn(50, 40, generator=gen), step=torch.tensor(100 * (i + 1)),
                              num_batches_tracked=torch.tensor(7 * i))
            weakref.finalize(ckpt, released)
            alive["now"] += 1
            alive["peak"] = max(alive["peak"], alive["now"])
            yield ckpt

    avg = average_checkpoints(load(20))
    assert alive["peak"] <= 2
    expected = torch.stack([c["w"] for c in load(20)]).double().mean(0).float()
    assert torch.allclose(avg["w"], expected, atol=1e-7)
    assert avg["step"].item() == 2000 and avg["num_batches_tracked"].item() == 7 * 19
    assert avg["step"].dtype == torch.int64
    ckpts = [{"w": torch.full((3,), float(i), dtype=F64)} for i in range(4)]
    before = [c["w"].clone() for c in ckpts]
    assert torch.equal(average_checkpoints(ckpts)["w"], torch.full((3,), 1.5, dtype=F64))
    assert all(torch.equal(c["w"], b) for c, b in zip(ckpts, before))


# ---------- speculative sampling ----------

def outcome_distribution(target, draft, gamma):
    """Enumerate one round exactly: every draft token x_i (weight q(x_i)), both branches of the accept test
    (weights min(1, p/q) and the rest, each represented by a uniform inside its interval), and the final token.
    target(prefix) / draft(prefix) give a distribution (V,) for a tuple prefix. Returns {emitted tuple: prob}."""
    out = {}

    def walk(prefix, drafted, weight):
        i = len(drafted)
        if i < gamma:
            q = draft(prefix + drafted)
            for x in range(q.shape[0]):
                if q[x] > 0:
                    walk(prefix, drafted + (x,), weight * q[x].item())
            return
        t_probs = torch.stack([target(prefix + drafted[:j]) for j in range(gamma + 1)])   # (γ+1, V)
        d_probs = torch.stack([draft(prefix + drafted[:j]) for j in range(gamma)])        # (γ, V)
        accept = [min(1.0, (t_probs[j, x] / d_probs[j, x]).item()) for j, x in enumerate(drafted)]
        # the accept test depends on u only through u < a: one representative u per branch
        for branches in itertools.product(*[((a / 2, a), ((1 + a) / 2, 1 - a)) for a in accept]):
            w = weight * math.prod(b[1] for b in branches)
            if w == 0:
                continue
            u = torch.tensor([b[0] for b in branches], dtype=F64)
            accepted, next_probs = speculative_step(t_probs, d_probs, torch.tensor(drafted), u)
            for y in range(next_probs.shape[0]):
                if next_probs[y] > 0:
                    key = tuple(accepted) + (y,)
                    out[key] = out.get(key, 0.0) + w * next_probs[y].item()
    walk((), (), 1.0)
    return out


def prefix_dist(seed: int, vocab: int, zero_some: bool = False):
    cache = {}

    def dist(prefix):
        if prefix not in cache:
            g = torch.Generator().manual_seed(seed * 7919 + hash(prefix) % 7919)
            p = torch.rand(vocab, generator=g, dtype=F64) ** 3
            if zero_some:
                p[int(torch.randint(vocab, (1,), generator=g))] = 0.0   # a token one model never proposes
            cache[prefix] = p / p.sum()
        return cache[prefix]
    return dist


@pytest.mark.claim("ch09-speculative-exact", paper="Leviathan et al. 2023; Chen et al. 2023",
                   title="投机采样的输出分布与目标模型的分布完全相同",
                   text="在 4 个词的词表上精确枚举（不抽样）：γ = 1 时一轮输出的第一个词的分布等于 p；γ = 2 时输出的前两个词"
                        "（一轮只产出一个词时再从目标模型补一个）的联合分布等于 p(y₁)p(y₂|y₁)，误差 < 1e-12")
def test_speculative_sampling_reproduces_the_target_distribution_exactly():
    vocab = 4
    for seed in range(6):
        target, draft = prefix_dist(seed, vocab, zero_some=seed % 2 == 0), prefix_dist(100 + seed, vocab, seed % 3 == 0)
        one = outcome_distribution(target, draft, gamma=1)
        first = torch.zeros(vocab, dtype=F64)
        for seq, w in one.items():
            first[seq[0]] += w
        assert torch.allclose(first, target(()), atol=1e-12, rtol=0)
        two = outcome_distribution(target, draft, gamma=2)
        joint = torch.zeros(vocab, vocab, dtype=F64)
        for seq, w in two.items():
            if len(seq) >= 2:
                joint[seq[0], seq[1]] += w
            else:                                  # the round emitted one token: the next round starts at p(·|y₁)
                joint[seq[0]] += w * target(seq)
        expected = torch.stack([target(()).__getitem__(a) * target((a,)) for a in range(vocab)])
        assert torch.allclose(joint, expected, atol=1e-12, rtol=0)
        assert sum(two.values()) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.claim("ch09-speculative-length", paper="Leviathan et al. 2023",
                   title="一轮的期望产出词数 (1 − a^{γ+1}) / (1 − a)",
                   text="每个位置的草稿与目标分布都相同时，接受率 a = Σ min(p, q) = 1 − TV(p, q)，精确枚举得到的每轮期望"
                        "词数等于 (1 − a^{γ+1})/(1 − a)（γ = 1…3）；a = 0.8、γ = 5 时约 3.69")
def test_expected_tokens_per_round():
    vocab = 4
    p = torch.tensor([0.5, 0.2, 0.2, 0.1], dtype=F64)
    q = torch.tensor([0.25, 0.25, 0.4, 0.1], dtype=F64)
    alpha = torch.minimum(p, q).sum().item()
    assert alpha == pytest.approx(1 - 0.5 * (p - q).abs().sum().item(), abs=1e-15)
    for gamma in (1, 2, 3):
        dist = outcome_distribution(lambda prefix: p, lambda prefix: q, gamma)
        mean_len = sum(len(seq) * w for seq, w in dist.items())
        assert mean_len == pytest.approx(expected_tokens_per_round(alpha, gamma), abs=1e-12)
    assert expected_tokens_per_round(1.0, 4) == 5
    assert round(expected_tokens_per_round(0.8, 5), 2) == 3.69
    assert_states(INTERVIEW, "3.69")


def test_speculative_step_checks_its_shapes():
    p, q = torch.full((3, 4), 0.25), torch.full((2, 4), 0.25)
    with pytest.raises(ValueError, match="draft_probs"):
        speculative_step(p, q[:1], torch.tensor([0, 1]), torch.rand(2))
    with pytest.raises(ValueError, match="target_probs"):
        speculative_step(p[:2], q, torch.tensor([0, 1]), torch.rand(2))
    with pytest.raises(ValueError, match="uniforms"):
        speculative_step(p, q, torch.tensor([0, 1]), torch.rand(3))


# ---------- Table 2 ----------

@pytest.mark.claim("ch09-table2-cost", paper="§6.1, 表 2, 脚注 5",
                   title="表 2 的训练成本按论文的方法重算",
                   text="训练时间 × GPU 数 × 持续 TFLOPS：base 12 小时 × 8 × 9.5（P100）= 3.28·10¹⁸ ≈ 3.3·10¹⁸，"
                        "big 3.5 天 × 8 × 9.5 = 2.30·10¹⁹ ≈ 2.3·10¹⁹")
def test_table2_training_cost_recomputed():
    assert GPU_TFLOPS == {"K80": 2.8, "K40": 3.7, "M40": 6.0, "P100": 9.5}
    base, big = training_flops(12, 8, "P100"), training_flops(3.5 * 24, 8, "P100")
    assert f"{base:.2e}" == "3.28e+18" and f"{base:.1e}" == "3.3e+18"
    assert f"{big:.2e}" == "2.30e+19" and f"{big:.1e}" == "2.3e+19"
    assert_states(INDEX, "3.28\\cdot10^{18}", "2.30\\cdot10^{19}")


SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹", "0123456789")


def table2_costs() -> dict[str, dict[str, float]]:
    """The training-cost table as the chapter's index page types it: {model: {"EN-DE": flops, "EN-FR": flops}}."""
    text = (DOCS / INDEX).read_text(encoding="utf-8")
    block = text.split("训练成本（FLOPs；", 1)[1].split("\n\n", 2)[1]
    costs = {}
    for line in block.splitlines()[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        costs[cells[0]] = {}
        for pair, cell in zip(("EN-DE", "EN-FR"), cells[1:]):
            if cell:
                mantissa, exponent = cell.split("·10")
                costs[cells[0]][pair] = float(f"{mantissa}e{exponent.translate(SUPERSCRIPT)}")
    return costs


@pytest.mark.claim("ch09-table2-fraction", paper="§6.1, 表 2",
                   title="「a fraction of the training cost」有多小",
                   text="big 的 2.3·10¹⁹ 是 EN-FR 单模型 MoE 1.2·10²⁰ 的 0.19、GNMT+RL 1.4·10²⁰ 的 0.16、ConvS2S 1.5·10²⁰ 的 0.15，"
                        "都低于 1/4；28.4 − 26.36 = 2.04 > 2.0；base 的 3.3·10¹⁸ 是 EN-DE 最便宜的 ConvS2S 9.6·10¹⁸ 的 0.34；"
                        "但 EN-DE 上 big 是 ConvS2S 单模型的 2.4 倍、MoE 的 1.15 倍、与 GNMT+RL 单模型相同，"
                        "只对集成才是一小部分（ConvS2S 集成的 0.30、GNMT+RL 集成的 0.13）")
def test_table2_fractions():
    big, base = training_flops(3.5 * 24, 8, "P100"), training_flops(12, 8, "P100")
    costs = table2_costs()
    assert costs["Transformer big"] == {"EN-DE": float(f"{big:.1e}"), "EN-FR": float(f"{big:.1e}")}
    en_fr = {k: costs[k]["EN-FR"] for k in ("MoE", "GNMT + RL", "ConvS2S")}
    ratios = {k: round(float(f"{big:.1e}") / v, 2) for k, v in en_fr.items()}
    assert ratios == {"MoE": 0.19, "GNMT + RL": 0.16, "ConvS2S": 0.15} and max(ratios.values()) < 0.25
    assert round(28.4 - 26.36, 2) == 2.04
    assert round(float(f"{base:.1e}") / costs["ConvS2S"]["EN-DE"], 2) == 0.34
    assert_states(INDEX, "MoE（1.2·10²⁰）的0.19", "GNMT+RL（1.4·10²⁰）的0.16", "ConvS2S（1.5·10²⁰）的0.15",
                  "28.4-26.36=2.04", "ConvS2S（9.6·10¹⁸）的0.34")
    # EN-DE: big against the earlier single models is not a fraction; against the ensembles it is
    en_de = {k: round(costs["Transformer big"]["EN-DE"] / costs[k]["EN-DE"], 2)
             for k in ("ConvS2S", "MoE", "GNMT + RL", "ConvS2S 集成", "GNMT + RL 集成")}
    assert en_de == {"ConvS2S": 2.4, "MoE": 1.15, "GNMT + RL": 1.0, "ConvS2S 集成": 0.3, "GNMT + RL 集成": 0.13}
    assert_states(INDEX, "ConvS2S单模型（9.6·10¹⁸）的2.4倍", "MoE（2.0·10¹⁹）的1.15倍", "GNMT+RL单模型（2.3·10¹⁹）**相同**",
                  "ConvS2S集成7.7·10¹⁹的0.30", "GNMT+RL集成1.8·10²⁰的0.13")


@pytest.mark.claim("ch09-table2-ensembles", paper="§6.1, 表 2",
                   title="表 2 的集成按 8 个单模型计成本",
                   text="表 2 的五个集成成本（Deep-Att、GNMT+RL 两列、ConvS2S 两列）都等于对应单模型成本的 8 倍，"
                        "四舍五入到两位有效数字")
def test_table2_ensembles_cost_eight_single_models():
    costs = table2_costs()
    ensembles = [k for k in costs if k.endswith(" 集成")]
    assert sorted(ensembles) == ["ConvS2S 集成", "Deep-Att + PosUnk 集成", "GNMT + RL 集成"]
    pairs = [(k, pair) for k in ensembles for pair in costs[k]]
    assert len(pairs) == 5
    for k, pair in pairs:
        single = costs[k.removesuffix(" 集成")][pair]
        assert float(f"{8 * single:.1e}") == costs[k][pair], (k, pair)
        assert all(float(f"{m * single:.1e}") != costs[k][pair] for m in (7, 9)), (k, pair)
    assert_states(INDEX, "8倍", "1.0·10²⁰→8.0·10²⁰", "9.6·10¹⁸→7.7·10¹⁹")


def test_beam_stepper_moves_the_prefixes_to_the_models_device():
    """beam_search builds its prefixes on the CPU; the stepper hands them to the model on the model's device
    (the meta device stands in for a GPU: a CPU prefix would meet meta weights and fail)."""
    from snippets.checks import values_unchecked
    from snippets.decoding import BeamStepper
    from snippets.transformer import Transformer

    model = Transformer(11, d_model=8, num_heads=2, num_layers=1, d_ff=16, dropout=0.0).to("meta").eval()
    with values_unchecked():
        step = BeamStepper(model, torch.zeros(1, 4, dtype=torch.long, device="meta"))
        log_probs = step(torch.zeros(1, 1, dtype=torch.long))           # a CPU prefix, as beam_search makes it
    assert log_probs.device.type == "meta" and log_probs.shape == (1, 11)


def test_speculative_step_refuses_uniforms_outside_the_unit_interval():
    p, q = torch.full((2, 3), 1 / 3), torch.full((1, 3), 1 / 3)
    with pytest.raises(ValueError, match="uniforms must lie in"):
        speculative_step(p, q, torch.tensor([1]), torch.ones(1))
