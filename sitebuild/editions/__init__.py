"""The editions built from docs/: the offline zip, the PDF book and the Anki deck.

Every edition points its readers to the published site, never to the machine it was built on:
:func:`edition_url` is ``$SITE_URL`` when set, else mkdocs.yml's default ``site_url``
(:data:`PUBLISHED_URL`), and a local address is refused.
"""

from __future__ import annotations

import os
import re

PUBLISHED_URL = "https://transformer-paper-reading.github.io/transformer-paper-reading/"
LOCAL = re.compile(r"^https?://(127\.\d+\.\d+\.\d+|localhost|0\.0\.0\.0|\[::1\])(:\d+)?(/|$)", re.I)


class EditionURLError(ValueError):
    pass


def edition_url(url: str | None = None) -> str:
    """The address an edition links to: ``url``, else ``$SITE_URL``, else the published site; never a local one."""
    url = url or os.environ.get("SITE_URL") or PUBLISHED_URL
    if LOCAL.match(url):
        raise EditionURLError(f"an edition must link to the published site, not to {url} "
                              f"(unset SITE_URL, or set it to the address readers use)")
    return url if url.endswith("/") else url + "/"
