"""Debian's Chromium under playwright, and a fresh build of the site to point it at.

Used by ``make audit``, ``make screenshots`` and ``make pdf`` (and by the browser tests).
Chromium is ``$CHROMIUM`` (default /usr/bin/chromium); never ``playwright install``.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from sitebuild.serve import free_port, serve

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("CHROMIUM") or "/usr/bin/chromium"
# Flags without which Chromium tries to reach Google's hosts from this closed network.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@contextlib.contextmanager
def chromium():
    """One headless Chromium for a ``with`` block."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


class BuildError(RuntimeError):
    """``mkdocs build --strict`` failed; the message is its log."""


@contextlib.contextmanager
def served_fresh_build(compress: bool = False):
    """Build the site with ``--strict`` into a temporary folder and serve it on 127.0.0.1.

    ``site_url`` is the server's own origin, so that instant navigation works as under
    ``make serve``. Yields ``(base_url, site_dir)``.
    """
    port = free_port()
    origin = f"http://127.0.0.1:{port}/"
    with tempfile.TemporaryDirectory(prefix="site-") as tmp:
        site_dir = Path(tmp) / "site"
        env = dict(os.environ, NO_MKDOCS_2_WARNING="1", SITE_URL=origin)
        build = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site_dir)],
                               cwd=ROOT, env=env, capture_output=True, text=True)
        if build.returncode != 0:
            raise BuildError(build.stdout + build.stderr)
        with serve(site_dir, port, compress=compress) as base:
            yield base, site_dir
