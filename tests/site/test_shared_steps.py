"""The suite's shared background steps (tests/support/shared.py): started once, read by every worker,
and a step whose process dies without a record fails the tests that need it instead of hanging."""

from __future__ import annotations

import os
import sys

import pytest

from tests.support import shared

WRITE = "import json, sys; from pathlib import Path; Path(sys.argv[-1]).write_text(json.dumps({'n': int(sys.argv[1])}))"


def test_a_step_starts_once_and_every_caller_reads_its_record(tmp_path):
    try:
        assert shared.start(tmp_path, "step one", [sys.executable, "-c", WRITE, "1"]) is True
        assert shared.start(tmp_path, "step one", [sys.executable, "-c", WRITE, "2"]) is False  # already started
        assert shared.result(tmp_path, "step one", timeout=60) == {"n": 1}
    finally:
        shared.reap()


def test_a_step_that_dies_without_a_record_fails_fast(tmp_path):
    try:
        shared.start(tmp_path, "dies", [sys.executable, "-c", "raise SystemExit(3)"])
        with pytest.raises(RuntimeError, match="ended without writing"):
            shared.result(tmp_path, "dies", timeout=60)
        with pytest.raises(RuntimeError, match="never started"):
            shared.result(tmp_path, "never", timeout=60)
    finally:
        shared.reap()


def test_a_caller_waits_a_bounded_time_for_a_step_another_worker_holds(tmp_path):
    """A step stuck in another worker (its lock held) fails the waiting test instead of hanging the run."""
    from filelock import FileLock

    held = FileLock(str(tmp_path / "once-stuck.lock"))  # another open file: flock conflicts as across workers
    with held:
        with pytest.raises(TimeoutError, match="'stuck': another worker has held it"):
            shared.once(tmp_path, "stuck", lambda: {"n": 1}, timeout=0.2)
    assert shared.once(tmp_path, "stuck", lambda: {"n": 2}, timeout=0.2) == {"n": 2}  # free again: it runs


def test_a_caller_waits_for_the_step_to_end_not_on_a_clock(tmp_path):
    """result() fails, bounded, while the step's process still runs (it holds the step's lock while
    it lives), and returns its record once it has ended. The step here waits for the test to open
    a pipe, so nothing depends on timing."""
    go = tmp_path / "go"
    os.mkfifo(go)
    step = ("import json, sys; from pathlib import Path; Path(sys.argv[1]).read_text();"
            " Path(sys.argv[-1]).write_text(json.dumps({'n': 3}))")
    try:
        shared.start(tmp_path, "held", [sys.executable, "-c", step, str(go)])
        with pytest.raises(TimeoutError, match="'held' still runs"):
            shared.result(tmp_path, "held", timeout=0.2)
        go.write_text("go")  # opens the pipe for writing: the step reads and finishes
        assert shared.result(tmp_path, "held", timeout=60) == {"n": 3}
    finally:
        shared.reap()
