"""A committed results file, checked as the pages read it: its kind and preset, a clean tree in its
provenance, and the configuration of that preset (one thread: the 2-core machine's setting); files
written per device are named after it, and a GPU number exists only if a GPU produced it."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from snippets.results import load_results


def committed_results(path: Path, experiment: ModuleType, preset: str, *, free: tuple[str, ...] = ()) -> dict:
    """``path`` validated against its schema; ``free`` names config keys the preset does not fix
    (the optimizer's settings, recorded as run)."""
    data = load_results(path)
    assert data["kind"] == experiment.KIND and data["preset"] == preset
    assert data["provenance"]["git"]["dirty"] is False
    recorded = {key: data["config"][key] for key in free}
    assert data["config"] == {**experiment.PRESETS[preset], **recorded, "threads": 1}
    return data


RESULTS = Path(__file__).resolve().parents[2] / "results"


def one_file(files: list[Path], kind: str, preset: str = "full") -> dict:
    """The one file of ``files`` (validated against its schema), of ``kind`` and ``preset``, from a
    clean tree."""
    assert len(files) == 1, files
    data = load_results(files[0])
    assert data["kind"] == kind and data["preset"] == preset
    assert data["provenance"]["git"]["dirty"] is False
    return data


def check_device_files(prefix: str, timer_of) -> None:
    """Each ``results/<prefix>-<device>.json`` (``<device>.json`` for chapter 01's probes, whose
    prefix is "") is named after the device tag in its provenance; a CUDA file names its GPU, driver,
    CUDA version and compute capability, and ``timer_of(data)`` (the timer its probe recorded) says
    CUDA events."""
    stem = f"{prefix}-" if prefix else ""
    files = sorted(f for device in ("cpu", "cuda") for f in RESULTS.glob(f"{stem}{device}-*.json"))
    assert files, prefix
    for f in files:
        data = load_results(f)
        dev = data["provenance"]["device"]
        assert f.name == f"{stem}{data['provenance']['tag']}.json" and dev["type"] in ("cpu", "cuda"), f.name
        if dev["type"] == "cuda":
            assert dev["name"] and dev["driver"] and dev["cuda_version"] and dev["capability"], f.name
            assert timer_of(data).startswith("torch.cuda.Event"), f.name
