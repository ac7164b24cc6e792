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


RUNNER = '''
import sys, traceback
sys.modules["snippets"] = None  # every copy must stand alone
failed = []
for label, code in PROGRAMS:
    try:
        exec(compile(code, label, "exec"), {"__name__": "__main__"})  # a fresh namespace per program
    except BaseException:
        failed.append(label)
        print(f"--- {label}", file=sys.stderr)
        traceback.print_exc()
print("failed:", failed)
sys.exit(1 if failed else 0)
'''


def run_fresh_each(programs: dict[str, str], tmp_path: Path, timeout: int = 600) -> str:
    """Run each program in its own namespace, all in one new interpreter (torch is imported once).

    Same isolation from the repository as :func:`run_fresh`; on failure the message names
    every program that failed, with its traceback.
    """
    return run_fresh(f"PROGRAMS = {list(programs.items())!r}\n" + RUNNER, tmp_path, timeout)
