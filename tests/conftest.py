"""Shared fixtures: the one strict build of the real site per test run, and a local server for it.

The build uses the real mkdocs.yml with ``SITE_URL`` set to the test server's origin, so
instant navigation behaves exactly as under ``make serve``. Under pytest-xdist (``make test``
runs two workers) the workers share that one build and serve it on one port. Everything else a
test needs lives in tests/support/ (one helper layer) or in the folder's own conftest (tests/browser/).
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
from datetime import datetime, timezone
from importlib.metadata import version
from pathlib import Path

import pytest

from sitebuild.browser import CHROMIUM, chromium
from sitebuild.serve import free_port, serve
from tests.support import builtpage
from tests.support.build import ROOT, site_build_command
from tests.support.shared import reap, result, shared_dir, start


def pytest_configure(config):
    """Under pytest-xdist, one torch thread per worker: the workers already fill the cores."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        os.environ.setdefault("OMP_NUM_THREADS", "1")


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    """The run is over: spare the interpreter's last garbage collection, which walks every object
    still alive (a worker holds torch and the built pages' tokens: seconds, while the controller
    waits for the worker to exit). Frozen objects are left to the process's end."""
    gc.freeze()


def pytest_collection_modifyitems(items):
    """Tests that read the built site go after the others (the browser suite keeps its place at the
    front): the site's build runs in the background meanwhile, instead of a worker waiting on it."""
    items[:] = sorted(items, key=lambda item: "_site_build" in getattr(item, "fixturenames", ())
                      and "browser" not in item.keywords)


@pytest.fixture(scope="session")
def device(request):
    """The torch device of ``pytest --device`` (default cpu; the root conftest.py checks it exists).

    Reader-code tests whose result does not depend on the device build their tensors and modules on it;
    ``make test-gpu`` runs them with ``--device cuda``."""
    import torch

    return torch.device(request.config.getoption("--device"))


@pytest.fixture(scope="session")
def shared(tmp_path_factory, worker_id) -> Path:
    """A folder all xdist workers of this run share (tests/support/shared.py)."""
    return shared_dir(tmp_path_factory, worker_id)


SITE_BUILD = "site-build"


@pytest.fixture(scope="session", autouse=True)
def _start_site_build(request, shared):
    """Start the real site's build in the background before the first test, if any test of this run
    needs it: the workers run other tests meanwhile instead of waiting for it."""
    if any("_site_build" in getattr(item, "fixturenames", ()) for item in request.session.items):
        start(shared, SITE_BUILD, site_build_command(shared / "site", free_port()))
    yield
    reap()  # another worker may still be waiting for the build: let it finish


@pytest.fixture(scope="session")
def _site_build(shared) -> dict:
    """The real site, built once per run whatever the number of xdist workers.

    The build's ``site_url`` names one port, which every worker then serves (``serve(shared=True)``).
    """
    start(shared, SITE_BUILD, site_build_command(shared / "site", free_port()))  # started already, normally
    return result(shared, SITE_BUILD)


@pytest.fixture(scope="session")
def site_port(_site_build) -> int:
    return _site_build["port"]


@pytest.fixture(scope="session")
def built_site(_site_build) -> Path:
    """The site, built once per run with ``--strict``; fails loudly with mkdocs' log."""
    assert _site_build["returncode"] == 0, f"mkdocs build --strict failed:\n{_site_build['log']}"
    return Path(_site_build["site_dir"])


@pytest.fixture(scope="session")
def built_pages(built_site, shared, worker_id) -> list[Path]:
    """Every HTML file of the built site, tokenized (tests/support/builtpage.py), for the tests that
    read all of them: the workers that need them share the tokenizing."""
    builtpage.share(shared / "page-tokens")
    worker = int(worker_id[2:]) if worker_id.startswith("gw") else 0
    return builtpage.warm(sorted(built_site.rglob("*.html")), worker)


@pytest.fixture(scope="session")
def chromium_browser():
    """One Chromium per worker for the whole session (browser tests, the PDF edition)."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM} (set $CHROMIUM)")
    with chromium() as browser:
        yield browser


@pytest.fixture(scope="session")
def site_url(built_site, site_port) -> str:
    """Serve the built site on 127.0.0.1 for the browser tests."""
    with serve(built_site, site_port, shared=True) as url:
        yield url


def pytest_sessionfinish(session, exitstatus):
    """With ``--junitxml`` (``make test``), record beside the XML what it lacks: the commit, the date
    (UTC) and the torch version. The verification page reads both (sitebuild/generate/claims.py)."""
    xmlpath = getattr(session.config.option, "xmlpath", None)
    if not xmlpath or hasattr(session.config, "workerinput"):  # xdist: the controller writes the XML
        return

    def git(*args: str) -> str:
        proc = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
        return proc.stdout.strip() if proc.returncode == 0 else ""

    record = {
        "commit": git("rev-parse", "HEAD"),
        "dirty": bool(git("status", "--porcelain", "--untracked-files=no")),
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "torch": version("torch"),
        "exitstatus": int(exitstatus),
        "junit": Path(xmlpath).name,
    }
    out = Path(xmlpath).resolve().with_name("run.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
