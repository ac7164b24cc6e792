"""The copy task end to end (snippets/copy_task.py), its committed results file, and the
heatmaps and table made from it (snippets/attention_figures.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch

from snippets.attention_figures import render_attention_heatmaps
from snippets.copy_task import DEFAULT_CONFIG, make_batch, shift_right, train_copy_task

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "results" / "copy-task.json"
FIGURES = ["attn-encoder-self.svg", "attn-decoder-masked.svg", "attn-cross.svg", "copy-task.md"]


@pytest.fixture(scope="module")
def committed() -> dict:
    return json.loads(RESULTS.read_text(encoding="utf-8"))


@pytest.mark.slow
@pytest.mark.claim("ch02-copy-task", paper="§3; §5 (training)", results="results/copy-task.json",
                   text="从零训练的小 Transformer（Post-LN、三处共享）在 CPU 上用固定种子训练复制任务，带缓存的贪心解码在新序列上的逐词准确率 ≥ 99%")
def test_copy_task_trains_to_99_percent(committed):
    threads = torch.get_num_threads()
    result = train_copy_task()                                   # the default config, seed 0
    assert torch.get_num_threads() == threads                     # restored afterwards
    assert result["greedy_token_accuracy"] >= 0.99
    assert result["final_loss"] < result["loss_curve"]["values"][0]
    # the committed results file comes from the same configuration and passed as well
    assert committed["experiment"] == "copy-task"
    assert committed["hyperparameters"] == DEFAULT_CONFIG
    assert committed["greedy_token_accuracy"] >= 0.99
    assert committed["num_parameters"] == result["num_parameters"]
    prov = committed["provenance"]
    assert prov["device"] == "cpu" and prov["device_name"]
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", prov["torch_version"])
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z", prov["date_utc"])
    assert re.fullmatch(r"[0-9a-f]{40}", prov["git_commit"])
    assert prov["sources_modified"] == ""                         # produced by committed code
    assert prov["command"] == "python -m snippets.copy_task --out results/copy-task.json"
    assert committed["results_file"] == "results/copy-task.json"
    assert committed["train_seconds"] > 0


def test_batches_and_shift():
    g = torch.Generator().manual_seed(0)
    src, tgt = make_batch(4, 6, 12, "copy", g)
    assert torch.equal(src, tgt) and src.min() >= 2 and src.max() < 12
    src, tgt = make_batch(4, 6, 12, "reverse", g)
    assert torch.equal(tgt, src.flip(1))
    assert torch.equal(shift_right(tgt)[:, 1:], tgt[:, :-1]) and bool((shift_right(tgt)[:, 0] == 1).all())
    with pytest.raises(ValueError, match="task must be 'copy' or 'reverse', got task='sort'"):
        make_batch(1, 3, 12, "sort", g)


def test_committed_attention_weights_are_well_formed(committed):
    att = committed["attention"]
    n, m = len(att["src_tokens"]), len(att["tgt_input_tokens"])
    enc, dec, cross = (torch.tensor(att[k], dtype=torch.float64)
                       for k in ("encoder_self", "decoder_masked_self", "cross"))
    assert enc.shape == (n, n) and dec.shape == (m, m) and cross.shape == (m, n)
    for w in (enc, dec, cross):
        assert (w.sum(dim=-1) - 1).abs().max().item() < 1e-5      # rows sum to 1 (6 decimals kept)
    assert dec.triu(diagonal=1).abs().max().item() == 0.0         # the causal triangle is exactly 0
    assert att["predicted_tokens"] == att["target_tokens"]       # this example is decoded correctly


def test_heatmaps_are_byte_deterministic(committed, tmp_path):
    render_attention_heatmaps([{"experiment": "other"}, committed], tmp_path / "a")
    render_attention_heatmaps([committed], tmp_path / "b")
    for name in FIGURES:
        a, b = (tmp_path / "a" / name).read_bytes(), (tmp_path / "b" / name).read_bytes()
        assert a == b, name
    svg = (tmp_path / "a" / "attn-decoder-masked.svg").read_text(encoding="utf-8")
    assert "<text" in svg and "Date" not in svg                    # text stays text, no timestamp
    assert "因果掩码" in svg                                        # the hatched triangle is labelled
    table = (tmp_path / "a" / "copy-task.md").read_text(encoding="utf-8")
    acc = f"{100 * committed['greedy_token_accuracy']:.2f}%"
    for fragment in (acc, "训练时间", f"{committed['hyperparameters']['steps']} 步",
                     committed["provenance"]["torch_version"], committed["provenance"]["date_utc"][:10],
                     "`results/copy-task.json`"):
        assert fragment in table


def test_heatmaps_without_a_copy_task_result_warn(tmp_path):
    with pytest.warns(UserWarning, match="no copy-task result"):
        render_attention_heatmaps([{"experiment": "probes"}], tmp_path)
    assert list(tmp_path.iterdir()) == []
