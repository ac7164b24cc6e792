"""Chapter 13's probe: the committed CPU results file against the thresholds stated on the page, a tiny smoke
run into tmp_path (slow), and the renderer."""

from __future__ import annotations

from pathlib import Path

import pytest

from sitebuild.generate.render import ch13_long_context
from snippets.probes import long_context
from snippets.results import load_results
from tests.support.pages import assert_states, chapter

CODE = chapter("13") + "code.md"
ROOT = Path(__file__).resolve().parents[2]
FILES = sorted((ROOT / "results").glob("long-context-cpu-*.json"))


@pytest.fixture(scope="module")
def cpu() -> dict:
    assert len(FILES) == 1, FILES
    data = load_results(FILES[0])  # validates against results/schema/long-context-probes.schema.json
    assert data["kind"] == long_context.KIND and data["preset"] == "full"
    assert data["provenance"]["git"]["dirty"] is False and data["provenance"]["threads"] == 1
    assert data["probes"]["recall"]["config"] == long_context.PRESETS["full"]["recall"]
    return data


@pytest.mark.claim("ch13-scaling", paper="§4 表 1", results="results/long-context-cpu-amd-epyc.json",
                   title="实测：内存随 n 的增长",
                   text="CPU、float32、d = 64、n = 256 到 4096：n 每翻一倍，因果全注意力的峰值内存增长 ≥ 3.9 倍（∝ n²），"
                        "滑动窗口、线性（递推、分块）与增量规则（分块）≤ 2.1 倍（∝ n）；n = 4096 时全注意力的峰值是"
                        "分块线性注意力的 50 倍以上，分块线性注意力与滑动窗口也更快")
def test_scaling(cpu):
    s = cpu["probes"]["scaling"]
    by = {(r["method"], r["n"]): r for r in s["rows"]}
    ns = sorted({r["n"] for r in s["rows"]})
    assert ns == [256, 512, 1024, 2048, 4096]
    for a, b in zip(ns, ns[1:]):
        assert by[("full", b)]["peak_bytes"] >= 3.9 * by[("full", a)]["peak_bytes"]
        for m in ("window", "linear_recurrent", "linear_chunked", "delta_chunked"):
            assert by[(m, b)]["peak_bytes"] <= 2.1 * by[(m, a)]["peak_bytes"], m
    assert by[("full", 4096)]["peak_bytes"] > 50 * by[("linear_chunked", 4096)]["peak_bytes"]
    for m in ("linear_chunked", "window"):
        assert by[(m, 4096)]["time_s"] < by[("full", 4096)]["time_s"]
    assert_states(CODE, "3.9", "50")


@pytest.mark.claim("ch13-decode-constant", paper="Katharopoulos et al. 2020 §3.4",
                   results="results/long-context-cpu-amd-epyc.json",
                   title="实测：线性注意力解码一步的内存与 n 无关",
                   text="d = 64、float32：读过 n = 512 到 32768 个词元后再解码一个词元，线性注意力一步的峰值额外内存逐字节相同；"
                        "全注意力一步的峰值随 n 增长（32768 时是 512 时的 50 倍以上），它要存的 KV 缓存 2nd 个数也是")
def test_decode_constant(cpu):
    rows = cpu["probes"]["decode_step"]
    assert [r["n"] for r in rows] == [512, 2048, 8192, 32768]
    assert len({r["linear_step_bytes"] for r in rows}) == 1
    assert rows[-1]["full_step_bytes"] > 50 * rows[0]["full_step_bytes"]
    for r in rows:
        assert r["kv_cache_bytes"] == 4 * long_context.decode_state_elems(r["n"], r["d"], "full")
        assert r["state_bytes"] == 4 * long_context.decode_state_elems(r["n"], r["d"], "linear")


@pytest.mark.claim("ch13-recall", paper="Schlag et al. 2021; Arora et al. 2023",
                   results="results/long-context-cpu-amd-epyc.json",
                   title="实测：联想回忆",
                   text="d_k = 16、5 个种子、不训练：softmax 注意力在 N = 4 到 128 对上全部回忆正确；最好的 16×64 线性状态"
                        "在 N ≤ 32 时平均回忆率 1.000，N = 64 时降到 0.9 以下、N = 128 时 0.5 以下；朴素的 Σvkᵀ 在 N = 128 时 0.4 以下")
def test_recall(cpu):
    means = ch13_long_context.recall_means(cpu)
    assert sorted(means) == [4, 8, 16, 32, 64, 128]
    assert all(v["softmax"] == 1.0 for v in means.values())
    assert all(means[n]["best_linear"] == 1.0 for n in (4, 8, 16, 32))
    assert means[64]["best_linear"] < 0.9 and means[128]["best_linear"] < 0.5
    assert means[128]["linear"] < 0.4
    for n in means:
        assert means[n]["best_linear"] >= means[n]["linear"] - 1e-9
    assert_states(CODE, "0.9", "0.5", "0.4")


@pytest.mark.slow
def test_tiny_smoke(tmp_path):
    out = tmp_path / "lc.json"
    assert long_context.main(["--preset", "tiny", "--out", str(out), "--no-progress"]) == 0
    data = load_results(out)
    assert data["preset"] == "tiny" and data["probes"]["recall"]["rows"]


def test_renderer(tmp_path, cpu):
    results = [{**cpu, "_file": FILES[0].name}]
    for render in ch13_long_context.RENDERERS:
        render(results, tmp_path)
    assert "1.000" in (tmp_path / "ch13-recall.md").read_text(encoding="utf-8")
    empty = tmp_path / "empty"
    for render in ch13_long_context.RENDERERS:
        render([], empty)
    assert (empty / "ch13-scaling.svg").exists()
