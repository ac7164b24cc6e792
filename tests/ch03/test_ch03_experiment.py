"""The additive-vs-dot experiment: the committed results file (thresholds stated on the page),
a tiny smoke run into tmp_path, and the renderer.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sitebuild.generate.render import ch03_additive
from snippets.experiments import additive_vs_dot
from snippets.results import ResultsError, load_results, write_results

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "results" / "additive-vs-dot.json"


@pytest.fixture(scope="module")
def committed() -> dict:
    data = load_results(RESULTS)  # validates against results/schema/additive-vs-dot.schema.json
    assert data["kind"] == additive_vs_dot.KIND and data["preset"] == "full"
    return data


def summary(data: dict) -> dict[tuple[str, int], dict]:
    return {(s["mechanism"], s["d_k"]): s for s in data["summary"]}


def test_committed_file_covers_every_mechanism_dk_and_seed(committed):
    cfg = committed["config"]
    assert cfg["d_k_values"] == [4, 16, 64, 256] and len(cfg["seeds"]) >= 3
    keys = {(r["mechanism"], r["d_k"], r["seed"]) for r in committed["runs"]}
    assert keys == {(m, d, s) for m in cfg["mechanisms"] for d in cfg["d_k_values"] for s in cfg["seeds"]}
    for s in committed["summary"]:  # the summary is the mean of the runs it names
        acc = [r["final"]["accuracy"] for r in committed["runs"]
               if (r["mechanism"], r["d_k"]) == (s["mechanism"], s["d_k"])]
        assert abs(s["accuracy_mean"] - sum(acc) / len(acc)) < 1e-12


@pytest.mark.claim("ch03-init-saturation-measured", paper="§3.2.1", results="results/additive-vs-dot.json",
                   text="实验里初始化时，不缩放点积的 logits 标准差随 d_k 增长（d_k = 256 时 > 10），初始最大注意力权重 > 0.8；缩放后标准差在 0.8–1.2 之间，最大权重 < 0.4")
def test_init_logit_std_grows_without_scaling(committed):
    s = summary(committed)
    stds = [s[("dot-unscaled", d)]["init_logit_std_mean"] for d in (4, 16, 64, 256)]
    assert stds == sorted(stds) and stds[-1] > 10
    assert s[("dot-unscaled", 256)]["init_max_weight_mean"] > 0.8
    for d in (4, 16, 64, 256):
        assert 0.8 < s[("dot-scaled", d)]["init_logit_std_mean"] < 1.2
        assert s[("dot-scaled", d)]["init_max_weight_mean"] < 0.4


@pytest.mark.claim("ch03-additive-vs-dot-result", paper="§3.2.1", results="results/additive-vs-dot.json",
                   text="d_k ≥ 64 时训练结束的准确率：加性注意力每个种子都 ≥ 99.9%，不缩放点积每个种子都低于它，但差距不到 1 个百分点；缩放点积的均值高于不缩放点积")
def test_committed_result_additive_vs_dot(committed):
    s = summary(committed)
    for d in (64, 256):
        add, raw, scaled = s[("additive", d)], s[("dot-unscaled", d)], s[("dot-scaled", d)]
        assert add["accuracy_min"] >= 0.999
        assert raw["accuracy_max"] < add["accuracy_min"]
        assert add["accuracy_mean"] - raw["accuracy_mean"] < 0.01
        assert scaled["accuracy_mean"] > raw["accuracy_mean"]


@pytest.mark.claim("ch03-small-dk-not-similar", paper="§3.2.1", results="results/additive-vs-dot.json",
                   text="「d_k 小时两者表现相近」在查表任务上不成立：d_k = 4 时加性注意力的最终准确率比两种点积都高 20 个百分点以上（点积受 d_k 维双线性形式的秩限制）")
def test_small_dk_additive_far_ahead(committed):
    s = summary(committed)
    for mech in ("dot-unscaled", "dot-scaled"):
        assert s[("additive", 4)]["accuracy_mean"] > s[(mech, 4)]["accuracy_mean"] + 0.20
        assert s[(mech, 4)]["accuracy_mean"] < 0.7


@pytest.mark.claim("ch03-early-training", paper="§3.2.1", results="results/additive-vs-dot.json",
                   text="训练早期排名反过来：d_k = 16 和 64 时，第 200 步两种点积的准确率都 ≥ 98%，加性注意力还低于 90%")
def test_dot_product_learns_faster_early(committed):
    s = summary(committed)
    for d in (16, 64):
        assert s[("dot-unscaled", d)]["early_accuracy_mean"] >= 0.98
        assert s[("dot-scaled", d)]["early_accuracy_mean"] >= 0.98
        assert s[("additive", d)]["early_accuracy_mean"] < 0.90


@pytest.mark.claim("ch03-additive-nobias", paper="§3.2.1", results="results/additive-vs-dot.json",
                   text="隐藏层不带偏置（Bahdanau 原式）的加性注意力在每个 d_k 上的最终准确率都低于 60%；带偏置时 d_k ≥ 16 就 ≥ 95%")
def test_additive_without_bias_cannot_match(committed):
    s = summary(committed)
    for d in (4, 16, 64, 256):
        assert s[("additive-nobias", d)]["accuracy_mean"] < 0.60
    for d in (16, 64, 256):
        assert s[("additive", d)]["accuracy_mean"] >= 0.95


@pytest.mark.claim("ch03-after-training-std", paper="§3.2.1", results="results/additive-vs-dot.json",
                   text="「除以 √d_k 能让方差在训练后仍保持 1」不成立：训练后缩放点积的 logits 标准差在 d_k ≥ 16 时都大于 2")
def test_scaled_logit_std_is_not_one_after_training(committed):
    s = summary(committed)
    for d in (16, 64, 256):
        assert s[("dot-scaled", d)]["final_logit_std_mean"] > 2.0
        assert s[("dot-scaled", d)]["final_logit_std_mean"] > 1.5 * s[("dot-scaled", d)]["init_logit_std_mean"]


@pytest.mark.slow
def test_tiny_smoke_run_writes_a_valid_file_and_renders(tmp_path):
    out = tmp_path / "avd.json"
    assert additive_vs_dot.main(["--preset", "tiny", "--out", str(out)]) == 0
    data = load_results(out)
    assert data["preset"] == "tiny" and len(data["runs"]) == 2 * len(additive_vs_dot.MECHANISMS)
    assert data["provenance"]["command"].startswith("python -m snippets.experiments.additive_vs_dot")
    full = dict(data, preset="quick")  # the renderer skips tiny files: present it as quick
    ch03_additive.render_figure([full], tmp_path)
    ch03_additive.render_table([full], tmp_path)
    assert (tmp_path / "additive-vs-dot.svg").read_text().startswith("<?xml")
    table = (tmp_path / "additive-vs-dot.md").read_text()
    assert "点积，除以 √d_k" in table and "数据文件" in table


def test_invalid_results_are_not_written(tmp_path):
    data = json.loads(RESULTS.read_text(encoding="utf-8"))
    data["summary"][0]["accuracy_mean"] = 1.5
    with pytest.raises(ResultsError, match="accuracy_mean"):
        write_results(data, tmp_path / "bad.json")
    assert not (tmp_path / "bad.json").exists()


def test_renderer_writes_placeholders_without_results(tmp_path):
    ch03_additive.render_figure([], tmp_path)
    ch03_additive.render_table([], tmp_path)
    assert "尚无测量结果" in (tmp_path / "additive-vs-dot.md").read_text(encoding="utf-8")
    assert "尚无测量结果" in (tmp_path / "additive-vs-dot.svg").read_text(encoding="utf-8")
