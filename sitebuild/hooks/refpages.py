"""MkDocs hook (``hooks:`` in mkdocs.yml and mkdocs-offline.yml): the reference pages' chapter pages.

The verification list and the question bank are an index page and one page per chapter
(:mod:`sitebuild.refpages`). This hook

* **adds the chapter pages** to the build, for every chapter of the nav: ``verification/chNN.md``
  and ``interview/chNN.md``, each a title, a heading and the include of the Markdown that
  ``make figures`` wrote for it (``docs/generated/verification-chNN.md``,
  ``docs/generated/question-bank-chNN.md``). They are not in the sidebar (``not_in_nav``): the
  index page lists them and each links its neighbours;
* **sends the index pages' old anchors on.** Before the split every claim was an anchor of
  ``verification/`` (``#ch01-c03``) and every question one of ``interview/`` (``#q-2-4``). The
  built index page gets the same small script in its ``<head>`` that
  :mod:`sitebuild.hooks.chapterpages` gives a chapter's first page: an anchor that now lives on
  a chapter page replaces the location with that page and the same anchor, before the page
  paints. The map is read from the built chapter pages (every id they hold that the index lacks).

Badges keep their one spelling in the pages, ``/verification.md#ch01-c03``:
:func:`sitebuild.hooks.claimanchors.number_badges` points each at its chapter's page.
"""

from __future__ import annotations

from pathlib import Path

from mkdocs.structure.files import File, InclusionLevel
from mkdocs.utils import get_relative_url

from sitebuild.config import _flatten, chapters_of
from sitebuild.hooks.chapterpages import add_anchor_map, article_ids
from sitebuild.refpages import REFERENCES, of_page, page_markdown, page_src

_ids: dict[str, tuple[str, list[str]]] = {}  # src of an index or chapter page -> (url, ids in its article)
_chapters: list[str] = []  # the chapters' keys, in nav order


def on_files(files, config, **kwargs):
    _ids.clear()
    chapters = chapters_of(_flatten(config["nav"] or []), Path(config["docs_dir"]))
    _chapters[:] = list(chapters)
    for ref in REFERENCES:
        if files.get_file_from_path(ref.index) is None:
            continue
        for key, (title, _) in chapters.items():
            files.append(File.generated(config, page_src(ref, key), content=page_markdown(ref, key, title),
                                        inclusion=InclusionLevel.NOT_IN_NAV))
    return files


def on_post_page(output: str, page, config, **kwargs) -> str:
    src = page.file.src_uri
    if of_page(src) or src in {ref.index for ref in REFERENCES}:
        _ids[src] = (page.url, article_ids(output))
    return output


def on_post_build(config, **kwargs):
    site = Path(config["site_dir"])
    for ref in REFERENCES:
        if ref.index not in _ids:
            continue
        url, own = _ids[ref.index]
        seen, targets = set(own), {}
        for key in _chapters:
            page_url, ids = _ids[page_src(ref, key)]
            moved = [i for i in dict.fromkeys(ids) if i not in seen]
            seen.update(moved)
            if moved:
                targets[get_relative_url(page_url, url)] = moved
        add_anchor_map(site, url, targets)
