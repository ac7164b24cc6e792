"""Docs code blocks (pytest --codeblocks): a block that only includes sections of snippets/
(``--8<-- "snippets/x.py:name"``) is skipped, since its code runs in the snippet's own tests and,
page by page, in tests/site/test_pages.py. Every other ```python block runs.

It lives at the root so that ``pytest --codeblocks docs`` alone skips them too.

docs/generated/ is not collected: the build writes it from results/ and tests/ (its code blocks are
the claim tests' sources, shown as ``text``, and run as the tests they are), and its largest page
is past pytest-codeblocks' 10,000-line limit.

``--device`` (default ``cpu``) is declared here, at the root, so that every run knows it; the ``device``
fixture that tests take is in tests/conftest.py. ``make test-gpu`` runs ``pytest --device cuda``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.codeblocks import included_modules

GENERATED = Path(__file__).parent / "docs" / "generated"


def pytest_addoption(parser):
    parser.addoption(
        "--device", default="cpu",
        help="the torch device for reader-code tests that take the `device` fixture (cpu, cuda, cuda:1, meta); "
             "cuda fails at start when CUDA is not available. Default: cpu.")


def pytest_configure(config):
    """--device other than cpu: check it names a device torch has here, before any test runs (a missing
    GPU is an error at start, never a suite of silent skips)."""
    config.addinivalue_line(
        "markers", "cpu_reference(reason): the test compares with a reference that exists only on the CPU; "
                   "under --device other than cpu it is skipped with the reason")
    name = config.getoption("--device")
    if name == "cpu":
        return
    import torch  # only here: a plain run does not pay for it before collection

    try:
        device = torch.device(name)
    except RuntimeError as err:
        raise pytest.UsageError(f"--device {name}: not a torch device ({err})") from None
    if device.type not in ("cuda", "meta"):
        raise pytest.UsageError(f"--device {name}: the suite runs on cpu, cuda or meta")
    if device.type == "cuda" and not torch.cuda.is_available():
        raise pytest.UsageError(f"--device {name}: CUDA is not available here (torch {torch.__version__}, "
                                f"built with CUDA {torch.version.cuda}); run without --device for the CPU")
    if device.type == "cuda" and (device.index or 0) >= torch.cuda.device_count():
        raise pytest.UsageError(f"--device {name}: only {torch.cuda.device_count()} CUDA device(s) here")


def pytest_ignore_collect(collection_path, config):
    if collection_path == GENERATED or GENERATED in collection_path.parents:
        return True
    return None


def pytest_collection_modifyitems(config, items):
    device = config.getoption("--device")
    for item in items:
        marker = item.get_closest_marker("cpu_reference")
        if marker and device != "cpu":
            why = marker.args[0] if marker.args else "compares with a result that exists only on the CPU"
            item.add_marker(pytest.mark.skip(reason=f"--device {device}: CPU reference ({why})"))
        block = getattr(item, "obj", None)
        code = getattr(block, "code", None)
        if not isinstance(code, str) or getattr(block, "syntax", None) != "python":
            continue
        modules = included_modules(code)
        if modules:
            item.add_marker(pytest.mark.skip(
                reason=f"included from {', '.join(modules)}: runs in its tests and in tests/site/test_pages.py"))
