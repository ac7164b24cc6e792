"""The CI workflows lint clean, run with least privilege, and pin every action to a commit."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = sorted((ROOT / ".github/workflows").glob("*.yml"))
BIN = Path(sys.executable).parent


def _tool(name: str) -> str:
    path = BIN / name
    return str(path) if path.exists() else shutil.which(name)


def test_the_three_workflows_exist():
    assert {p.name for p in WORKFLOWS} == {"ci.yml", "gpu.yml", "pages.yml"}


def test_actionlint_finds_nothing():
    proc = subprocess.run([_tool("actionlint"), *map(str, WORKFLOWS)], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_zizmor_finds_nothing():
    proc = subprocess.run(
        [_tool("zizmor"), "--offline", "--persona=pedantic", "--no-progress", ".github/workflows"],
        cwd=ROOT, capture_output=True, text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "No findings" in proc.stdout + proc.stderr


def test_actions_pinned_to_full_commit_shas_and_permissions_declared():
    for wf in WORKFLOWS:
        text = wf.read_text(encoding="utf-8")
        uses = re.findall(r"uses:\s*([^\s#]+)", text)
        assert uses, wf.name
        assert [u for u in uses if not re.fullmatch(r"[\w.-]+/[\w./-]+@[0-9a-f]{40}", u)] == [], wf.name
        assert re.search(r"^permissions:\n  contents: read$", text, re.M), f"{wf.name}: top-level read-only permissions"
