"""Browser fixtures: one Chromium per session, the served site's visit cache, and a gzip server.

Every test in this folder is marked ``browser`` (``make test-fast`` deselects them).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sitebuild.serve import serve
from tests.browser.helpers import CHROMIUM, Site, launch


def pytest_collection_modifyitems(items):
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.fspath).parents:
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def chromium_browser():
    """One Chromium for the whole session (the suite runs on 2 shared cores)."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM} (set $CHROMIUM)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = launch(p)
        yield browser
        browser.close()


@pytest.fixture(scope="session")
def site(chromium_browser, site_url, built_site) -> Site:
    return Site(chromium_browser, site_url, built_site)


@pytest.fixture(scope="session")
def gzip_site_url(built_site):
    """The same build, served with gzip like GitHub Pages, for the transfer budgets."""
    with serve(built_site, compress=True) as url:
        yield url
