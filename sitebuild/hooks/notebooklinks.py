"""MkDocs hook (``hooks:`` in mkdocs.yml and mkdocs-offline.yml): links inside notebook pages work.

A notebook's Markdown cells link the way Jupyter and a repository browser resolve them, from
``docs/notebooks/``: ``../chapters/01-why-attention/index.md`` for its chapter, ``ch02-….ipynb``
for another notebook, and its own file name for the download. MkDocs neither rewrites nor
checks links in notebook pages (mkdocs-jupyter renders them with nbconvert), so this hook does:

* a link to a page's source (``.md`` or another ``.ipynb``) becomes that page's URL, relative
  to the notebook page (so it works with directory URLs and in the offline edition alike);
* a link to the notebook's own file stays as it is, since ``include_source: true`` copies the
  file next to the page in both layouts, and gets a ``download`` attribute;
* a link to a source that is not in the site fails the build;
* a figure output gets the alt text of its cell's ``"alt"`` metadata (nbconvert's lab template
  ignores it and writes "No description has been provided for this image"); a figure whose
  cell has none fails the build.
"""

from __future__ import annotations

import json
import posixpath
import re
from html import escape

from mkdocs.exceptions import PluginError
from mkdocs.utils import get_relative_url

NO_ALT = 'alt="No description has been provided for this image"'
LINK = re.compile(r'(<a\s[^>]*?href=")([^"#:?]+\.(?:md|ipynb))(#[^"]*)?(")')


def on_page_content(html, page, config, files, **kwargs):
    src = page.file.src_uri
    if not src.endswith(".ipynb"):
        return html
    own = posixpath.basename(src)

    def rewrite(m: re.Match) -> str:
        target = m[2]
        if target == own:
            return f"{m[1]}{target}{m[3] or ''}{m[4]} download"
        path = posixpath.normpath(posixpath.join(posixpath.dirname(src), target))
        file = files.get_file_from_path(path)
        if file is None or file.page is None:
            raise PluginError(f"notebooklinks: {src} links to {target}, which is not a page of the site")
        return f"{m[1]}{get_relative_url(file.url, page.url)}{m[3] or ''}{m[4]}"

    return _alt_texts(LINK.sub(rewrite, html), page)


def _alt_texts(html: str, page) -> str:
    """Each image output, in page order, takes the ``alt`` of the cell it came from."""
    nb = json.loads(open(page.file.abs_src_path, encoding="utf-8").read())
    alts = [cell.get("metadata", {}).get("alt") for cell in nb["cells"] if cell["cell_type"] == "code"
            for out in cell.get("outputs", []) if {"image/png", "image/jpeg", "image/svg+xml"} & set(out.get("data", {}))]
    if html.count(NO_ALT) != len(alts) or not all(alts):
        raise PluginError(f"notebooklinks: {page.file.src_uri}: give every cell that draws a figure a Chinese "
                          '"alt" in its metadata (Jupyter: Property Inspector → Cell Metadata)')
    texts = iter(alts)
    return re.sub(re.escape(NO_ALT), lambda m: f'alt="{escape(next(texts))}"', html)
