"""Shared fixtures: the one strict build of the real site per test session, and a local server for it.

The build uses the real mkdocs.yml with ``SITE_URL`` set to the test server's origin, so
instant navigation behaves exactly as under ``make serve``. Everything else a test needs
lives in tests/support/ (one helper layer) or in the folder's own conftest (tests/browser/).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sitebuild.serve import free_port, serve
from tests.support.build import ROOT, mkdocs_build


@pytest.fixture(scope="session")
def site_port() -> int:
    return free_port()


@pytest.fixture(scope="session")
def built_site(tmp_path_factory, site_port) -> Path:
    """The site, built once per session with ``--strict``; fails loudly with mkdocs' log."""
    site_dir = tmp_path_factory.mktemp("site") / "site"
    proc = mkdocs_build(ROOT, site_dir, site_url=f"http://127.0.0.1:{site_port}/")
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stdout}\n{proc.stderr}"
    return site_dir


@pytest.fixture(scope="session")
def site_url(built_site, site_port) -> str:
    """Serve the built site on 127.0.0.1 for the browser tests."""
    with serve(built_site, site_port) as url:
        yield url
