"""Rendering results → docs/generated/: byte-identical twice, placeholders without results, an invalid
results file stops the run, readable colours on both palettes, GPU columns only from GPU files."""

import hashlib
import json
from pathlib import Path

from sitebuild import figures
from sitebuild.figures import OUT_DIR as GENERATED
from sitebuild.render import style
from sitebuild.render.probe_select import probe_results
from snippets.results import RESULTS_DIR, load_all

EXPECTED = {
    "flops-vs-n.svg", "walltime-vs-n.svg", "path-length.svg", "memory-vs-n.svg", "gradient-decay.svg",
    "table1-measured.md", "flops-table.md", "memory-table.md", "gradient-table.md", "walltime-slopes.md",
    "sequential-dependency.md", "provenance.md", "attn-encoder-self.svg", "attn-decoder-masked.svg",
    "attn-cross.svg", "copy-task.md",
}


def _digests(out: Path) -> dict:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(out.iterdir())}


def test_rendering_committed_results_is_byte_identical_to_the_site(tmp_path):
    """A fresh render equals docs/generated/ (made by `make figures` before the tests) byte for byte."""
    figures.render_all(RESULTS_DIR, tmp_path / "a")
    a = _digests(tmp_path / "a")
    assert EXPECTED <= set(a)
    site = {name: digest for name, digest in _digests(GENERATED).items() if name in a}
    assert site == a, "docs/generated/ differs from a fresh render: run `make figures` (or rendering is not deterministic)"
    svg = (tmp_path / "a" / "flops-vs-n.svg").read_text(encoding="utf-8")
    assert "<text" in svg or "font-family" in svg  # 文字是文字（svg.fonttype = none）
    assert "dc:date" not in svg.lower()
    assert "torch 2." in svg  # 说明文字写明 torch 版本


def test_empty_results_still_write_every_file(tmp_path):
    (tmp_path / "res").mkdir()
    figures.render_all(tmp_path / "res", tmp_path / "out")
    assert EXPECTED <= set(_digests(tmp_path / "out"))
    assert "尚无测量结果" in (tmp_path / "out" / "table1-measured.md").read_text(encoding="utf-8")
    assert "尚无测量结果" in (tmp_path / "out" / "copy-task.md").read_text(encoding="utf-8")


def test_an_invalid_results_file_stops_the_run(tmp_path, capsys):
    (tmp_path / "res").mkdir()
    (tmp_path / "res" / "copy-task.json").write_text(json.dumps({"kind": "copy-task"}), encoding="utf-8")
    assert figures.main(["--results", str(tmp_path / "res"), "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert "copy-task.json" in err and "$.provenance" in err
    assert not (tmp_path / "out").exists()


def test_palette_readable_on_light_and_dark_backgrounds():
    for color in [*style.PALETTE, style.TEXT_COLOR]:
        assert style.contrast_ratio(color, style.LIGHT_BACKGROUND) >= 3.0, color
        assert style.contrast_ratio(color, style.DARK_BACKGROUND) >= 3.0, color


def test_gpu_column_group_replaces_pending_when_cuda_results_exist(tmp_path):
    """合成的（synthetic）GPU 结果只存在于临时目录，用来走通渲染代码；从不写进 results/。"""
    cpu = [r for r in probe_results(load_all()) if r["provenance"]["device"]["type"] == "cpu"]
    res = tmp_path / "res"
    res.mkdir()
    base = {k: v for k, v in cpu[0].items() if k != "_file"}
    (res / "cpu-a.json").write_text(json.dumps(base), encoding="utf-8")
    fake = json.loads(json.dumps(base))
    fake["provenance"]["device"] = {"type": "cuda", "name": "SYNTHETIC TEST GPU", "threads": 1, "driver": "0"}
    fake["provenance"]["command"] = "python -m snippets.probes --device cuda"
    fake["provenance"]["tag"] = "cuda-synthetic-test"
    wt = fake["probes"]["walltime"]
    wt["timer"] = "torch.cuda.Event(enable_timing=True)"
    wt["matmul_ceiling"] = [{"dtype": "bfloat16", "m": 8, "median_s": 1.0, "tflops": 1.0}]
    wt["sdpa_backends"] = [
        {"backend": "flash", "dtype": "bfloat16", "batch": 1, "heads": 1, "head_dim": 8, "n": 8,
         "median_s": 1.0, "tflops": 0.5, "fraction_of_bf16_matmul": 0.5},
        {"backend": "flash", "dtype": "float32", "batch": 1, "heads": 1, "head_dim": 8, "n": 8,
         "error": "RuntimeError: no kernel"},
    ]
    (res / "cuda-synthetic-test.json").write_text(json.dumps(fake), encoding="utf-8")
    figures.render_all(res, tmp_path / "out")
    table = (tmp_path / "out" / "table1-measured.md").read_text(encoding="utf-8")
    assert "GPU: pending" not in table and "GPU float32" in table
    slopes = (tmp_path / "out" / "walltime-slopes.md").read_text(encoding="utf-8")
    assert "SDPA 各后端" in slopes and "不可用" in slopes
