"""MkDocs hook (``hooks:`` in mkdocs.yml and mkdocs-offline.yml): a 「最后更新」 date on each page, from git.

A page's date is the day of the latest commit that touched its source file or a file it includes
(``--8<-- "docs/chapters/03-…/questions.md"``, ``"snippets/attention.py:sdpa"``): the question bank
changes when a chapter's questions.md does. It is set as ``page.meta.revision_date``, which
Material's own template shows under the article (partials/source-file.html): no script, no request.

One ``git log --name-only`` over the repository per build (a fraction of a second), not one per page.
Why not mkdocs-git-revision-date-localized-plugin: on GitHub Actions with the default shallow checkout
it logs a warning (``fetch-depth``) that ``mkdocs build --strict`` turns into a failed build, and it runs
``git log`` once per page. Where the dates cannot be known, the pages carry none, and the build says so
at INFO level (never a warning, so a strict build stays clean):

* not a git checkout (a source tarball), or no ``git`` on the PATH;
* a shallow clone (CI's default checkout): its oldest commit would stand for every earlier change,
  so the dates would be wrong; CI that publishes the site checks out the full history (``fetch-depth: 0``);
* a page whose sources git does not track (pages generated into docs/generated/).
"""

from __future__ import annotations

import logging
import re
import subprocess
from pathlib import Path

log = logging.getLogger("mkdocs.hooks.lastupdated")
INCLUDE = re.compile(r'^[ \t]*--8<--[ \t]+"([^"]+)"', re.M)

_dates: dict[str, str] | None = None  # repository-relative path -> YYYY-MM-DD of its latest commit
_root: Path | None = None


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout


def file_dates(cwd: Path) -> tuple[Path | None, dict[str, str]]:
    """(repository root, {path: date of the latest commit that touched it}); empty where git cannot tell."""
    try:
        root = Path(_git(cwd, "rev-parse", "--show-toplevel").strip())
        if _git(root, "rev-parse", "--is-shallow-repository").strip() == "true":
            log.info("lastupdated: a shallow clone: no 「最后更新」 dates (check out the full history to have them)")
            return root, {}
        out = _git(root, "-c", "core.quotepath=false", "log", "--format=%x00%cs", "--name-only", "--no-renames", "HEAD")
    except (OSError, subprocess.CalledProcessError) as exc:
        log.info(f"lastupdated: no git history here ({exc.__class__.__name__}): no 「最后更新」 dates")
        return None, {}
    dates: dict[str, str] = {}
    for block in out.split("\x00")[1:]:
        date, _, names = block.partition("\n")
        for name in names.split("\n"):
            if name:
                dates.setdefault(name, date.strip())  # newest first: the first time a path is seen is its latest commit
    return root, dates


def page_date(src_path: Path, markdown: str, root: Path, dates: dict[str, str]) -> str | None:
    """The latest date among the page's source and the files it includes, or None."""
    found = []
    for path in [src_path] + [root / m.split(":")[0] for m in INCLUDE.findall(markdown)]:
        try:
            rel = path.resolve().relative_to(root).as_posix()
        except ValueError:
            continue
        if rel in dates:
            found.append(dates[rel])
    return max(found) if found else None


def on_config(config, **kwargs):
    global _dates, _root
    _root, _dates = file_dates(Path(config["docs_dir"]))
    return config


def on_page_markdown(markdown, page, config, files, **kwargs):
    if _dates and _root is not None and page.file.abs_src_path:
        date = page_date(Path(page.file.abs_src_path), markdown, _root, _dates)
        if date:
            page.meta["revision_date"] = date
    return markdown
