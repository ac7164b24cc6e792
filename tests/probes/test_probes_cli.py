"""命令行：tiny 预设端到端运行，写出的 JSON 通过校验，并能渲染出表。CUDA 路径只在有 GPU 时运行。"""

import subprocess
import sys

import pytest
import torch

from sitebuild.generate.render.ch01_probe_tables import render_provenance, render_table1
from snippets.probes.runner import CUDA_WALLTIME, PRESETS, main, plan_for
from snippets.results import REPO_ROOT as ROOT
from snippets.results import load_all, load_results


@pytest.fixture(scope="module")
def tiny_results(tmp_path_factory):
    out = tmp_path_factory.mktemp("res") / "cpu-tiny.json"
    proc = subprocess.run([sys.executable, "-m", "snippets.probes", "--device", "cpu", "--preset", "tiny",
                           "--out", str(out), "--no-progress"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


@pytest.mark.slow  # a whole probe run (tiny preset) in two fresh interpreters
def test_tiny_preset_writes_valid_results(tiny_results):
    data = load_results(tiny_results)  # validated
    prov = data["provenance"]
    assert prov["command"].startswith("python -m snippets.probes --device cpu --preset tiny")
    assert len(prov["git"]["commit"]) == 40
    assert data["probes"]["walltime"]["threads"] == 1
    assert data["probes"]["walltime"]["env"]["OMP_NUM_THREADS"] == "1"
    assert data["probes"]["walltime"]["env"]["MALLOC_MMAP_THRESHOLD_"]
    assert data["probes"]["flops"]["all_equal"] and data["probes"]["paths"]["all_agree"]


@pytest.mark.slow
def test_figures_render_from_tiny_results(tiny_results, tmp_path):
    results = load_all(tiny_results.parent)
    render_table1(results, tmp_path)
    render_provenance(results, tmp_path)
    assert "GPU: pending" in (tmp_path / "table1-measured.md").read_text(encoding="utf-8")
    assert "cpu-tiny.json" in (tmp_path / "provenance.md").read_text(encoding="utf-8")


def test_presets_are_consistent():
    for name in PRESETS:
        for device in ("cpu", "cuda"):
            plan = plan_for(name, device)
            wt = plan["walltime"]
            assert wt["repeats"] >= 2 and wt["modes"] == ["fwd", "fwd+bwd"]
            for sw in wt["sweeps"]:
                for cfg in sw["layers"].values():
                    assert cfg["sizes"] == sorted(cfg["sizes"])
    assert CUDA_WALLTIME["full"]["dtypes"] == ["float32", "bfloat16"]


def test_cuda_request_without_gpu_writes_nothing(tmp_path):
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    out = tmp_path / "cuda.json"
    # the command's own main(), in this process: a fresh interpreter would spend seconds importing torch
    with pytest.raises(SystemExit) as exc:
        main(["--device", "cuda", "--preset", "tiny", "--out", str(out), "--no-progress"])
    assert isinstance(exc.value.code, str) and "no CUDA device" in exc.value.code  # exit status 1, the reason on stderr
    assert not out.exists()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_walltime_tiny():
    from snippets.probes import walltime

    res = walltime.measure(CUDA_WALLTIME["tiny"], "cuda")
    assert "cuda.Event" in res["timer"]
    assert {r["backend"] for r in res["sdpa_backends"]} == {"flash", "memory_efficient", "math"}
    assert all(c["tflops"] > 0 for c in res["matmul_ceiling"])
