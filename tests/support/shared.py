"""Work done once per test run and shared by every pytest-xdist worker.

``make test`` runs several workers. Each has its own session fixtures, so without this each would
build the site, open every page and print the PDF itself. :func:`once` runs a step in the
first worker that asks for it and hands the other workers its JSON result, through a folder
all workers of a run see and a file lock per step. :func:`start` and :func:`result` do the
same for a step run in the background from the start of the session (the site build).
"""

from __future__ import annotations

import json
import os
import fcntl
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

from filelock import FileLock, Timeout


def shared_dir(tmp_path_factory, worker_id: str) -> Path:
    """A folder every xdist worker of this run sees (the run's own base temp without xdist)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if worker_id != "master" else base


def once(folder: Path, name: str, make: Callable[[], dict], timeout: float = 600) -> dict:
    """``make()``'s result, computed by the first caller in this run and read back by the rest.

    A caller that finds the step running waits for it (at most ``timeout`` seconds, so that a
    step stuck in another worker fails this test rather than the whole run's time limit) instead
    of repeating it. If ``make`` raises, nothing is recorded and the next caller tries again.
    """
    key = _key(name)
    record = folder / f"once-{key}.json"
    lock = FileLock(str(folder / f"once-{key}.lock"), timeout=timeout)
    try:
        lock.acquire()
    except Timeout:
        raise TimeoutError(f"step {name!r}: another worker has held it for over {timeout:.0f} s") from None
    try:
        if not record.is_file():
            record.write_text(json.dumps(make(), ensure_ascii=False), encoding="utf-8")
    finally:
        lock.release()
    return json.loads(record.read_text(encoding="utf-8"))


def try_once(folder: Path, name: str, make: Callable[[], dict]) -> tuple[dict, bool] | None:
    """Like :func:`once`, but None at once if another caller is running the step now.

    Returns ``(result, made)``: ``made`` says whether this call ran ``make`` (rather than
    reading the record). A worker that would wait for a step can do another one meanwhile.
    """
    key = _key(name)
    record = folder / f"once-{key}.json"
    try:
        with FileLock(str(folder / f"once-{key}.lock"), timeout=0):
            made = not record.is_file()
            if made:
                record.write_text(json.dumps(make(), ensure_ascii=False), encoding="utf-8")
    except Timeout:
        return None
    return json.loads(record.read_text(encoding="utf-8")), made


def start(folder: Path, name: str, command: list[str]) -> bool:
    """Start ``command`` in the background unless this run already started step ``name``.

    For a long step (the site build) that tests need only later: it runs beside the first
    tests instead of keeping every worker waiting when the first test needs it. ``command``
    gets the path of the step's record as its last argument and must write its JSON result
    there (atomically, see :func:`write_record`). The process holds the step's running lock
    for as long as it lives (it inherits the locked file, not its own children), so
    :func:`result` waits for the lock's release, not on a clock. Returns whether this caller
    started it; the starter must call :func:`reap` at the end of its session.
    """
    key = _key(name)
    marker = folder / f"start-{key}.json"
    with FileLock(str(folder / f"start-{key}.lock")):
        if marker.is_file():
            return False
        running = os.open(folder / f"start-{key}.running.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(running, fcntl.LOCK_EX)  # before the process exists, so no waiter sees it free
            proc = subprocess.Popen([*command, str(folder / f"start-{key}.result.json")], pass_fds=(running,),
                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        finally:
            os.close(running)  # the lock stays held by the process's copy of the file
        _started.append(proc)
        marker.write_text(json.dumps({"pid": proc.pid}), encoding="utf-8")
    return True


def result(folder: Path, name: str, timeout: float = 900) -> dict:
    """The record of step ``name`` (see :func:`start`), once its process has ended; fails if the
    process ended without one, or still runs after ``timeout`` seconds."""
    key = _key(name)
    record, marker = folder / f"start-{key}.result.json", folder / f"start-{key}.json"
    if not marker.is_file():
        raise RuntimeError(f"step {name!r} was never started")
    try:
        with FileLock(str(folder / f"start-{key}.running.lock"), timeout=timeout):
            pass
    except Timeout:
        raise TimeoutError(f"step {name!r} still runs after {timeout:.0f} s") from None
    if not record.is_file():
        pid = json.loads(marker.read_text(encoding="utf-8"))["pid"]
        raise RuntimeError(f"step {name!r} (pid {pid}) ended without writing {record}")
    return json.loads(record.read_text(encoding="utf-8"))


def write_record(path: Path, data: dict) -> None:
    """Write a step's record so that no reader sees half of it."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, path)


def reap() -> None:
    """Wait for the steps this process started (another worker may still need their result)."""
    while _started:
        _started.pop().wait()


_started: list[subprocess.Popen] = []


def _key(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "root"
