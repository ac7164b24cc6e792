"""The ``--device`` option (conftest.py) and the ``device`` fixture (tests/conftest.py): a device that is not
there stops the run at start, and the option reaches the tests that take the fixture."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from tests.support.build import ROOT


def _pytest(*args):
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rs", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_device_fixture_is_the_option(device, request):
    assert isinstance(device, torch.device)
    assert device == torch.device(request.config.getoption("--device"))


@pytest.mark.cpu_reference("checks the marker: under --device meta this test is skipped with this reason")
def test_cpu_reference_runs_on_the_cpu(request):
    assert request.config.getoption("--device") == "cpu"


@pytest.mark.slow  # a fresh pytest (imports torch): seconds
@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is here: --device cuda is a valid run")
def test_device_cuda_without_cuda_stops_the_run():
    proc = _pytest("--device", "cuda", "--co", "tests/contract/test_device_option.py")
    assert proc.returncode == pytest.ExitCode.USAGE_ERROR, proc.stdout + proc.stderr
    assert "--device cuda: CUDA is not available here" in proc.stderr
    assert "collected" not in proc.stdout  # stopped before collecting anything


@pytest.mark.slow  # a fresh pytest (imports torch): seconds
def test_device_meta_reaches_the_tests():
    """--device meta: the fixture is meta, a contract entry runs there, the CPU-reference test is skipped."""
    here = "tests/contract/test_device_option.py::"
    proc = _pytest("--device", "meta", here + "test_device_fixture_is_the_option",
                   here + "test_cpu_reference_runs_on_the_cpu",  # never this test itself: it would recurse
                   "tests/contract/test_contract.py::test_device_option[attention.causal_mask]",
                   "tests/contract/test_contract.py::test_device_option[attention.padding_mask]")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "3 passed, 1 skipped" in out, out
    assert "--device meta: CPU reference (checks the marker" in out
