"""mkdocs builds for the suite: the real site once per session (conftest), and tiny trees for broken builds.

``python -m tests.support.build SITE_DIR PORT RECORD`` builds the real site for a server on
``PORT`` and writes the result to ``RECORD`` (JSON): how tests/conftest.py runs the session's
build in the background (tests/support/shared.py, :func:`~tests.support.shared.start`).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def mkdocs_build(config_dir: Path, site_dir: Path, site_url: str | None = None,
                 config: str = "mkdocs.yml") -> subprocess.CompletedProcess:
    """``mkdocs build --strict`` in ``config_dir``; returns the finished process."""
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    if site_url:
        env["SITE_URL"] = site_url
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", config,
                           "--site-dir", str(site_dir)],
                          cwd=config_dir, env=env, capture_output=True, text=True, timeout=600)


def mkdocs_builds(builds: list[tuple[Path, Path]]) -> list[subprocess.CompletedProcess]:
    """``mkdocs build --strict`` for each ``(config_dir, site_dir)``, one after another in one new
    interpreter: MkDocs, its plugins and jieba's dictionary load once, not once per build.

    Each result carries the build's exit status (0, or 1 as ``mkdocs build`` exits on an error)
    and its log lines (``WARNING -  …``, ``ERROR -  …``) as ``stderr``, what the command prints.
    """
    spec = json.dumps([[str(c), str(s)] for c, s in builds])
    code = ("import json, sys; from tests.support.build import _build_here; "
            "print(json.dumps([_build_here(c, s) for c, s in json.loads(sys.argv[1])]))")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    env.pop("SITE_URL", None)
    proc = subprocess.run([sys.executable, "-c", code, spec], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"the build runner failed:\n{proc.stderr[-3000:]}")
    return [subprocess.CompletedProcess(["mkdocs", "build", "--strict", "-f", str(Path(c) / "mkdocs.yml")],
                                        r["returncode"], "", r["log"])
            for (c, _), r in zip(builds, json.loads(proc.stdout.splitlines()[-1]))]


def _build_here(config_dir: str, site_dir: str) -> dict:
    """One ``mkdocs build --strict`` in this interpreter, as the command runs it (from ``config_dir``:
    the config's relative paths resolve from there). Returns the exit status and the log."""
    import logging

    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    lines: list[str] = []
    handler = logging.Handler(logging.INFO)
    handler.emit = lambda record: lines.append(f"{record.levelname:<7} -  {record.getMessage()}")
    logger = logging.getLogger("mkdocs")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    cwd = os.getcwd()
    os.chdir(config_dir)
    try:
        cfg = load_config("mkdocs.yml", strict=True, site_dir=site_dir)
        cfg.plugins.on_startup(command="build", dirty=False)
        try:
            build(cfg)
        finally:
            cfg.plugins.on_shutdown()
        returncode = 0
    except Exception as exc:  # noqa: BLE001 - what `mkdocs build` prints before exiting with 1
        lines.append(f"Error: {exc}")
        returncode = 1
    finally:
        os.chdir(cwd)
        logger.removeHandler(handler)
    return {"returncode": returncode, "log": "\n".join(lines) + "\n"}


def tiny_site(where: Path, pages: dict[str, str]) -> Path:
    """A small site that inherits the real mkdocs.yml and mkdocs-offline.yml (extensions, plugins, validation)."""
    docs = where / "docs"
    (docs / "includes").mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "docs/jieba-dict.txt", docs / "jieba-dict.txt")
    shutil.copy(ROOT / "docs/includes/abbreviations.md", docs / "includes/abbreviations.md")
    shutil.copytree(ROOT / "docs/assets", docs / "assets", dirs_exist_ok=True)  # KaTeX CSS and fonts, extra.css, page-init.js
    for name, text in pages.items():
        (docs / name).write_text(text, encoding="utf-8")
    nav = "\n".join(f"  - {name}" for name in pages)
    # hook paths resolve from the config's folder: name the real ones
    (where / "mkdocs.yml").write_text(f"INHERIT: {ROOT / 'mkdocs.yml'}\ndocs_dir: docs\nnav:\n{nav}\n"
                                      f"hooks:\n  - {ROOT / 'sitebuild/hooks/mathrender.py'}\n", encoding="utf-8")
    # the offline edition's config over the same pages (hook paths resolve from the config's folder)
    (where / "mkdocs-offline.yml").write_text(
        f"INHERIT: {ROOT / 'mkdocs-offline.yml'}\ndocs_dir: docs\nnav:\n{nav}\n"
        f"hooks:\n  - {ROOT / 'sitebuild/hooks/mathrender.py'}\n  - {ROOT / 'sitebuild/hooks/iframeworker.py'}\n", encoding="utf-8")
    return where


def site_build_command(site_dir: Path, port: int) -> list[str]:
    """The command that builds the real site for a server on ``port`` (the record's path follows)."""
    return [sys.executable, "-m", "tests.support.build", str(site_dir), str(port)]


def build_site(site_dir: Path, port: int) -> dict:
    """The real site built with ``--strict`` for ``http://127.0.0.1:{port}/``: where, and how it went."""
    try:
        proc = mkdocs_build(ROOT, site_dir, site_url=f"http://127.0.0.1:{port}/")
        returncode, log = proc.returncode, proc.stdout + proc.stderr
    except Exception as exc:  # noqa: BLE001 - the record reports it; the tests fail with it
        returncode, log = -1, f"{type(exc).__name__}: {exc}"
    return {"site_dir": str(site_dir), "port": port, "returncode": returncode, "log": log}


if __name__ == "__main__":
    from tests.support.shared import write_record

    site_dir, port, record = sys.argv[1:4]
    write_record(Path(record), build_site(Path(site_dir), int(port)))
