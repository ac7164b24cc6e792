"""The suite's shared background steps (tests/support/shared.py): started once, read by every worker,
and a step whose process dies without a record fails the tests that need it instead of hanging."""

from __future__ import annotations

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
        # not reaped: once it exits it is a zombie of this process, which counts as ended
        with pytest.raises(RuntimeError, match="ended without writing"):
            shared.result(tmp_path, "dies", timeout=60)
        with pytest.raises(RuntimeError, match="never started"):
            shared.result(tmp_path, "never", timeout=60)
    finally:
        shared.reap()
