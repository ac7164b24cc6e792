"""Run code as a reader would after copying it: a fresh interpreter, an empty folder, no `snippets` package."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def run_fresh(code: str, tmp_path: Path, timeout: int = 300) -> str:
    """Run ``code`` in a new interpreter (cwd = tmp_path, PYTHONPATH unset, ``import snippets`` blocked).

    ``pip install -e .`` makes the package importable from anywhere, so it is blocked
    explicitly: the copy must stand alone. Returns stdout; fails with the child's stderr.
    """
    script = tmp_path / "snippet_copy_run.py"  # not "copy.py": that would shadow the stdlib
    script.write_text("import sys\nsys.modules['snippets'] = None  # the copy must stand alone\n" + code + "\n",
                      encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout
