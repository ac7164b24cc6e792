"""The copy task (snippets/experiments/copy_task.py): its committed results file, a tiny smoke run of
the same code, and the heatmaps and table made from the results (sitebuild/generate/render/ch02_copy_task.py).
Training to 99% belongs to the experiment (`make copy-task`); the test checks what it committed."""

from __future__ import annotations

import pytest
import torch

from sitebuild.generate.render.ch02_copy_task import render_attention_heatmaps
from snippets.experiments import copy_task
from snippets.experiments.copy_task import DEFAULT_CONFIG, make_batch, shift_right
from snippets.results import RESULTS_DIR, load_results

FIGURES = ["attn-encoder-self.svg", "attn-decoder-masked.svg", "attn-cross.svg", "copy-task.md"]


@pytest.fixture(scope="module")
def committed() -> dict:
    return load_results(RESULTS_DIR / "copy-task.json")  # validated against its schema


@pytest.mark.claim("ch02-copy-task", paper="§3; §5 (training)", results="results/copy-task.json",
                   title="小 Transformer 学会复制任务（准确率 ≥ 99%）",
                   text="从零训练的小 Transformer（Post-LN、三处共享）在 CPU 上用固定种子训练复制任务，带缓存的贪心解码在新序列上的逐词准确率 ≥ 99%")
def test_copy_task_trains_to_99_percent(committed):
    assert committed["preset"] == "full"
    assert committed["hyperparameters"] == DEFAULT_CONFIG           # the configuration the page describes
    assert committed["greedy_token_accuracy"] >= 0.99
    values = committed["loss_curve"]["values"]
    assert committed["final_loss"] < values[0] / 100                # it learned, it did not just start low
    assert not committed["provenance"]["git"]["dirty"]              # produced by committed code


def test_smoke_run_writes_a_valid_results_file(tmp_path):
    threads = torch.get_num_threads()
    out = tmp_path / "copy-task.json"
    assert copy_task.main(["--preset", "tiny", "--out", str(out)]) == 0
    assert torch.get_num_threads() == threads                       # restored afterwards
    result = load_results(out)
    assert result["hyperparameters"]["steps"] == copy_task.PRESETS["tiny"]["steps"]
    assert result["num_parameters"] > 0 and 0 <= result["greedy_token_accuracy"] <= 1


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


@pytest.mark.slow  # renders every heatmap twice
def test_heatmaps_are_byte_deterministic(committed, tmp_path):
    render_attention_heatmaps([{"kind": "other"}, committed], tmp_path / "a")
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


def test_without_a_copy_task_result_the_page_says_so(tmp_path):
    render_attention_heatmaps([{"kind": "complexity-probes"}], tmp_path)
    assert "尚无测量结果" in (tmp_path / "copy-task.md").read_text(encoding="utf-8")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(FIGURES)
