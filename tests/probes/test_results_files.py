"""Results files: every committed file validates against its JSON Schema; invalid data is never
written, and an invalid file is never read (the error names the file and the field)."""

import copy
import json

import pytest

from snippets.probes.results import KIND
from snippets.results import RESULTS_DIR, ResultsError, device_tag, errors, load_all, load_results, write_results

COMMITTED = sorted(RESULTS_DIR.glob("*.json"))


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: p.name)
def test_committed_results_validate(path):
    data = load_results(path)  # raises ResultsError when invalid
    assert data["provenance"]["torch_version"] and len(data["provenance"]["git"]["commit"]) == 40


def test_a_full_cpu_probe_run_is_committed():
    probes = [r for r in load_all() if r["kind"] == KIND]
    assert any(r["preset"] == "full" and r["provenance"]["device"]["type"] == "cpu" for r in probes)
    for r in probes:
        assert r["_file"] == f"results/{r['provenance']['tag']}.json"
        assert r["probes"]["flops"]["all_equal"] is True
        assert r["probes"]["paths"]["all_agree"] is True


@pytest.fixture(scope="module")
def good():
    return next(r for r in load_all() if r["kind"] == KIND)


def test_rejects_missing_or_incomplete_provenance(good):
    bad = copy.deepcopy(good)
    del bad["provenance"]
    assert errors(bad) == ["$.provenance: missing (a results file without provenance is rejected)"]
    for field in ("device", "git", "date_utc", "command", "torch_version", "dtypes"):
        bad = copy.deepcopy(good)
        del bad["provenance"][field]
        assert any(field in e for e in errors(bad)), field


def test_rejects_bad_values(good):
    for path, value in ((("git", "commit"), "HEAD"), (("date_utc",), "yesterday"),
                        (("command",), "make probes"), (("device", "name"), "")):
        bad = copy.deepcopy(good)
        target = bad["provenance"]
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
        assert any(e.startswith("$.provenance." + ".".join(path)) for e in errors(bad)), path
    bad = copy.deepcopy(good)
    bad["probes"]["walltime"]["threads"] = 2
    assert any("1 thread" in e for e in errors(bad))
    bad = copy.deepcopy(good)
    bad["probes"]["walltime"]["series"][0]["points"][0]["samples_s"].pop()
    assert any("samples_s" in e and "repeats" in e for e in errors(bad))
    bad = copy.deepcopy(good)
    del bad["probes"]["walltime"]
    assert any("walltime" in e for e in errors(bad))
    bad = copy.deepcopy(good)
    bad["provenance"]["device"]["type"] = "cuda"  # a CUDA file must carry a cuda- tag and event timing
    assert any(e.startswith("$.provenance.tag") for e in errors(bad))
    assert any("cuda.Event" in e for e in errors({**bad, "provenance": {**bad["provenance"], "tag": "cuda-x"}}))


def test_invalid_data_is_never_written_and_never_read(good, tmp_path):
    bad = copy.deepcopy(good)
    del bad["probes"]["flops"]["rows"][0]["counted"]
    out = tmp_path / "cpu-x.json"
    with pytest.raises(ResultsError) as info:
        write_results(bad, out)
    assert str(out) in str(info.value) and "$.probes.flops.rows[0]" in str(info.value)
    assert not out.exists()
    out.write_text(json.dumps(bad), encoding="utf-8")  # a file edited by hand
    with pytest.raises(ResultsError, match=r"cpu-x\.json.*rows\[0\]"):
        load_all(tmp_path)
    (tmp_path / "cpu-x.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ResultsError, match="unreadable"):
        load_all(tmp_path)


def test_unknown_kind_names_the_missing_schema(good):
    with pytest.raises(ResultsError, match="no schema for kind 'no-such-kind'"):
        errors({**good, "kind": "no-such-kind"})


def test_device_tag():
    assert device_tag({"type": "cpu", "name": "Intel(R) Xeon(R) Processor"}) == "cpu-intel-xeon-processor"
    assert device_tag({"type": "cuda", "name": "NVIDIA H200"}) == "cuda-nvidia-h200"
    assert device_tag({"type": "cpu", "name": "AMD EPYC 7B13 64-Core Processor"}) == "cpu-amd-epyc-7b13-64-core-processor"
