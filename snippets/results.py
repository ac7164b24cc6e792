"""Results files: provenance, validation against JSON Schema, and the only way to read or write one.

Every probe and experiment writes ``results/<name>.json`` through :func:`write_results`;
the site's renderers read them through :func:`load_all`. A file is checked twice over:

1. ``data["provenance"]`` against ``results/schema/provenance.schema.json`` (device, torch
   version, date, commit, command: a file without provenance is rejected);
2. the whole file against ``results/schema/<kind>.schema.json`` (``kind`` is a required
   top-level string), then any check a schema cannot express (:data:`SEMANTIC_CHECKS`).

An invalid file is never written and never skipped: both directions raise
:class:`ResultsError`, which names the file and the field.
"""

from __future__ import annotations

import datetime as _dt
import importlib
import json
import os
import platform
import re
import subprocess
import sys
from functools import cache
from pathlib import Path

from jsonschema import Draft202012Validator

REPO_ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = REPO_ROOT / "results"
SCHEMA_DIR = RESULTS_DIR / "schema"

# Checks a JSON Schema cannot express, per kind, as "module:function" returning a list of errors.
SEMANTIC_CHECKS = {"complexity-probes": "snippets.probes.results:semantic_errors"}


class ResultsError(ValueError):
    """A results file (or the data about to become one) that does not validate."""

    def __init__(self, file, errors):
        self.file, self.errors = str(file), list(errors)
        super().__init__(f"{self.file}: " + "; ".join(self.errors[:5])
                         + (f" (and {len(self.errors) - 5} more)" if len(self.errors) > 5 else ""))


@cache
def _validator(name: str) -> Draft202012Validator:
    path = SCHEMA_DIR / f"{name}.schema.json"
    if not path.exists():
        raise ResultsError(path, [f"no schema for kind {name!r}: add {path.relative_to(REPO_ROOT)}"])
    schema = json.loads(path.read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def _where(error, prefix: str = "$") -> str:
    return prefix + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)


def errors(data) -> list[str]:
    """Every problem with ``data`` as a results file, each naming its field; empty when valid."""
    if not isinstance(data, dict):
        return ["$: a results file must be a JSON object"]
    if not isinstance(data.get("kind"), str):
        return ["$.kind: missing (every results file names its kind, e.g. 'complexity-probes')"]
    if "provenance" not in data:
        return ["$.provenance: missing (a results file without provenance is rejected)"]
    out = [f"{_where(e, '$.provenance')}: {e.message}"
           for e in _validator("provenance").iter_errors(data["provenance"])]
    body = {k: v for k, v in data.items() if k != "_file"}
    out += [f"{_where(e)}: {e.message}" for e in _validator(data["kind"]).iter_errors(body)]
    if not out and data["kind"] in SEMANTIC_CHECKS:
        module, _, func = SEMANTIC_CHECKS[data["kind"]].partition(":")
        out += getattr(importlib.import_module(module), func)(body)
    return out


def validate(data, file="<data>") -> dict:
    """Return ``data`` if valid; else raise :class:`ResultsError` naming ``file`` and the fields."""
    errs = errors(data)
    if errs:
        raise ResultsError(file, errs)
    return data


def write_results(data: dict, path) -> Path:
    """Validate, then write UTF-8 JSON (indent 1). Nothing is written when validation fails."""
    path = Path(path)
    validate(data, path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(data, ensure_ascii=False, indent=1, allow_nan=False) + "\n"
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)  # atomic: a reader never sees half a file
    return path


def load_results(path) -> dict:
    """Read and validate one results file; adds ``_file`` (path relative to the repo root)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ResultsError(path, [f"unreadable: {exc}"]) from exc
    validate(data, path)
    try:
        data["_file"] = path.resolve().relative_to(REPO_ROOT).as_posix()
    except ValueError:
        data["_file"] = path.as_posix()
    return data


def load_all(results_dir=RESULTS_DIR) -> list[dict]:
    """Every ``*.json`` directly under ``results_dir``, sorted by name, each validated once."""
    return [load_results(p) for p in sorted(Path(results_dir).glob("*.json"))]


# ----------------------------------------------------------------------------- provenance
def cpu_model_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def _affinity():
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None


def device_info(device) -> dict:
    """What ran the code: CPU model, or GPU name, driver, CUDA version and capability."""
    import torch

    device = torch.device(device)
    common = {"threads": torch.get_num_threads(), "logical_cpus": os.cpu_count(), "affinity_cpus": _affinity()}
    if device.type == "cuda":
        idx = device.index or 0
        try:
            driver = subprocess.run(
                ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader", f"--id={idx}"],
                capture_output=True, text=True, timeout=30, check=True).stdout.strip() or None
        except (OSError, subprocess.SubprocessError):
            driver = None
        return {"type": "cuda", "name": torch.cuda.get_device_name(idx), "driver": driver,
                "cuda_version": torch.version.cuda,
                "capability": "%d.%d" % torch.cuda.get_device_capability(idx),
                "total_memory_bytes": int(torch.cuda.get_device_properties(idx).total_memory), **common}
    return {"type": "cpu", "name": cpu_model_name(), **common}


def device_tag(info: dict) -> str:
    """``cpu-intel-xeon-processor``, ``cuda-nvidia-h200``: the stem of a probe results file."""
    name = re.sub(r"\((r|tm|c)\)", " ", info["name"].lower())
    name = re.sub(r"\b(cpu|@.*)$", " ", name)
    slug = re.sub(r"-+", "-", re.sub(r"[^a-z0-9]+", "-", name).strip("-"))[:40].strip("-") or "unknown"
    return f"{info['type']}-{slug}"


def git_state(root: Path = REPO_ROOT) -> dict:
    """HEAD and whether tracked files outside results/ and docs/generated/ have uncommitted changes."""
    def git(*args):
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout

    paths = sorted({line[3:].split(" -> ")[-1].strip('"')
                    for line in git("status", "--porcelain", "--untracked-files=no").splitlines()
                    if line.strip()} - {""})
    paths = [p for p in paths if not p.startswith(("results/", "docs/generated/"))]
    return {"commit": git("rev-parse", "HEAD").strip(), "dirty": bool(paths), "dirty_paths": paths[:50]}


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def loadavg():
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def provenance(device="cpu", *, command: str, seed: int, dtypes=("float32",), **extra) -> dict:
    """The provenance block of a results file; call it when the run starts, then set ``runtime_s``."""
    import torch

    info = device_info(device)
    prov = {"device": info, "tag": device_tag(info), "torch_version": torch.__version__,
            "python_version": sys.version.split()[0], "platform": platform.platform(),
            "dtypes": sorted(set(dtypes)), "git": git_state(), "date_utc": utc_now(), "command": command,
            "runtime_s": 0.0, "load_average": {"before": loadavg()}, "seed": seed}
    prov.update(extra)
    return prov


def command_line(module: str, argv) -> str:
    """``python -m <module> <args>`` as typed, for the provenance's ``command``."""
    import shlex

    return " ".join(["python -m", module, *(shlex.quote(a) for a in argv)]).strip()
