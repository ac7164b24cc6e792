"""Chapter 07's experiments: the committed results files against the thresholds stated on the page,
tiny smoke runs into tmp_path, the model's pieces, and the renderer."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from sitebuild.generate.render import ch07_positional
from snippets.experiments import length_generalization as lg
from snippets.experiments import rope_scaling
from snippets.positional import rope_frequencies, scaled_rope_frequencies
from snippets.results import load_results
from tests.support.pages import assert_states, chapter

CH07 = chapter("07")
CODE = CH07 + "code.md"
ROOT = Path(__file__).resolve().parents[2]
LENGTH = ROOT / "results" / "length-generalization.json"
SCALING = ROOT / "results" / "rope-scaling.json"
LONG = ROOT / "results" / lg.LONG_OUT


@pytest.fixture(scope="module")
def length() -> dict:
    data = load_results(LENGTH)  # validates against results/schema/length-generalization.schema.json
    assert data["kind"] == lg.KIND and data["preset"] == "full"
    assert data["provenance"]["git"]["dirty"] is False
    return data


def summary(data: dict, encoding: str, n: int) -> dict:
    (row,) = [s for s in data["summary"] if s["encoding"] == encoding and s["length"] == n]
    return row


def test_length_file_covers_every_encoding_seed_and_length(length):
    cfg = length["config"]
    assert cfg["encodings"] == lg.ENCODINGS and len(cfg["seeds"]) >= 5
    assert cfg == {**lg.PRESETS["full"], "optimizer": cfg["optimizer"], "threads": 1}
    assert {(r["encoding"], r["seed"]) for r in length["runs"]} == {(e, s) for e in cfg["encodings"] for s in cfg["seeds"]}
    for r in length["runs"]:
        assert [e["length"] for e in r["eval"]] == cfg["eval_lens"]
    for s in length["summary"]:
        mine = [e for r in length["runs"] if r["encoding"] == s["encoding"] for e in r["eval"] if e["length"] == s["length"]]
        acc = [e["accuracy"] for e in mine]
        assert s["accuracy_min"] == min(acc) and abs(s["accuracy_mean"] - sum(acc) / len(acc)) < 1e-12
        if s["length"] > cfg["train_len"]:
            beyond = [e["accuracy_beyond"] for e in mine]
            assert s["beyond_min"] == min(beyond) and abs(s["beyond_mean"] - sum(beyond) / len(beyond)) < 1e-12


@pytest.mark.claim("ch07-in-range-equal", paper="§3.5; §6.2, 表 3 (E)", results="results/length-generalization.json",
                   title="训练长度内四种编码相同",
                   text="在训练长度 32 上，正弦、可学习、RoPE、ALiBi 每个种子的准确率都 ≥ 99.9%")
def test_in_range_accuracy_is_equal(length):
    train_len = length["config"]["train_len"]
    for enc in lg.ENCODINGS:
        assert summary(length, enc, train_len)["accuracy_min"] >= 0.999
    assert_states(CODE, "四种编码每个种子的准确率都不低于99.9%")


@pytest.mark.claim("ch07-learned-unseen-rows", paper="§3.5; 表 3 (E)", results="results/length-generalization.json",
                   title="可学习位置嵌入在训练长度之外从未被更新",
                   text="训练只用长度 32 时，可学习位置嵌入表第 32 行以后的每一行在每个种子里都与初始值逐位相同（梯度恒为 0），"
                        "训练用到的行则变了；超出训练长度的位置上均值都 < 10%")
def test_learned_rows_beyond_training_length_never_change(length):
    for r in (x for x in length["runs"] if x["encoding"] == "learned"):
        assert r["learned_unseen_rows_max_change"] == 0.0
        assert r["learned_seen_rows_max_change"] > 0.01
    for n in length["config"]["eval_lens"][1:]:
        assert summary(length, "learned", n)["beyond_mean"] < 0.10
    # 同一件事的直接证明：一次前向–反向，第 train_len 行起的梯度恰好是 0
    torch.manual_seed(0)
    model = lg.PositionLM("learned", 64, **lg.MODEL)
    x, y = lg.make_batch(4, 16, lg.MODEL["vocab_size"], torch.Generator().manual_seed(0))
    torch.nn.functional.cross_entropy(model(x)[:, 1:].reshape(-1, lg.MODEL["vocab_size"]), y.reshape(-1)).backward()
    assert model.pe.grad[16:].abs().max().item() == 0.0 and model.pe.grad[:16].abs().max().item() > 0


@pytest.mark.claim("ch07-extrapolation", paper="§3.5 (「may allow the model to extrapolate」)",
                   results="results/length-generalization.json", title="超出训练长度：四种编码的外推",
                   text="600 步、5 个种子、训练长度 32：超出训练长度的位置上，ALiBi 在长度 64–256 每个种子 ≥ 99.9%；"
                        "RoPE 在 64 上每个种子 > 90%，在 256 上 33%–59%；正弦在 64 上均值 13.5%，128、256 上 < 10%；"
                        "正弦与可学习都远低于 RoPE")
def test_extrapolation_results(length):
    lens = length["config"]["eval_lens"][1:]
    assert length["config"]["steps"] == 600 and len(length["config"]["seeds"]) == 5
    for n in lens:
        assert summary(length, "alibi", n)["beyond_min"] >= 0.999
        for enc in ("sinusoid", "learned"):
            assert summary(length, enc, n)["beyond_max"] < summary(length, "rope", n)["beyond_min"]
    assert summary(length, "rope", 64)["beyond_min"] > 0.90
    rope256 = summary(length, "rope", 256)
    assert round(100 * rope256["beyond_min"]) == 33 and round(100 * rope256["beyond_max"]) == 59
    assert round(100 * summary(length, "sinusoid", 64)["beyond_mean"], 1) == 13.5
    assert summary(length, "sinusoid", 128)["beyond_mean"] < 0.10 and summary(length, "sinusoid", 256)["beyond_mean"] < 0.10
    assert_states(CODE, "均值13.5%", "33%–59%", "90%以上")


@pytest.mark.claim("ch07-long-run", paper="§3.5 (「may allow the model to extrapolate」)",
                   results="results/length-generalization-long.json", title="再多练 4 倍",
                   text="只把步数从 600 改成 2400（正弦与 RoPE，同样 5 个种子）：正弦在长度 64、128、256 上的均值都升高"
                        "（64 上 21.1%），但每个长度上正弦的每个种子仍低于 RoPE 的每个种子；RoPE 在 256 上从 42.8% 降到 35.2%")
def test_four_times_the_training(length):
    long = load_results(LONG)
    assert long["kind"] == lg.KIND and long["preset"] == "long" and long["provenance"]["git"]["dirty"] is False
    assert long["config"] == {**lg.PRESETS["long"], "optimizer": long["config"]["optimizer"], "threads": 1}
    assert long["config"]["steps"] == 4 * length["config"]["steps"]
    assert long["config"]["seeds"] == length["config"]["seeds"]
    for n in long["config"]["eval_lens"][1:]:
        sin_long, rope_long = summary(long, "sinusoid", n), summary(long, "rope", n)
        assert sin_long["beyond_mean"] > summary(length, "sinusoid", n)["beyond_mean"]
        assert sin_long["beyond_max"] < rope_long["beyond_min"]
    assert round(100 * summary(long, "sinusoid", 64)["beyond_mean"], 1) == 21.1
    assert round(100 * summary(length, "rope", 256)["beyond_mean"], 1) == 42.8
    assert round(100 * summary(long, "rope", 256)["beyond_mean"], 1) == 35.2
    assert_states(CODE, "长度64上21.1%", "从42.8%降到35.2%")


def test_rope_scaling_file_matches_the_code():
    data = load_results(SCALING)
    assert data["kind"] == rope_scaling.KIND and data["provenance"]["git"]["dirty"] is False
    c = data["config"]
    assert c == rope_scaling.SETTING
    theta = rope_frequencies(c["d"], c["base"], torch.float64)
    assert data["wavelengths"]["rope"] == pytest.approx((2 * math.pi / theta).tolist(), rel=1e-12)
    yarn = scaled_rope_frequencies(c["d"], c["base"], "yarn", c["factor"], original_len=c["original_len"])
    assert data["wavelengths"]["yarn"] == pytest.approx((2 * math.pi / yarn).tolist(), rel=1e-12)
    assert round(data["ntk_base"]) == 40890


def test_model_uses_the_readers_layers():
    from snippets.positional import PositionalSelfAttention
    from snippets.transformer import EncoderLayer, TokenEmbedding
    model = lg.PositionLM("rope", 64, **lg.MODEL)
    assert isinstance(model.embed, TokenEmbedding)
    assert all(isinstance(layer, EncoderLayer) and isinstance(layer.self_attn, PositionalSelfAttention)
               and layer.self_attn.position == "rope" for layer in model.layers)
    assert lg.PositionLM("sinusoid", 64, **lg.MODEL).layers[0].self_attn.position == "none"
    with pytest.raises(ValueError, match="encoding"):
        lg.PositionLM("t5", 64, **lg.MODEL)


@pytest.mark.slow  # trains 4 tiny models
def test_tiny_smoke_run(tmp_path):
    out = tmp_path / "lg.json"
    assert lg.main(["--preset", "tiny", "--out", str(out)]) == 0
    data = load_results(out)
    assert data["preset"] == "tiny" and len(data["runs"]) == 4
    assert rope_scaling.main(["--preset", "tiny", "--out", str(tmp_path / "rs.json")]) == 0


def test_renderer_writes_every_file(tmp_path, length):
    data = [{**length, "_file": "results/length-generalization.json"},
            {**load_results(SCALING), "_file": "results/rope-scaling.json"}]
    ch07_positional.render_length_table(data, tmp_path)
    ch07_positional.render_wavelength_table(data, tmp_path)
    table = (tmp_path / "length-generalization.md").read_text(encoding="utf-8")
    assert "| 正弦 | 64 | 13.5%（12.5–15.0） |" in table and "| ALiBi | 32 | 100.0%（99.9–100.0），全部位置 |" in table
    assert "与初始值的最大差：0（5 个种子）" in table
    ch07_positional.render_length_table([], tmp_path)
    assert "尚无测量结果" in (tmp_path / "length-generalization.md").read_text(encoding="utf-8")
