"""Chapter 06's experiments: the committed results files against the thresholds stated on the page,
tiny smoke runs into tmp_path, and the renderers."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from sitebuild.generate.render import ch06_tokens
from snippets.experiments import embedding_scale, vocab_sweep
from snippets.results import load_results

ROOT = Path(__file__).resolve().parents[2]
SCALE = ROOT / "results" / "embedding-scale.json"
SWEEP = ROOT / "results" / "vocab-sweep.json"


@pytest.fixture(scope="module")
def scale() -> dict:
    data = load_results(SCALE)  # validates against results/schema/embedding-scale.schema.json
    assert data["kind"] == embedding_scale.KIND and data["preset"] == "full"
    return data


@pytest.fixture(scope="module")
def sweep() -> dict:
    data = load_results(SWEEP)
    assert data["kind"] == vocab_sweep.KIND and data["preset"] == "full"
    return data


def by_init(data: dict) -> dict[str, dict]:
    return {s["init"]: s for s in data["summary"]}


def test_scale_file_covers_every_init_and_seed(scale):
    cfg = scale["config"]
    assert set(cfg["inits"]) == set(embedding_scale.INITS) and len(cfg["seeds"]) >= 3
    assert {(r["init"], r["seed"]) for r in scale["runs"]} == {(i, s) for i in cfg["inits"] for s in cfg["seeds"]}
    for s in scale["summary"]:
        acc = [r["accuracy"] for r in scale["runs"] if r["init"] == s["init"]]
        assert s["accuracy_min"] == min(acc) and abs(s["accuracy_mean"] - sum(acc) / len(acc)) < 1e-12


@pytest.mark.claim("ch06-init-scale-measured", paper="§3.4", results="results/embedding-scale.json",
                   text="实验初始化时：N(0, 1) 乘 √d 的嵌入范数是位置编码的 10 倍以上，另两种在 1.2–1.7 倍；两种 N(0, 1) 的初始 logits 标准差 > 10，N(0, 1/d) < 3")
def test_init_scale_measured(scale):
    s = by_init(scale)
    d = scale["task"]["d_model"]
    assert s["unit"]["emb_pe_ratio_mean"] > 10 and abs(s["unit"]["emb_pe_ratio_mean"] / math.sqrt(2 * d) - 1) < 0.1
    for init in ("t2t", "unit-noscale"):
        assert 1.2 < s[init]["emb_pe_ratio_mean"] < 1.7
    assert s["unit"]["init_logit_std_mean"] > 10 and s["unit-noscale"]["init_logit_std_mean"] > 10
    assert s["t2t"]["init_logit_std_mean"] < 3


@pytest.mark.claim("ch06-init-scale-result", paper="§3.4", results="results/embedding-scale.json",
                   text="倒序任务 400 步：N(0, 1/d) 乘 √d 的每个种子贪心逐词准确率 ≥ 99%；N(0, 1) 乘 √d 与 N(0, 1) 不乘 √d 的每个种子都 < 40%")
def test_init_scale_result(scale):
    s = by_init(scale)
    assert s["t2t"]["accuracy_min"] >= 0.99
    assert s["unit"]["accuracy_max"] < 0.40 and s["unit-noscale"]["accuracy_max"] < 0.40


def test_sweep_agreement_in_the_committed_file(sweep):
    agree = {a["corpus"]: a for a in sweep["agreement"]}
    for a in agree.values():
        assert a["first_difference"] is None and a["ours"] == a["library"]
        assert a["same_tokens"] == a["round_trip"] == a["sentences"]
        assert a["vocab_size"] == a["base_size"] + a["ours"]
    assert agree["tiefree"]["tie_steps"] == 0 and agree["tiefree"]["ours"] == vocab_sweep.TIEFREE_MERGES
    assert agree["en"]["first_tie"] == 0 and agree["zh"]["tie_steps"] > 0


@pytest.mark.claim("ch06-vocab-tradeoff", paper="§5.1", results="results/vocab-sweep.json",
                   text="中英文两种语料、字符起步与字节级两种 BPE：词表越大，每句平均词元数越少（严格单调）")
def test_tokens_fall_as_vocabulary_grows(sweep):
    for s in sweep["sweeps"]:
        pts = sorted(s["points"], key=lambda p: p["merges"])
        for key, size in (("tokens_mean", "vocab_size"), ("byte_level_tokens_mean", "byte_level_vocab_size")):
            assert all(a[size] < b[size] and a[key] > b[key] for a, b in zip(pts, pts[1:]))


@pytest.mark.claim("ch06-zh-bytes", paper="§5.1", results="results/vocab-sweep.json",
                   text="没有合并时，中文每句的字节级词元数是按字切的 2.5–3 倍，英文两者相同；平行句子里英文按字符切的词元数是中文的 3 倍以上")
def test_chinese_bytes_and_characters(sweep):
    first = {s["lang"]: min(s["points"], key=lambda p: p["merges"]) for s in sweep["sweeps"]}
    zh, en = first["zh"], first["en"]
    assert zh["merges"] == en["merges"] == 0
    assert 2.5 < zh["byte_level_tokens_mean"] / zh["tokens_mean"] < 3.0
    assert en["byte_level_tokens_mean"] == en["tokens_mean"]
    assert en["tokens_mean"] > 3 * zh["tokens_mean"]
    text = vocab_sweep.read_corpus("zh")
    assert all(len(ch.encode("utf-8")) == 3 for ch in text if "\u4e00" <= ch <= "\u9fff")


@pytest.mark.slow
@pytest.mark.parametrize("module", [embedding_scale, vocab_sweep])
def test_tiny_smoke_run_writes_a_valid_file_and_renders(module, tmp_path):
    out = tmp_path / f"{module.KIND}.json"
    assert module.main(["--preset", "tiny", "--out", str(out)]) == 0
    data = load_results(out)
    assert data["preset"] == "tiny"
    shown = dict(data, preset="quick", _file=out.name)  # the renderers skip tiny files: present it as quick
    for fn in ch06_tokens.RENDERERS:
        fn([shown], tmp_path / "gen")
    assert len(list((tmp_path / "gen").iterdir())) >= 3


def test_renderers_write_placeholders_without_results(tmp_path):
    for fn in ch06_tokens.RENDERERS:
        fn([], tmp_path)
    assert "尚无测量结果" in (tmp_path / "vocab-sweep.md").read_text(encoding="utf-8")
    assert (tmp_path / "embedding-scale.svg").exists()
