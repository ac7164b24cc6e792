"""图：同样的输入渲染两次逐字节相同；无结果时写占位文件；调色板在亮/暗背景上都可读。"""

import hashlib
import json
from pathlib import Path

import pytest

from snippets import figures, plotstyle

ROOT = Path(__file__).resolve().parent.parent
EXPECTED = {
    "flops-vs-n.svg", "walltime-vs-n.svg", "path-length.svg", "memory-vs-n.svg", "gradient-decay.svg",
    "table1-measured.md", "flops-table.md", "memory-table.md", "gradient-table.md", "walltime-slopes.md",
    "sequential-dependency.md", "provenance.md",
}


def _digests(out: Path) -> dict:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(out.iterdir())}


def test_rendering_committed_results_twice_is_byte_identical(tmp_path):
    if not figures.probe_results(figures.load_results(ROOT / "results")):
        pytest.skip("no committed probe results")
    figures.render_all(ROOT / "results", tmp_path / "a")
    figures.render_all(ROOT / "results", tmp_path / "b")
    a, b = _digests(tmp_path / "a"), _digests(tmp_path / "b")
    assert EXPECTED <= set(a)
    assert a == b
    svg = (tmp_path / "a" / "flops-vs-n.svg").read_text(encoding="utf-8")
    assert "<text" in svg or "font-family" in svg  # 文字是文字（svg.fonttype = none）
    assert "dc:date" not in svg.lower()
    assert "torch 2." in svg  # 说明文字写明 torch 版本


def test_empty_results_still_write_every_file(tmp_path):
    (tmp_path / "res").mkdir()
    (tmp_path / "res" / "copy-task.json").write_text(json.dumps({"kind": "copy-task"}), encoding="utf-8")
    figures.render_all(tmp_path / "res", tmp_path / "out")
    assert EXPECTED <= set(_digests(tmp_path / "out"))
    assert "尚无测量结果" in (tmp_path / "out" / "table1-measured.md").read_text(encoding="utf-8")


def test_renderers_have_the_documented_signature():
    import inspect

    for fn in figures.RENDERERS:
        assert list(inspect.signature(fn).parameters) == ["results", "out_dir"]


def test_palette_readable_on_light_and_dark_backgrounds():
    for color in [*plotstyle.PALETTE, plotstyle.TEXT_COLOR]:
        assert plotstyle.contrast_ratio(color, plotstyle.LIGHT_BACKGROUND) >= 3.0, color
        assert plotstyle.contrast_ratio(color, plotstyle.DARK_BACKGROUND) >= 3.0, color


def test_plotstyle_rcparams():
    rc = plotstyle.RC_PARAMS
    assert rc["svg.fonttype"] == "none" and rc["svg.hashsalt"]
    assert plotstyle.FONT_FAMILY[-1] == "sans-serif"
    assert rc["savefig.transparent"] is True


def test_gpu_column_group_replaces_pending_when_cuda_results_exist(tmp_path):
    """合成的（synthetic）GPU 结果只存在于临时目录，用来走通渲染代码；从不写进 results/。"""
    cpu = [r for r in figures.probe_results(figures.load_results(ROOT / "results"))
           if r["provenance"]["device"]["type"] == "cpu"]
    if not cpu:
        pytest.skip("no committed probe results")
    res = tmp_path / "res"
    res.mkdir()
    base = {k: v for k, v in cpu[0].items() if k != "_file"}
    (res / "cpu-a.json").write_text(json.dumps(base), encoding="utf-8")
    fake = json.loads(json.dumps(base))
    fake["provenance"]["device"] = {"type": "cuda", "name": "SYNTHETIC TEST GPU", "threads": 1, "driver": "0"}
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
