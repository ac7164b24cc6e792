"""The CI workflows lint clean, run with least privilege, and pin every action to a commit."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted((ROOT / ".github/workflows").glob("*.yml"))
BIN = Path(sys.executable).parent


def _tool(name: str) -> str:
    path = BIN / name
    return str(path) if path.exists() else shutil.which(name)


def test_ci_runs_the_one_entry_point():
    """ci.yml runs .ci/run, which runs the README's test command: one CI entry point, no drift."""
    ci = (ROOT / ".github/workflows/ci.yml").read_text(encoding="utf-8")
    assert re.search(r"run: bash \.ci/run( \"\$TIER\")?$", ci, re.M)
    assert "apt-get" not in ci and "make test" not in ci
    assert (ROOT / ".ci/run").read_text(encoding="utf-8").rstrip().endswith("make test")
    assert "make test " in (ROOT / "README.md").read_text(encoding="utf-8")


def test_no_build_step_uses_a_test_file():
    """Nothing in snippets/ or sitebuild/ imports tests; no Makefile, mkdocs or workflow line names tests/
    except the pytest command lines themselves."""
    for path in [*(ROOT / "snippets").rglob("*.py"), *(ROOT / "sitebuild").rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not any(n == "tests" or n.startswith("tests.") for n in names), path
    for path in [ROOT / "Makefile", ROOT / "mkdocs.yml", ROOT / "mkdocs-offline.yml", *WORKFLOWS]:
        lines = [ln for ln in path.read_text(encoding="utf-8").splitlines()
                 if re.search(r"\btests\b", ln) and "pytest" not in ln and not ln.lstrip().startswith("#")]
        assert lines == [], (path.name, lines)


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


def test_release_attaches_the_editions_of_the_tagged_commit():
    """release.yml: on a v* tag, test the commit (.ci/run), build the editions, attach them, with the
    release notes from the errata as the description."""
    text = (ROOT / ".github/workflows/release.yml").read_text(encoding="utf-8")
    assert re.search(r"^on:\n  push:\n    tags: \[\"v\*\"\]$", text, re.M)
    assert "run: bash .ci/run" in text
    for target in ("make offline", "make pdf", "make deck"):
        assert target in text
    upload = text[text.index("gh release create"):]
    for asset in ("dist/site-offline.zip", "dist/transformer-paper-reading.pdf", "dist/deck.apkg", "dist/deck.tsv",
                  "dist/verification-table.md"):
        assert asset in upload, asset
    assert "make release-notes" in text and "--notes-file dist/release-notes.md" in upload
    assert "contents: write" in text.split("jobs:", 1)[1]  # only the job may write
