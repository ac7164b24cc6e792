"""A committed results file, checked as the pages read it: its kind and preset, a clean tree in its
provenance, and the configuration of that preset (one thread: the 2-core machine's setting)."""

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
