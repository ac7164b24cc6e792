"""Chapter 10's experiment: the committed (B)/(C)/(D) toy sweep against the readings on the page, the renderer,
and a tiny smoke run into tmp_path."""

from __future__ import annotations

from pathlib import Path

import pytest

from sitebuild.generate.render import ch10_variations
from snippets.experiments import model_variations as mv
from snippets.experiments import training_recipe as recipe
from snippets.results import load_results
from snippets.transformer import Transformer, count_parameters
from tests.support.committed import committed_results
from tests.support.pages import assert_states, chapter

CODE = chapter("10") + "code.md"
ROOT = Path(__file__).resolve().parents[2]
FULL = ROOT / "results" / "model-variations.json"
LONG = ROOT / "results" / mv.LONG_OUT


def committed(path: Path, preset: str) -> dict:
    return committed_results(path, mv, preset)


@pytest.fixture(scope="module")
def full() -> dict:
    return committed(FULL, "full")


def ppl(data: dict, variant: str) -> dict[int, float]:
    """{seed: evaluation perplexity} of one variant."""
    return {r["seed"]: r["eval"]["perplexity"] for r in data["runs"] if r["variant"] == variant}


def summary(data: dict, variant: str) -> dict:
    (s,) = [x for x in data["summary"] if x["variant"] == variant]
    return s


def test_full_file_is_the_sweep_the_page_describes(full):
    assert full["config"]["steps"] == 300 and full["config"]["seeds"] == [0, 1]
    assert [s["variant"] for s in full["summary"]] == mv.FULL_VARIANTS
    for s in full["summary"]:
        values = list(ppl(full, s["variant"]).values())
        assert len(values) == 2 and s["perplexity_min"] == min(values)
    # 参数量是读者模型数出来的：基线 168,192，d_k = 4 时 130,752
    assert summary(full, "base")["params"] == count_parameters(Transformer(**recipe.MODEL, max_len=64)) == 168_192
    assert summary(full, "dk-4")["params"] == 130_752
    assert summary(full, "small-drop-0")["n_train"] == 100 and summary(full, "base")["n_train"] == 1000


@pytest.mark.claim("ch10-toy-dk", paper="§6.2 表 3 (B)", results="results/model-variations.json",
                   title="玩具 (B)：减小 d_k",
                   text="300 步、2 个种子：d_k 16 → 4 的评估集困惑度在两个种子上都比基线差，均值 2.82 → 5.05，范围 4.41–5.70 "
                        "与基线的 2.59–3.04 不重叠；参数 168,192 → 130,752")
def test_toy_dk(full):
    base, dk = ppl(full, "base"), ppl(full, "dk-4")
    assert all(dk[s] > base[s] for s in base)
    assert max(base.values()) < min(dk.values())
    b, d = summary(full, "base"), summary(full, "dk-4")
    assert (round(b["perplexity_mean"], 2), round(d["perplexity_mean"], 2)) == (2.82, 5.05)
    assert (round(b["perplexity_min"], 2), round(b["perplexity_max"], 2)) == (2.59, 3.04)
    assert (round(d["perplexity_min"], 2), round(d["perplexity_max"], 2)) == (4.41, 5.70)
    assert_states(CODE, "均值2.82→5.05，范围4.41–5.70与基线的2.59–3.04不重叠", "168192减到130752",
                  "差0.45（2.59与3.04）")


@pytest.mark.claim("ch10-toy-size", paper="§6.2 表 3 (C)", results="results/model-variations.json",
                   title="玩具 (C)：300 步时基线最好",
                   text="300 步、2 个种子：d 64→32（3.62）、d 64→128（4.68）、层 2→4（3.52）在每个种子上的评估集困惑度都比基线（2.82）差；"
                        "第 08 章同一基线练到 1600 步时困惑度是 1.14")
def test_toy_size(full):
    base = ppl(full, "base")
    for variant, mean in (("d-32", 3.62), ("d-128", 4.68), ("layers-4", 3.52)):
        assert all(ppl(full, variant)[s] > base[s] for s in base), variant
        assert round(summary(full, variant)["perplexity_mean"], 2) == mean
    long08 = load_results(ROOT / "results" / recipe.LONG_OUT)
    (paper,) = [s for s in long08["summary"] if s["variant"] == "paper"]
    assert long08["config"]["steps"] == 1600 and round(paper["perplexity_mean"], 2) == 1.14
    assert_states(CODE, "d减到32是3.62，d加到128是4.68，层数加到4是3.52", "困惑度降到1.14")


@pytest.mark.claim("ch10-toy-dropout", paper="§6.2 表 3 (D)", results="results/model-variations.json",
                   title="玩具 (D)：dropout 只在过拟合时有用",
                   text="300 步、2 个种子：1000 对训练数据时训练与评估困惑度只差约 0.1，去掉 dropout 更好（2.82 → 2.38，两个种子都是）；"
                        "100 对时不用 dropout 训练 1.12、评估 4.95，dropout 0.1 是 3.81，0.3 是 4.21，两个种子上都是 0.1 < 0.3 < 0")
def test_toy_dropout(full):
    base, drop0 = ppl(full, "base"), ppl(full, "drop-0")
    assert all(drop0[s] < base[s] for s in base)
    assert abs(summary(full, "base")["gap_mean"]) < 0.15 and abs(summary(full, "drop-0")["gap_mean"]) < 0.15
    assert round(summary(full, "drop-0")["perplexity_mean"], 2) == 2.38
    p0, p1, p3 = ppl(full, "small-drop-0"), ppl(full, "small-drop-0.1"), ppl(full, "small-drop-0.3")
    assert all(p1[s] < p3[s] < p0[s] for s in p0)
    s0 = summary(full, "small-drop-0")
    assert (round(s0["train_perplexity_mean"], 2), round(s0["perplexity_mean"], 2)) == (1.12, 4.95)
    assert round(summary(full, "small-drop-0.1")["perplexity_mean"], 2) == 3.81
    assert round(summary(full, "small-drop-0.3")["perplexity_mean"], 2) == 4.21
    assert_states(CODE, "2.82→2.38", "训练困惑度1.12，评估4.95", "dropout0.1把评估困惑度降到3.81，0.3是4.21")


def test_renderer_writes_every_file(tmp_path, full):
    data = [{**full, "_file": "results/model-variations.json"}]
    ch10_variations.render_sweep_table(data, tmp_path)
    table = (tmp_path / "ch10-variations.md").read_text(encoding="utf-8")
    assert "| 基线 | 168,192 | 2.816（2.591–3.041） |" in table
    ch10_variations.render_sweep_figure(data, tmp_path)
    assert (tmp_path / "ch10-variations.svg").stat().st_size > 1000
    ch10_variations.render_sweep_table([], tmp_path)
    assert "尚无测量结果" in (tmp_path / "ch10-variations.md").read_text(encoding="utf-8")


@pytest.mark.slow  # trains three tiny models
def test_tiny_smoke_run(tmp_path):
    out = tmp_path / "mv.json"
    assert mv.main(["--preset", "tiny", "--out", str(out)]) == 0
    data = load_results(out)
    assert data["preset"] == "tiny" and [r["variant"] for r in data["runs"]] == ["base", "dk-4", "small-drop-0"]
    assert data["runs"][1]["model"]["d_k"] == 4


@pytest.mark.claim("ch10-toy-long", paper="§6.2 表 3 (B)(C)", results="results/model-variations-long.json",
                   title="玩具 (B)(C)：多练 3 倍",
                   text="900 步、同样 2 个种子：基线、d_k = 4、d = 32、d = 128 的评估集困惑度均值 1.27、1.28、1.30、1.30，彼此之差小于基线两个种子之差"
                        "（1.13 与 1.41）；d_k = 4 在种子 1 上好于基线；只有 4 层在两个种子上都比基线差（均值 1.54）；d = 32 与 d = 128 的参数差 15 倍")
def test_toy_long(full):
    long = committed(LONG, "long")
    assert long["config"]["steps"] == 3 * full["config"]["steps"] == 900
    assert long["config"]["seeds"] == full["config"]["seeds"]
    means = {s["variant"]: round(s["perplexity_mean"], 2) for s in long["summary"]}
    assert means == {"base": 1.27, "dk-4": 1.28, "d-32": 1.30, "d-128": 1.30, "layers-4": 1.54}
    base = ppl(long, "base")
    assert (round(base[0], 2), round(base[1], 2)) == (1.13, 1.41)
    spread = max(base.values()) - min(base.values())
    for variant in ("dk-4", "d-32", "d-128"):
        assert abs(summary(long, variant)["perplexity_mean"] - summary(long, "base")["perplexity_mean"]) < spread
    assert ppl(long, "dk-4")[1] < base[1]
    assert all(ppl(long, "layers-4")[s] > base[s] for s in base)
    small, wide = summary(long, "d-32")["params"], summary(long, "d-128")["params"]
    assert (small, wide) == (43_136, 664_064) and round(wide / small) == 15
    assert_states(CODE, "1.27、1.28、1.30、1.30", "（1.13与1.41）", "均值1.54", "15倍", "43136与664064")
