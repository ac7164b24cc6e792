"""Release notes generated from the errata (tools/release_notes.py, make release-notes)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from sitebuild.editions import PUBLISHED_URL
from tools import release_notes

ROOT = Path(__file__).resolve().parents[2]
ENTRIES = yaml.safe_load((ROOT / "docs/errata.yml").read_text(encoding="utf-8"))["entries"]


def test_release_notes_hold_every_entry_after_the_date_and_no_other(monkeypatch):
    monkeypatch.delenv("SITE_URL", raising=False)
    dates = sorted({e["date"] for e in ENTRIES})
    since = dates[0]  # the entries of the first day are left out
    text = release_notes.notes(since=since, version="v9.9.9")
    listed = re.findall(r"\[勘误 ([\w-]+)\]\(" + re.escape(PUBLISHED_URL) + r"errata/#([\w-]+)\)", text)
    assert all(a == b for a, b in listed)
    expected = [e["id"] for e in ENTRIES if e["date"] > since]
    assert sorted(a for a, _ in listed) == sorted(expected) and expected
    assert text.startswith("## v9.9.9") and f"共 {len(expected)} 条" in text
    for e in ENTRIES:
        if e["date"] > since:
            assert e["now"] in text and e["was"] in text
    assert "127.0.0.1" not in text and "localhost" not in text


def test_release_notes_link_each_page_on_the_published_site(monkeypatch):
    monkeypatch.delenv("SITE_URL", raising=False)
    text = release_notes.notes()
    assert text.count("[原文位置](" + PUBLISHED_URL + "chapters/") == sum(e["page"].startswith("chapters/") for e in ENTRIES)
    assert f"[勘误页]({PUBLISHED_URL}errata/)" in text
    assert not re.search(r"\]\([^)]*\.md[#)]", text)  # a page's URL on the site, never its source file
    assert release_notes.notes(since="2999-01-01").count("\n- ") == 0


def test_release_notes_default_window_is_the_latest_version_tag(tmp_path):
    import subprocess

    def git(*args):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True,
                       env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
                            "GIT_COMMITTER_EMAIL": "t@e", "GIT_COMMITTER_DATE": "2026-12-01T12:00:00",
                            "GIT_AUTHOR_DATE": "2026-12-01T12:00:00", "PATH": "/usr/bin:/bin"})

    git("init", "-q")
    assert release_notes.last_tag_date(tmp_path) is None
    git("commit", "-q", "--allow-empty", "-m", "x")
    git("tag", "v0.1.0")
    assert release_notes.last_tag_date(tmp_path) is None  # the release itself: nothing before it
    git("commit", "-q", "--allow-empty", "-m", "y")
    assert release_notes.last_tag_date(tmp_path) == ("v0.1.0", "2026-12-01")
    git("tag", "v0.2.0")  # the release workflow runs on the tagged commit: the window starts at v0.1.0
    assert release_notes.last_tag_date(tmp_path) == ("v0.1.0", "2026-12-01")
