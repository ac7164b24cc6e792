"""Chapter 10's experiment: the committed (B)/(C)/(D) toy sweep against the readings on the page, the renderer,
and a tiny smoke run into tmp_path."""

from __future__ import annotations

from pathlib import Path

import pytest

from sitebuild.generate.render import ch10_variations
from snippets.experiments import model_variations as mv
from snippets.experiments import training_recipe as recipe
from snippets.results import load_results
from snippets.stats import compare_seeds, describe
from snippets.transformer import Transformer, count_parameters
from tests.support.committed import committed_results
from tests.support.pages import assert_states, chapter
from tests.support.verdicts import assert_reading

CODE = chapter("10") + "code.md"
QUESTIONS = chapter("10") + "questions.md"
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


def compare(data: dict, a: str, b: str, a_where: str = "eval") -> "SeedComparison":  # noqa: F821
    """b − a in evaluation perplexity on the same seeds (snippets.stats.compare_seeds).

    a_where="train_eval": a is the same run's training-set perplexity (the over-fitting gap)."""
    pa = {r["seed"]: r[a_where]["perplexity"] for r in data["runs"] if r["variant"] == a}
    pb = ppl(data, b)
    seeds = sorted(pa)
    assert seeds == sorted(pb)
    return compare_seeds([pa[s] for s in seeds], [pb[s] for s in seeds], seeds)


def said(c) -> str:
    return describe(c, "", digits=2)


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
                   text="300 步、2 个种子：d_k 16 → 4 的评估集困惑度均值 2.83 → 5.06，两个种子同向，但「不足以下结论」"
                        "（2 个种子的 t 区间很宽）；900 步时均值 1.31 与 1.19，也「不足以下结论」；参数 168,192 → 130,752")
def test_toy_dk(full):
    c = compare(full, "base", "dk-4")
    assert (c.n, c.n_agree, c.verdict) == (2, 2, "不足以下结论")
    assert_reading(CODE, "两个种子同向，但 2 个种子下定不下来", c, stated=said(c))
    assert_reading(QUESTIONS, "玩具实验里 $d_k$ 16→4 的困惑度均值", c, stated=said(c))
    late = compare(committed(LONG, "long"), "base", "dk-4")
    assert late.verdict == "不足以下结论"
    assert_reading(CODE, "两者的均值是 1.31 与 1.19", late, stated=said(late))
    b, d = summary(full, "base"), summary(full, "dk-4")
    assert (round(b["perplexity_mean"], 2), round(d["perplexity_mean"], 2)) == (2.83, 5.06)
    assert (round(b["perplexity_min"], 2), round(b["perplexity_max"], 2)) == (2.66, 3.01)
    assert (round(d["perplexity_min"], 2), round(d["perplexity_max"], 2)) == (4.39, 5.73)
    assert_states(CODE, "均值2.83→5.06，两个种子同向", "168192减到130752", "差0.35（2.66与3.01）")


@pytest.mark.claim("ch10-toy-size", paper="§6.2 表 3 (C)", results="results/model-variations.json",
                   title="玩具 (C)：300 步时宽度与深度都定不下来",
                   text="300 步、2 个种子：评估集困惑度均值 基线 2.83、d 64→32 3.63、d 64→128 4.62（d_ff 随之改）、层 2→4 3.62；"
                        "三者与基线都「不足以下结论」（只差舍入的上一版文件里层 2→4 是「一致」）；"
                        "第 08 章同一基线练到 1600 步时困惑度是 1.13")
def test_toy_size(full):
    for variant, mean in (("d-32", 3.63), ("d-128", 4.62), ("layers-4", 3.62)):
        assert round(summary(full, variant)["perplexity_mean"], 2) == mean
    deeper, narrow, wide = compare(full, "base", "layers-4"), compare(full, "base", "d-32"), compare(full, "base", "d-128")
    assert deeper.verdict == narrow.verdict == wide.verdict == "不足以下结论"
    for page, fragment in ((CODE, "层数加到 4 的困惑度 2 个种子分不出与基线的高低"), (QUESTIONS, "300 步时层数加到 4 的均值在基线之上")):
        assert_reading(page, fragment, deeper, stated=said(deeper))
    for page, fragment in ((CODE, "分不出它们与基线的高低"), (QUESTIONS, "的均值也在基线之上，但 2 个种子分不出高低")):
        assert_reading(page, fragment, narrow, stated=said(narrow))
        assert_reading(page, fragment, wide, stated=said(wide))
    # 玩具的 (C) 宽度同时改了 d_ff（表 3 的 d 行不改），页面与图的替代文字都说明了
    assert [summary(full, v)["params"] for v in ("d-32", "d-128")] == [43_136, 664_064]
    assert_states(CODE, "d_{ff}随之按同一比例改成64/256", "(C)d64→32、64→128（d_ff随之64、256）")
    long08 = load_results(ROOT / "results" / recipe.LONG_OUT)
    (paper,) = [s for s in long08["summary"] if s["variant"] == "paper"]
    assert long08["config"]["steps"] == 1600 and round(paper["perplexity_mean"], 2) == 1.13
    assert_states(CODE, "基线2.83，d减到32是3.63，d加到128是4.62，层数加到4是3.62", "困惑度降到1.13")


@pytest.mark.claim("ch10-toy-dropout", paper="§6.2 表 3 (D)", results="results/model-variations.json",
                   title="玩具 (D)：100 对数据时过拟合，dropout 0.1 在那里更低；1000 对时去掉 dropout 更低",
                   text="300 步、2 个种子：1000 对训练数据时训练与评估困惑度只差约 0.1，去掉 dropout 后 2.83 → 2.26，2 个种子上都更低"
                        "（「一致」）；100 对时不用 dropout 训练 1.12、评估 4.87，评估在 2 个种子上都更高（「一致」）；dropout 0.1 是 3.84、"
                        "在 2 个种子上都比 0 更低（「一致」），0.3 是 4.23，0.1 与 0.3「不足以下结论」；只差舍入的上一版文件里去掉 dropout "
                        "与 0.1 对 0 都是「不足以下结论」")
def test_toy_dropout(full):
    drop0 = compare(full, "base", "drop-0")
    gap = compare(full, "small-drop-0", "small-drop-0", a_where="train_eval")
    helps, vs_03 = compare(full, "small-drop-0", "small-drop-0.1"), compare(full, "small-drop-0.3", "small-drop-0.1")
    assert [(c.verdict, c.sign) for c in (drop0, helps, gap)] == [("一致", -1), ("一致", -1), ("一致", 1)]
    assert vs_03.verdict == "不足以下结论"
    assert_reading(CODE, "去掉 dropout 后评估困惑度均值 2.83 → 2.26", drop0, stated=said(drop0))
    assert_reading(CODE, "评估困惑度在 2 个种子上都比训练困惑度更高", gap, stated=said(gap))
    assert_reading(CODE, "dropout 0.1 的评估困惑度在 2 个种子上都比 0 更低", helps, stated=said(helps))
    assert_reading(CODE, "2 个种子分不出 0.1 与 0.3 的高低", vs_03, stated=said(vs_03))
    assert_reading(QUESTIONS, "去掉 dropout 后评估困惑度在 2 个种子上都更低", drop0, stated=said(drop0))
    assert_reading(QUESTIONS, "评估困惑度在 2 个种子上都比训练困惑度更高", gap, stated=said(gap))
    assert_reading(QUESTIONS, "它的评估困惑度在 2 个种子上都比 0 更低", helps, stated=said(helps))
    assert abs(summary(full, "base")["gap_mean"]) < 0.15 and abs(summary(full, "drop-0")["gap_mean"]) < 0.15
    assert round(summary(full, "drop-0")["perplexity_mean"], 2) == 2.26
    s0 = summary(full, "small-drop-0")
    assert (round(s0["train_perplexity_mean"], 2), round(s0["perplexity_mean"], 2)) == (1.12, 4.87)
    assert round(summary(full, "small-drop-0.1")["perplexity_mean"], 2) == 3.84
    assert round(summary(full, "small-drop-0.3")["perplexity_mean"], 2) == 4.23
    assert_states(CODE, "2.83→2.26", "训练困惑度1.12，评估4.87", "dropout0.1的评估困惑度均值是3.84，0.3是4.23")


def test_renderer_writes_every_file(tmp_path, full):
    data = [{**full, "_file": "results/model-variations.json"}]
    ch10_variations.render_sweep_table(data, tmp_path)
    table = (tmp_path / "ch10-variations.md").read_text(encoding="utf-8")
    assert "| 基线 | 168,192 | 2.835（2.662–3.007） |" in table
    # the toy (C) width also moved d_ff: the table and the figure's labels say so, read from the results file
    assert "| (C) d 64→32（d_ff 64） | 43,136 |" in table and "| (C) d 64→128（d_ff 256） | 664,064 |" in table
    assert "| (C) 层 2→4 | " in table and "(C) 层 2→4（" not in table
    ch10_variations.render_sweep_figure(data, tmp_path)
    assert (tmp_path / "ch10-variations.svg").stat().st_size > 1000
    svg = (tmp_path / "ch10-variations.svg").read_text(encoding="utf-8")
    assert "d_ff 64" in svg and "d_ff 256" in svg
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
                   text="900 步、同样 2 个种子：基线、d_k = 4、d = 32、d = 128 的评估集困惑度均值 1.31、1.19、1.28、1.17，与基线之差小于"
                        "基线两个种子之差（1.15 与 1.48），与基线比都「不足以下结论」；4 层均值 1.29，也「不足以下结论」；d = 32 与 d = 128 "
                        "的参数差 15 倍，d = 128 在 2 个种子上都更低（「一致」，上一版只差舍入的文件里「不足以下结论」）")
def test_toy_long(full):
    long = committed(LONG, "long")
    assert long["config"]["steps"] == 3 * full["config"]["steps"] == 900
    assert long["config"]["seeds"] == full["config"]["seeds"]
    means = {s["variant"]: round(s["perplexity_mean"], 2) for s in long["summary"]}
    assert means == {"base": 1.31, "dk-4": 1.19, "d-32": 1.28, "d-128": 1.17, "layers-4": 1.29}
    base = ppl(long, "base")
    assert (round(base[0], 2), round(base[1], 2)) == (1.15, 1.48)
    spread = max(base.values()) - min(base.values())
    for variant in ("dk-4", "d-32", "d-128", "layers-4"):
        assert abs(summary(long, variant)["perplexity_mean"] - summary(long, "base")["perplexity_mean"]) < spread
    same = [compare(long, "base", v) for v in ("dk-4", "d-32", "d-128")]
    deeper, width = compare(long, "base", "layers-4"), compare(long, "d-32", "d-128")
    assert [c.verdict for c in same + [deeper]] == ["不足以下结论"] * 4 and (width.verdict, width.sign) == ("一致", -1)
    for c in same:
        assert_reading(CODE, "2 个种子分不出这三个变体与基线的高低", c, stated=said(c))
    assert_reading(CODE, "4 层的模型均值 1.29", deeper, stated=said(deeper))
    assert_reading(CODE, "的在 2 个种子上都更低", width, stated=said(width))
    small, wide = summary(long, "d-32")["params"], summary(long, "d-128")["params"]
    assert (small, wide) == (43_136, 664_064) and round(wide / small) == 15
    assert_states(CODE, "1.31、1.19、1.28、1.17", "（1.15与1.48）", "均值1.29", "15倍", "43136与664064", "均值是1.28与1.17")
