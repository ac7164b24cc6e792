"""The complexity-probe results file: its kind, and the checks its JSON Schema cannot express.

The structure is ``results/schema/complexity-probes.schema.json``; reading, writing and
provenance are :mod:`snippets.results`. One file per device: ``results/<device-tag>.json``.
Top level: ``kind``, ``schema_version``, ``preset`` (quick/full/tiny), ``provenance`` and
``probes`` (flops, paths, sequential, memory, walltime, gradients; each probe module's
docstring describes its fields).
"""

from __future__ import annotations

KIND = "complexity-probes"
SCHEMA_VERSION = 1
PROBE_NAMES = ("flops", "paths", "sequential", "memory", "walltime", "gradients")


def semantic_errors(data: dict) -> list[str]:
    """Timing rules: the samples match the plan's repeats; CUDA is timed with events, CPU with one thread."""
    errs = []
    wt = data["probes"]["walltime"]
    repeats = wt.get("plan", {}).get("repeats")
    for i, s in enumerate(wt["series"]):
        for j, p in enumerate(s["points"]):
            if "error" not in p and repeats is not None and len(p["samples_s"]) != repeats:
                errs.append(f"$.probes.walltime.series[{i}].points[{j}].samples_s: {len(p['samples_s'])} "
                            f"samples, the plan says {repeats} repeats")
    device = data["provenance"]["device"]["type"]
    if device == "cuda" and "cuda.Event" not in wt["timer"]:
        errs.append("$.probes.walltime.timer: CUDA results must be timed with torch.cuda.Event")
    if device == "cpu" and wt["threads"] != 1:
        errs.append("$.probes.walltime.threads: CPU timing must use exactly 1 thread")
    return errs
