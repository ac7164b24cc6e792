"""MkDocs hooks (named under ``hooks:`` in mkdocs-offline.yml).

Over file:// a Web Worker cannot start, so Material's search runs in a hidden iframe
through the iframe-worker shim (npm ``iframe-worker``, pinned in package-lock.json). The
offline plugin would load it from unpkg.com; mkdocs-offline.yml names a local copy
instead, and :func:`on_post_build` copies it from node_modules into the built site.
"""

from __future__ import annotations

import shutil
from pathlib import Path

IFRAME_WORKER_SHIM = Path(__file__).resolve().parents[2] / "node_modules/iframe-worker/shim/index.js"


def on_post_build(config, **kwargs):
    """Write each local polyfill named 'iframe-worker' into the site."""
    for script in config.extra.get("polyfills", []):
        src = str(script)
        if "iframe-worker" in src and "://" not in src:
            target = Path(config.site_dir) / src
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(IFRAME_WORKER_SHIM, target)
