"""「最后更新」 dates from git (sitebuild/hooks/lastupdated.py): right on the built pages, none (and no
warning, so a strict build stays clean) where git cannot tell: a shallow clone, no repository."""

from __future__ import annotations

import logging
import re
import subprocess
from pathlib import Path

import pytest

from sitebuild.hooks import lastupdated

ROOT = Path(__file__).resolve().parents[2]
DATE = re.compile(r'<aside class="md-source-file">.*?title="最后更新">.*?</span>\s*(\d{4}-\d{2}-\d{2})\s*</span>', re.S)


def _git(cwd: Path, *args: str, date: str = "2026-01-02T12:00:00") -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e",
           "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date, "PATH": "/usr/bin:/bin", "HOME": str(cwd)}
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True, env=env).stdout


@pytest.fixture
def repo(tmp_path):
    r = tmp_path / "repo"
    (r / "docs").mkdir(parents=True)
    (r / "snippets").mkdir()
    _git(r, "init", "-q")
    (r / "docs/page.md").write_text('# 页\n\n--8<-- "snippets/code.py:sec"\n', encoding="utf-8")
    (r / "snippets/code.py").write_text("x = 1\n", encoding="utf-8")
    (r / "docs/other.md").write_text("# 另一页\n", encoding="utf-8")
    _git(r, "add", ".")
    _git(r, "commit", "-q", "-m", "one", date="2026-01-02T12:00:00")
    (r / "snippets/code.py").write_text("x = 2\n", encoding="utf-8")
    _git(r, "commit", "-q", "-am", "two", date="2026-03-04T12:00:00")
    (r / "docs/other.md").write_text("# 另一页（改）\n", encoding="utf-8")
    _git(r, "commit", "-q", "-am", "three", date="2026-05-06T12:00:00")
    return r


def test_a_page_is_as_new_as_its_newest_source_or_include(repo):
    root, dates = lastupdated.file_dates(repo / "docs")
    assert root == repo.resolve() and dates == {"docs/page.md": "2026-01-02", "snippets/code.py": "2026-03-04",
                                                "docs/other.md": "2026-05-06"}
    page = repo / "docs/page.md"
    assert lastupdated.page_date(page, page.read_text(encoding="utf-8"), root, dates) == "2026-03-04"
    other = repo / "docs/other.md"
    assert lastupdated.page_date(other, other.read_text(encoding="utf-8"), root, dates) == "2026-05-06"
    untracked = repo / "docs/generated.md"
    assert lastupdated.page_date(untracked, "# 生成的页\n", root, dates) is None


def test_no_dates_and_no_warning_in_a_shallow_clone_or_outside_git(repo, tmp_path, caplog):
    shallow = tmp_path / "shallow"
    _git(tmp_path, "clone", "-q", "--depth", "1", repo.as_uri(), str(shallow))
    outside = tmp_path / "tarball"
    outside.mkdir()
    with caplog.at_level(logging.INFO, logger="mkdocs"):
        assert lastupdated.file_dates(shallow / "docs")[1] == {}
        assert lastupdated.file_dates(outside)[1] == {}
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert sum("lastupdated" in r.getMessage() for r in caplog.records) == 2


def test_built_pages_show_the_date_of_their_latest_commit(built_site):
    """Every page built from a tracked source shows 「最后更新」 with git's date for it: a chapter
    page (its own file) and the chapter's interview page (its questions.md included)."""
    _root, dates = lastupdated.file_dates(ROOT)
    if not dates:
        pytest.skip("no full git history in this checkout (shallow clone or tarball)")
    checked = 0
    for src in sorted((ROOT / "docs/chapters").glob("*/*.md")):
        if src.name == "questions.md":
            continue
        url = src.relative_to(ROOT / "docs").with_suffix("").as_posix()
        url = url.removesuffix("/index")
        html = (built_site / url / "index.html").read_text(encoding="utf-8")
        expected = lastupdated.page_date(src, src.read_text(encoding="utf-8"), ROOT, dates)
        shown = DATE.search(html)
        if expected is None:  # a file not committed yet
            continue
        assert shown and shown.group(1) == expected, (url, expected)
        checked += 1
    assert checked >= 25
    interview = ROOT / "docs/chapters/03-scaled-dot-product/interview.md"
    questions = "docs/chapters/03-scaled-dot-product/questions.md"
    expected = lastupdated.page_date(interview, interview.read_text(encoding="utf-8"), ROOT, dates)
    assert questions in dates and expected >= dates[questions]
