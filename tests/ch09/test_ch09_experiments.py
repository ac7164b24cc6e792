"""Chapter 09's experiment: the committed toy translation results against the thresholds stated on the page,
a tiny smoke run into tmp_path, the task's grammar, and the renderer."""

from __future__ import annotations

from pathlib import Path

import pytest

from sitebuild.generate.render import ch09_decoding
from snippets.decoding import corpus_bleu
from snippets.experiments import toy_translation as toy
from snippets.results import load_results
from snippets.stats import compare_seeds, describe
from snippets.transformer import Transformer
from tests.support.committed import committed_results
from tests.support.pages import assert_states, chapter
from tests.support.verdicts import assert_reading

CH09 = chapter("09")
CODE = CH09 + "code.md"
QUESTIONS = CH09 + "questions.md"
ROOT = Path(__file__).resolve().parents[2]
FULL = ROOT / "results" / "toy-translation.json"
EARLY = ROOT / "results" / toy.EARLY_OUT
LONG = ROOT / "results" / toy.LONG_OUT


def committed(path: Path, preset: str) -> dict:
    return committed_results(path, toy, preset, free=("optimizer",))


@pytest.fixture(scope="module")
def full() -> dict:
    return committed(FULL, "full")


def summary(data: dict, method: str) -> dict:
    (row,) = [s for s in data["summary"] if s["method"] == method]
    return row


def bleu(data: dict, method: str) -> list[float]:
    return [r["methods"][method]["bleu"] for r in data["runs"]]


def seeds(data: dict) -> list[int]:
    return [r["seed"] for r in data["runs"]]


def decoding(data: dict, a: str, b: str):
    """BLEU of method b minus method a, paired by seed (training randomness; the sentence-level test is
    test_sentence_level_paired_bootstrap)."""
    return compare_seeds(bleu(data, a), bleu(data, b), seeds=seeds(data))


def averaging_ce(data: dict):
    """Test cross-entropy of the averaged checkpoint minus the last one, paired by seed."""
    return compare_seeds([r["test_loss"]["last"] for r in data["runs"]],
                         [r["test_loss"]["averaged"] for r in data["runs"]], seeds=seeds(data))


def gain_change(early: dict, later: dict, method: str):
    """The gain of `method` over greedy at the later budget minus the gain at 300 steps, paired by the seeds
    both runs have (long runs the first 3)."""
    common = [s for s in seeds(early) if s in seeds(later)]
    gain = lambda d: {r["seed"]: r["methods"][method]["bleu"] - r["methods"]["greedy"]["bleu"] for r in d["runs"]}  # noqa: E731
    g_early, g_later = gain(early), gain(later)
    return compare_seeds([g_early[s] for s in common], [g_later[s] for s in common], seeds=common)


def bleu_words(c) -> str:
    return describe(c, " BLEU", digits=2)


def nats_words(c) -> str:
    return describe(c, " nats", digits=3)


def test_full_file_covers_every_seed_and_method(full):
    assert [r["seed"] for r in full["runs"]] == full["config"]["seeds"] and len(full["runs"]) >= 3
    for s in full["summary"]:
        bleu = [r["methods"][s["method"]]["bleu"] for r in full["runs"]]
        assert s["bleu_min"] == min(bleu) and abs(s["bleu_mean"] - sum(bleu) / len(bleu)) < 1e-12
    # the examples are what the chapter's code makes of them: a hypothesis and its reference
    for r in full["runs"]:
        for ex in r["examples"]:
            assert set(ex) == {"source", "reference", "hypothesis"} and len(ex["reference"].split()) == len(ex["source"].split())


@pytest.mark.claim("ch09-toy-decoding", paper="§6.1", results="results/toy-translation.json",
                   title="玩具翻译：600 步时分不出解码方式的高低",
                   text="600 步、8 个种子、测试集 150 句：本章的 BLEU 与 sacreBLEU 对每个种子、每种解码相差 < 0.01；"
                        "贪心的均值 98.25，束宽 4（α = 0 与 0.6）与贪心逐种子配对「不足以下结论」（均值相差 < 0.2）；"
                        "各方法的 c/r 都在 0.99–1.01 之间，没有短偏置")
def test_decoding_results(full):
    assert full["config"]["steps"] == 600 and len(full["config"]["seeds"]) == 8
    for r in full["runs"]:
        for m in r["methods"].values():
            assert abs(m["bleu"] - m["sacrebleu"]) < 0.01
            assert 0.99 <= m["length_ratio"] <= 1.01
    greedy = summary(full, "greedy")
    assert round(greedy["bleu_mean"], 2) == 98.25
    for method in ("beam4", "beam4-lp"):
        assert abs(summary(full, method)["bleu_mean"] - greedy["bleu_mean"]) < 0.2
    assert greedy["bleu_max"] - greedy["bleu_min"] > 0.5            # the seeds differ by more than the methods
    assert_states(CODE, "98.25", "相差不到0.2BLEU", "0.99–1.01")
    beam, beam_lp = decoding(full, "greedy", "beam4"), decoding(full, "greedy", "beam4-lp")
    assert (beam.n, beam.verdict, beam_lp.verdict) == (8, "不足以下结论", "不足以下结论")
    assert_reading(CODE, "8 个种子分不出束宽 4（$\\alpha=0$）与贪心的高低", beam, stated=bleu_words(beam))
    # 「要定下 0.15 BLEU 的差需要二十几个种子」: n with t(n-1)·s/√n < |m|, s the paired differences' sd
    import statistics
    s, m = statistics.stdev(beam.differences), abs(beam.mean_difference)
    from snippets.stats import t_quantile
    needed = next(n for n in range(2, 200) if t_quantile(0.975, n - 1) * s / n ** 0.5 < m)
    assert 20 <= needed < 30, needed
    assert_states(CODE, "需要二十几个种子")
    assert_reading(CODE, "的束搜索与贪心也分不出高低", beam_lp, stated=bleu_words(beam_lp))


@pytest.mark.claim("ch09-toy-averaging", paper="§6.1", results="results/toy-translation.json",
                   title="玩具翻译：检查点平均",
                   text="600 步、8 个种子：平均最后 5 个检查点后测试集交叉熵在 8 个种子上都更低（「一致」，不到 0.01 nats）；"
                        "对束宽 4、α = 0.6 的 BLEU 的影响看不出（6 个种子上升、2 个下降，「不足以下结论」）")
def test_checkpoint_averaging_results(full):
    assert full["config"]["average_k"] == 5
    ce = averaging_ce(full)
    assert (ce.n, ce.n_agree, ce.sign, ce.verdict) == (8, 8, -1, "一致")
    assert -0.01 < ce.mean_difference < 0                                        # 「不到 0.01 nats」
    avg = decoding(full, "beam4-lp", "avg-beam4-lp")
    assert (avg.n_agree, avg.verdict) == (6, "不足以下结论")
    assert_reading(CODE, "8 个种子上测试集交叉熵都更低", ce, stated=nats_words(ce))
    assert_reading(CODE, "对 BLEU（束宽 4、α = 0.6）的影响看不出（", avg, stated=bleu_words(avg))
    assert_states(CODE, "不到0.01nats", "种子1上平均后反而低了0.66BLEU")
    assert round(avg.differences[1], 2) == -0.66


@pytest.mark.claim("ch09-toy-budgets", paper="§6.1", results="results/toy-translation-early.json",
                   title="玩具翻译：训练预算不同，读法不同",
                   text="只改训练步数（300、600 步各 8 个种子，1800 步 3 个）：300 步时束宽 4 的 BLEU 在 8 个种子上都高于贪心"
                        "（+0.28 到 +1.35，「一致」），α = 0.6 又略高于 α = 0（约 0.2，「一致」），检查点平均后交叉熵更高、"
                        "BLEU 更低（都「一致」）；1800 步时五种方法都 ≥ 99.87，平均检查点的两种都是 100，"
                        "平均后交叉熵低约 0.001 nats（「一致」）；束搜索相对贪心的增益 600、1800 步时比 300 步小（「一致」）")
def test_training_budgets(full):
    early, long = committed(EARLY, "early"), committed(LONG, "long")
    assert (early["config"]["steps"], full["config"]["steps"], long["config"]["steps"]) == (300, 600, 1800)
    assert early["config"]["seeds"] == full["config"]["seeds"] and long["config"]["seeds"] == full["config"]["seeds"][:3]
    gains = []
    for r in early["runs"]:
        m = r["methods"]
        gains.append(m["beam4"]["bleu"] - m["greedy"]["bleu"])
        assert m["beam4-lp"]["bleu"] >= m["beam4"]["bleu"]
        assert r["test_loss"]["averaged"] > r["test_loss"]["last"]
        assert m["avg-beam4-lp"]["bleu"] < m["beam4-lp"]["bleu"]
    assert (round(min(gains), 2), round(max(gains), 2)) == (0.28, 1.35)
    assert round(summary(early, "greedy")["bleu_mean"], 2) == 89.64
    for r in long["runs"]:
        assert all(m["bleu"] >= 99.87 for m in r["methods"].values())
        assert r["methods"]["avg-greedy"]["bleu"] == r["methods"]["avg-beam4-lp"]["bleu"] == pytest.approx(100)
    assert_states(CODE, "贪心89.64BLEU", "+0.28到+1.35BLEU", "不低于99.87BLEU")
    # each reading held to the helper's verdict on the committed files
    beam, lp = decoding(early, "greedy", "beam4"), decoding(early, "beam4", "beam4-lp")
    ce_early, avg_early = averaging_ce(early), decoding(early, "beam4-lp", "avg-beam4-lp")
    ce_long = averaging_ce(long)
    assert (beam.verdict, lp.verdict, ce_early.verdict, avg_early.verdict, ce_long.verdict) == (
        "一致", "一致", "一致", "一致", "一致")
    assert ce_early.sign == 1 and beam.sign == 1 and lp.sign == 1 and avg_early.sign == -1 and ce_long.sign == -1
    assert round(lp.mean_difference, 1) == 0.2 and round(-ce_long.mean_difference, 3) == 0.001
    assert_reading(CODE, "个种子上束宽 4 的 BLEU 都高于贪心，逐种子高", beam, stated=bleu_words(beam))
    assert_reading(CODE, "在 8 个种子上都略高于", lp, stated=bleu_words(lp))
    assert_reading(CODE, "个种子上测试集交叉熵都更高", ce_early, stated=nats_words(ce_early))
    assert_reading(CODE, "也在 8 个种子上都更低（平均差", avg_early, stated=bleu_words(avg_early))
    assert_reading(CODE, "平均后测试集交叉熵在 3 个种子上都更低", ce_long, stated=nats_words(ce_long))
    assert_states(CODE, "约0.2BLEU", "只低约0.001nats", "低约0.001nats")
    assert_reading(CODE, "个种子上测试集交叉熵都更高", ce_early, stated=nats_words(ce_early))
    assert_reading(QUESTIONS, "平均最后 5 个检查点后测试集交叉熵反而更高", ce_early, stated=nats_words(ce_early))
    assert_reading(QUESTIONS, "BLEU 也在 8 个种子上都更低", avg_early, stated=bleu_words(avg_early))
    assert_reading(CODE, "的 BLEU 高于贪心（平均差", beam, stated=bleu_words(beam))
    # the gain of beam search over greedy shrinks from 300 steps to 600 and to 1800
    shrink_full, shrink_long = gain_change(early, full, "beam4-lp"), gain_change(early, long, "beam4-lp")
    assert (shrink_full.verdict, shrink_full.sign, shrink_long.verdict, shrink_long.sign) == ("一致", -1, "一致", -1)
    assert_reading(CODE, "步比 300 步更小", shrink_full, stated=bleu_words(shrink_full))
    assert bleu_words(shrink_long) in assert_reading(CODE, "步比 300 步更小", shrink_long)
    assert_reading(CODE, "到 600 步时更小", shrink_full, stated=bleu_words(shrink_full))
    # the hypothesis names the learning rate over checkpoints 220..300: 0.58–0.67 of the peak
    factors = [toy.lr_factor(step - 1, early["config"]["warmup_steps"]) for step in range(220, 301, 20)]
    assert (round(min(factors), 2), round(max(factors), 2)) == (0.58, 0.67)
    assert_states(CODE, "峰值的0.58–0.67")


def test_grammar_gives_a_real_reference():
    import torch
    gen = torch.Generator().manual_seed(0)
    pairs = [toy.sample_pair(gen) for _ in range(200)]
    for src, tgt in pairs:
        s, t = src.split(), tgt.split()
        assert len(s) == len(t) and s[-1] == t[-1] == "."
        assert toy.LEXICON[[w for w in s if w in toy.VERBS][0]] == t[-2]          # the verb goes last
        assert sorted(toy.LEXICON[w] for w in s) == sorted(t)                     # a word-for-word translation
        assert all(w in toy.INDEX for w in s + t)
    assert corpus_bleu([t for _, t in pairs], [t for _, t in pairs]) == pytest.approx(100)
    assert isinstance(toy.build_model(), Transformer)


@pytest.mark.claim("ch09-toy-paired-bootstrap", paper="Koehn 2004; §6.1", results="results/toy-translation.json",
                   title="玩具翻译：每个种子内按句子配对重抽",
                   text="每个种子内对 150 个测试句配对重抽 1000 次（sacreBLEU PairedTest，结果文件存着全部译文）："
                        "300 步与 600 步时束搜索与贪心的差在 3 个种子中 0 个显著；检查点平均对 BLEU 的影响在 600 步时"
                        "3 个种子中 2 个显著（都为正）、种子 1 为负，300 步时 2 个显著（都为负）；1800 步时三种解码逐句相同")
def test_sentence_level_paired_bootstrap(full):
    early, long = committed(EARLY, "early"), committed(LONG, "long")
    for data in (early, full, long):
        refs = data["test_set"]["references"]
        assert len(refs) == data["config"]["test_sentences"]
        for r in data["runs"]:
            for method, hyps in r["hypotheses"].items():
                # the stored outputs are the ones the stored BLEU was computed from
                assert corpus_bleu(hyps, refs) == pytest.approx(r["methods"][method]["bleu"], abs=1e-9)
    words = lambda data, b, a: ch09_decoding.sentence_words(ch09_decoding.sentence_level(data, b, a))  # noqa: E731
    for b, a in (("beam4", "greedy"), ("beam4-lp", "greedy")):
        assert sum(c.verdict == "显著" for c, _ in ch09_decoding.sentence_level(full, b, a)) == 1   # 「多数种子内不显著」
        assert_states(CODE, words(full, b, a) + "）" if b == "beam4-lp" else words(full, b, a) + "；")
    avg_full = ch09_decoding.sentence_level(full, "avg-beam4-lp", "beam4-lp")
    assert sum(c.verdict == "显著" for c, _ in avg_full) == 3 and all(c.difference > 0 for c, _ in avg_full
                                                                      if c.verdict == "显著")
    assert_states(CODE, "平均后的 BLEU 在 " + words(full, "avg-beam4-lp", "beam4-lp"))
    assert_states(CODE, "种子 1 上平均后反而低了 " + f"{-avg_full[1][0].difference:.2f} BLEU")
    assert_states(CODE, "这份差都不显著（" + words(early, "beam4", "greedy"))
    # the reader page's example: beam search above greedy on every seed at 300 steps, significant on none
    assert decoding(early, "greedy", "beam4").verdict == "一致"
    assert not any(c.verdict == "显著" for c, _ in ch09_decoding.sentence_level(early, "beam4", "greedy"))
    assert_states("reading-experiments.md", "300步时束搜索在8个种子上都高于贪心（「一致」），但在任何一个种子的150句测试集上都不显著")
    assert_states(CODE, "每个种子内都不显著（" + words(early, "beam4-lp", "beam4"))
    assert_states(CODE, "在各自的测试集上显著（" + words(early, "avg-beam4-lp", "beam4-lp"))
    assert words(early, "avg-beam4-lp", "beam4-lp").startswith("8 个种子中 4 个显著（显著的差都为负）")   # 「一半」
    for b, a, _ in ch09_decoding.COMPARISONS[:3]:
        assert all(same for _, same in ch09_decoding.sentence_level(long, b, a))      # 「三种解码逐句相同」
    assert_states(CODE, "三种解码在每个种子上逐句相同")



@pytest.mark.slow  # trains a tiny model and decodes with beam search
def test_tiny_smoke_run(tmp_path):
    out = tmp_path / "toy.json"
    assert toy.main(["--preset", "tiny", "--out", str(out)]) == 0
    data = load_results(out)
    assert data["preset"] == "tiny" and len(data["runs"]) == 1


def test_renderer_writes_every_file(tmp_path, full):
    data = [{**full, "_file": "results/toy-translation.json"}]
    ch09_decoding.render_table(data, tmp_path)
    ch09_decoding.render_averaging_table(data, tmp_path)
    ch09_decoding.render_paired_table(data, tmp_path)
    table = (tmp_path / "toy-translation.md").read_text(encoding="utf-8")
    assert "| 贪心 | 98.25（97.10–99.37） |" in table
    averaging = (tmp_path / "toy-translation-averaging.md").read_text(encoding="utf-8")
    assert "| 0 | 0.097 → 0.068 |" in averaging
    paired = (tmp_path / "toy-translation-paired.md").read_text(encoding="utf-8")
    assert "| 600 | 平均 − 最后（束 4，α=0.6） | +1.96（p=0.002，显著） | −0.66（p=0.107） | +1.35（p=0.009，显著） |" in paired
    ch09_decoding.render_table([], tmp_path)
    ch09_decoding.render_paired_table([], tmp_path)
    assert "尚无测量结果" in (tmp_path / "toy-translation.md").read_text(encoding="utf-8")
    assert "尚无测量结果" in (tmp_path / "toy-translation-paired.md").read_text(encoding="utf-8")
