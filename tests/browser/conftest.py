"""Browser fixtures: the served site's visit cache and a gzip server (Chromium: tests/conftest.py).

Every test in this folder is marked ``browser`` (``make test-fast`` deselects them).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sitebuild.serve import serve
from tests.browser.helpers import Site


def pytest_collection_modifyitems(items):
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.fspath).parents:
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def site(request, chromium_browser, site_url, built_site, shared):
    """Each page opened once per run: the xdist workers share the visits' reports (and, while one
    visits a page, the others visit pages this run's tests ask for: ``pages``)."""
    pages = [item.callspec.params["path"] for item in request.session.items
             if "site" in getattr(item, "fixturenames", ())
             and "path" in getattr(getattr(item, "callspec", None), "params", {})]
    site = Site(chromium_browser, site_url, built_site, shared, pages)
    yield site
    site.close()


@pytest.fixture(autouse=True)
def _record_visits(request):
    """Each page visit this test made, as a JUnit property ``visit`` = "PAGE SECONDS"."""
    yield
    if "site" in request.fixturenames:
        site = request.getfixturevalue("site")
        request.node.user_properties.extend(("visit", f"{page} {seconds}") for page, seconds in site.visits)
        site.visits.clear()


@pytest.fixture(scope="session")
def gzip_site_url(built_site):
    """The same build, served with gzip like GitHub Pages, for the transfer budgets."""
    with serve(built_site, compress=True) as url:
        yield url
