"""Chapter 09's experiment: the committed toy translation results against the thresholds stated on the page,
a tiny smoke run into tmp_path, the task's grammar, and the renderer."""

from __future__ import annotations

from pathlib import Path

import pytest

from sitebuild.generate.render import ch09_decoding
from snippets.decoding import corpus_bleu
from snippets.experiments import toy_translation as toy
from snippets.results import load_results
from snippets.transformer import Transformer
from tests.support.committed import committed_results
from tests.support.pages import assert_states, chapter

CH09 = chapter("09")
CODE = CH09 + "code.md"
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
                   title="玩具翻译：600 步时解码方式几乎没有差别",
                   text="600 步、3 个种子、测试集 150 句：本章的 BLEU 与 sacreBLEU 对每个种子、每种解码相差 < 0.01；"
                        "贪心的均值 98.42，束宽 4（α = 0 与 0.6）的均值与它相差 < 0.1，小于种子之间的差别；"
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


@pytest.mark.claim("ch09-toy-averaging", paper="§6.1", results="results/toy-translation.json",
                   title="玩具翻译：检查点平均",
                   text="600 步、3 个种子：平均最后 5 个检查点在每个种子上都降低了测试集交叉熵；"
                        "束宽 4、α = 0.6 的 BLEU 在 3 个种子中的 2 个上升、1 个下降")
def test_checkpoint_averaging_results(full):
    assert full["config"]["average_k"] == 5
    for r in full["runs"]:
        assert r["test_loss"]["averaged"] < r["test_loss"]["last"]
    up = [r["methods"]["avg-beam4-lp"]["bleu"] > r["methods"]["beam4-lp"]["bleu"] for r in full["runs"]]
    assert sum(up) == 2 and len(up) == 3
    assert_states(CODE, "每个种子上都降低了测试集交叉熵", "3个种子中的2个上升")


@pytest.mark.claim("ch09-toy-budgets", paper="§6.1", results="results/toy-translation-early.json",
                   title="玩具翻译：训练预算不同，读法不同",
                   text="只改训练步数（300、600、1800，3 个种子）：300 步时束宽 4 在每个种子上都高于贪心（+0.94 到 +1.40），"
                        "α = 0.6 在每个种子上都不低于 α = 0，检查点平均在每个种子上都升高交叉熵、降低 BLEU；"
                        "1800 步时五种方法都 ≥ 99.87，平均检查点的两种在每个种子上都是 100，平均在每个种子上都降低交叉熵")
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
        assert r["test_loss"]["averaged"] < r["test_loss"]["last"]
    assert_states(CODE, "贪心89.12BLEU", "+0.94到+1.40BLEU", "不低于99.87BLEU")


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
