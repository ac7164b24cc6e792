"""结果文件的模式：没有出处的文件被拒绝；提交的 results/cpu-*.json 通过。"""

import copy
import json
from pathlib import Path

import pytest

from snippets.probes import results as R

ROOT = Path(__file__).resolve().parent.parent
COMMITTED = sorted((ROOT / "results").glob("cpu-*.json"))


def _probe_files():
    return [p for p in COMMITTED if R.is_probe_results(json.loads(p.read_text(encoding="utf-8")))]


def test_a_full_cpu_results_file_is_committed():
    files = _probe_files()
    assert files, "results/cpu-<tag>.json (a full run of python -m snippets.probes) is missing"
    assert any(json.loads(p.read_text(encoding="utf-8"))["preset"] == "full" for p in files)


@pytest.mark.parametrize("path", _probe_files(), ids=lambda p: p.name)
def test_committed_results_validate(path):
    data = R.load(path)
    assert R.validate(data) == []
    prov = data["provenance"]
    assert path.stem == prov["tag"]
    assert prov["device"]["type"] == "cpu"
    assert data["probes"]["flops"]["all_equal"] is True
    assert data["probes"]["paths"]["all_agree"] is True
    # 每个计时点都保存了每一轮的原始样本
    reps = data["probes"]["walltime"]["plan"]["repeats"]
    for s in data["probes"]["walltime"]["series"]:
        for p in s["points"]:
            assert len(p["samples_s"]) == reps


@pytest.fixture(scope="module")
def good():
    files = _probe_files()
    if not files:
        pytest.skip("no committed results file")
    return R.load(files[0])


def test_rejects_missing_provenance(good):
    bad = copy.deepcopy(good)
    del bad["provenance"]
    errs = R.validate(bad)
    assert errs and "provenance" in errs[0]


@pytest.mark.parametrize("field", ["device", "git", "date_utc", "command", "torch_version", "dtypes"])
def test_rejects_incomplete_provenance(good, field):
    bad = copy.deepcopy(good)
    del bad["provenance"][field]
    assert any(field in e for e in R.validate(bad))


def test_rejects_bad_values(good):
    for path, value in ((("git", "commit"), "HEAD"), (("date_utc",), "yesterday"),
                        (("command",), "make probes"), (("device", "name"), "")):
        bad = copy.deepcopy(good)
        target = bad["provenance"]
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
        assert R.validate(bad), path
    bad = copy.deepcopy(good)
    bad["probes"]["walltime"]["threads"] = 2
    assert any("1 thread" in e for e in R.validate(bad))
    bad = copy.deepcopy(good)
    bad["probes"]["walltime"]["series"][0]["points"][0]["samples_s"].pop()
    assert any("samples" in e for e in R.validate(bad))
    bad = copy.deepcopy(good)
    del bad["probes"]["walltime"]
    assert R.validate(bad)


def test_rejects_cuda_claims_without_cuda_events(good):
    bad = copy.deepcopy(good)
    bad["provenance"]["device"]["type"] = "cuda"
    bad["provenance"]["tag"] = "cuda-fake"
    assert any("cuda.Event" in e for e in R.validate(bad))


def test_schema_helper_subset():
    assert R.schema_errors(3, {"type": "integer", "minimum": 0}) == []
    assert R.schema_errors(True, {"type": "integer"})  # bool 不是整数
    assert R.schema_errors({"a": 1}, {"type": "object", "required": ["b"]})
    assert R.schema_errors("x", {"enum": ["y"]})
    assert R.schema_errors([], {"type": "array", "minItems": 1})


def test_device_tag():
    assert R.device_tag({"type": "cpu", "name": "Intel(R) Xeon(R) Processor"}) == "cpu-intel-xeon-processor"
    assert R.device_tag({"type": "cuda", "name": "NVIDIA H200"}) == "cuda-nvidia-h200"
    assert R.device_tag({"type": "cpu", "name": "AMD EPYC 7B13 64-Core Processor"}) == "cpu-amd-epyc-7b13-64-core-processor"
