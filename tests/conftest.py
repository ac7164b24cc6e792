"""Shared fixtures: one strict build of the site per test session, and a local server.

The build uses the real mkdocs.yml with ``SITE_URL`` set to the test server's origin,
so instant navigation behaves exactly as under ``make serve``.
"""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MKDOCS = [sys.executable, "-m", "mkdocs"]


def mkdocs_build(config_dir: Path, site_dir: Path, site_url: str | None = None) -> subprocess.CompletedProcess:
    """Run ``mkdocs build --strict`` in ``config_dir``; return the finished process."""
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    if site_url:
        env["SITE_URL"] = site_url
    return subprocess.run(
        [*MKDOCS, "build", "--strict", "--site-dir", str(site_dir)],
        cwd=config_dir,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def site_port() -> int:
    return _free_port()


@pytest.fixture(scope="session")
def built_site(tmp_path_factory, site_port) -> Path:
    """The site, built once per session with ``--strict``; fails loudly with mkdocs' log."""
    site_dir = tmp_path_factory.mktemp("site") / "site"
    proc = mkdocs_build(ROOT, site_dir, site_url=f"http://127.0.0.1:{site_port}/")
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stdout}\n{proc.stderr}"
    return site_dir


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep pytest output readable
        pass


@pytest.fixture(scope="session")
def site_url(built_site, site_port) -> str:
    """Serve the built site on 127.0.0.1 for the browser tests."""
    handler = functools.partial(_QuietHandler, directory=str(built_site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", site_port), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{site_port}/"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="session")
def docs_copy(tmp_path_factory) -> Path:
    """A throw-away copy of everything mkdocs reads, for tests that break the docs on purpose."""
    dst = tmp_path_factory.mktemp("docs-copy")
    shutil.copy(ROOT / "mkdocs.yml", dst / "mkdocs.yml")
    for name in ("docs", "snippets"):
        shutil.copytree(ROOT / name, dst / name, ignore=shutil.ignore_patterns("__pycache__"))
    return dst
