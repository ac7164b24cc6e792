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
    """BLEU of method b minus method a, paired by seed (corpus BLEU per seed: the hypotheses are not stored,
    so a sentence-level bleu_paired_bootstrap cannot be run on the committed files)."""
    return compare_seeds(bleu(data, a), bleu(data, b), seeds=seeds(data))


def averaging_ce(data: dict):
    """Test cross-entropy of the averaged checkpoint minus the last one, paired by seed."""
    return compare_seeds([r["test_loss"]["last"] for r in data["runs"]],
                         [r["test_loss"]["averaged"] for r in data["runs"]], seeds=seeds(data))


def gain_change(early: dict, later: dict, method: str):
    """The gain of `method` over greedy at the later budget minus the gain at 300 steps, paired by seed."""
    assert seeds(early) == seeds(later)
    gain = lambda d: [b - g for b, g in zip(bleu(d, method), bleu(d, "greedy"))]  # noqa: E731
    return compare_seeds(gain(early), gain(later), seeds=seeds(early))


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
                   text="600 步、3 个种子、测试集 150 句：本章的 BLEU 与 sacreBLEU 对每个种子、每种解码相差 < 0.01；"
                        "贪心的均值 98.42，束宽 4（α = 0 与 0.6）与贪心逐种子配对「不足以下结论」（均值相差 < 0.1）；"
                        "各方法的 c/r 都在 0.99–1.01 之间，没有短偏置")
def test_decoding_results(full):
    assert full["config"]["steps"] == 600 and len(full["config"]["seeds"]) == 3
    for r in full["runs"]:
        for m in r["methods"].values():
            assert abs(m["bleu"] - m["sacrebleu"]) < 0.01
            assert 0.99 <= m["length_ratio"] <= 1.01
    greedy = summary(full, "greedy")
    assert round(greedy["bleu_mean"], 2) == 98.42
    for method in ("beam4", "beam4-lp"):
        assert abs(summary(full, method)["bleu_mean"] - greedy["bleu_mean"]) < 0.1
    assert greedy["bleu_max"] - greedy["bleu_min"] > 0.5            # the seeds differ by more than the methods
    assert_states(CODE, "98.42", "相差不到0.1BLEU", "0.99–1.01")
    beam, beam_lp = decoding(full, "greedy", "beam4"), decoding(full, "greedy", "beam4-lp")
    assert (beam.n, beam.verdict, beam_lp.verdict) == (3, "不足以下结论", "不足以下结论")
    assert_reading(CODE, "3 个种子分不出束宽 4（$\\alpha=0$）与贪心的高低", beam, stated=bleu_words(beam))
    assert_reading(CODE, "的束搜索与贪心也分不出高低", beam_lp, stated=bleu_words(beam_lp))


@pytest.mark.claim("ch09-toy-averaging", paper="§6.1", results="results/toy-translation.json",
                   title="玩具翻译：检查点平均",
                   text="600 步、3 个种子：看不出平均最后 5 个检查点对测试集交叉熵的影响（3 个种子同向，区间含 0）；"
                        "对束宽 4、α = 0.6 的 BLEU 的影响也看不出（2 个种子上升、1 个下降）：都「不足以下结论」")
def test_checkpoint_averaging_results(full):
    assert full["config"]["average_k"] == 5
    ce = averaging_ce(full)
    assert (ce.n, ce.n_agree, ce.sign, ce.verdict) == (3, 3, -1, "不足以下结论")   # same sign, interval includes 0
    avg = decoding(full, "beam4-lp", "avg-beam4-lp")
    assert (avg.n_agree, avg.verdict) == (2, "不足以下结论")
    assert_reading(CODE, "看不出平均最后 5 个检查点对测试集交叉熵的影响", ce, stated=nats_words(ce))
    assert_reading(CODE, "的影响也看不出（", avg, stated=bleu_words(avg))
    assert_states(CODE, "种子1上的差（-0.0008nats）")
    assert round(ce.differences[1], 4) == -0.0008


@pytest.mark.claim("ch09-toy-budgets", paper="§6.1", results="results/toy-translation-early.json",
                   title="玩具翻译：训练预算不同，读法不同",
                   text="只改训练步数（300、600、1800，3 个种子）：300 步时束宽 4 的 BLEU 在 3 个种子上都高于贪心"
                        "（+0.94 到 +1.40，「一致」），α = 0.6 与 α = 0 分不出，检查点平均后交叉熵更高（「一致」）、"
                        "对 BLEU 的影响看不出；1800 步时五种方法都 ≥ 99.87，平均检查点的两种都是 100，看不出平均对交叉熵的影响；"
                        "束搜索相对贪心的增益 600、1800 步时比 300 步小（「一致」）")
def test_training_budgets(full):
    early, long = committed(EARLY, "early"), committed(LONG, "long")
    assert (early["config"]["steps"], full["config"]["steps"], long["config"]["steps"]) == (300, 600, 1800)
    assert early["config"]["seeds"] == full["config"]["seeds"] == long["config"]["seeds"]
    gains = []
    for r in early["runs"]:
        m = r["methods"]
        gains.append(m["beam4"]["bleu"] - m["greedy"]["bleu"])
        assert m["beam4-lp"]["bleu"] >= m["beam4"]["bleu"]
        assert r["test_loss"]["averaged"] > r["test_loss"]["last"]
        assert m["avg-greedy"]["bleu"] < m["greedy"]["bleu"] and m["avg-beam4-lp"]["bleu"] < m["beam4-lp"]["bleu"]
    assert (round(min(gains), 2), round(max(gains), 2)) == (0.94, 1.40)
    assert round(summary(early, "greedy")["bleu_mean"], 2) == 89.12
    for r in long["runs"]:
        assert all(m["bleu"] >= 99.87 for m in r["methods"].values())
        assert r["methods"]["avg-greedy"]["bleu"] == r["methods"]["avg-beam4-lp"]["bleu"] == pytest.approx(100)
    assert_states(CODE, "贪心89.12BLEU", "+0.94到+1.40BLEU", "不低于99.87BLEU")
    # each reading held to the helper's verdict on the committed files
    beam, lp = decoding(early, "greedy", "beam4"), decoding(early, "beam4", "beam4-lp")
    ce_early, avg_early = averaging_ce(early), decoding(early, "beam4-lp", "avg-beam4-lp")
    ce_long = averaging_ce(long)
    assert (beam.verdict, lp.verdict, ce_early.verdict, avg_early.verdict, ce_long.verdict) == (
        "一致", "不足以下结论", "一致", "不足以下结论", "不足以下结论")
    assert ce_early.sign == 1 and beam.sign == 1
    assert_reading(CODE, "个种子上束宽 4 的 BLEU 都高于贪心，逐种子高", beam, stated=bleu_words(beam))
    assert_reading(CODE, "这个预算下分不出高低", lp, stated=bleu_words(lp))
    assert_reading(CODE, "个种子上测试集交叉熵都更高", ce_early, stated=nats_words(ce_early))
    assert_reading(CODE, "的影响看不出（平均差", avg_early, stated=bleu_words(avg_early))
    assert_reading(CODE, "看不出平均对测试集交叉熵的影响", ce_long, stated=nats_words(ce_long))
    assert_reading(CODE, "时平均最后 5 个检查点后测试集交叉熵更高", ce_early, stated=nats_words(ce_early))
    assert_reading(QUESTIONS, "平均最后 5 个检查点后测试集交叉熵反而更高", ce_early, stated=nats_words(ce_early))
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
    table = (tmp_path / "toy-translation.md").read_text(encoding="utf-8")
    assert "| 贪心 | 98.42（98.00–98.88） |" in table
    averaging = (tmp_path / "toy-translation-averaging.md").read_text(encoding="utf-8")
    assert "| 0 | 0.093 → 0.067 |" in averaging
    ch09_decoding.render_table([], tmp_path)
    assert "尚无测量结果" in (tmp_path / "toy-translation.md").read_text(encoding="utf-8")
