"""Work done once per test run and shared by every pytest-xdist worker.

``make test`` runs two workers. Each has its own session fixtures, so without this each would
build the site, open every page and print the PDF itself. :func:`once` runs a step in the
first worker that asks for it and hands the other workers its JSON result, through a folder
all workers of a run see and a file lock per step.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

from filelock import FileLock


def shared_dir(tmp_path_factory, worker_id: str) -> Path:
    """A folder every xdist worker of this run sees (the run's own base temp without xdist)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if worker_id != "master" else base


def once(folder: Path, name: str, make: Callable[[], dict]) -> dict:
    """``make()``'s result, computed by the first caller in this run and read back by the rest.

    A caller that finds the step running waits for it instead of repeating it. If ``make``
    raises, nothing is recorded and the next caller tries again.
    """
    key = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "root"
    record = folder / f"once-{key}.json"
    with FileLock(str(folder / f"once-{key}.lock")):
        if not record.is_file():
            record.write_text(json.dumps(make(), ensure_ascii=False), encoding="utf-8")
    return json.loads(record.read_text(encoding="utf-8"))
