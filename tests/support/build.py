"""mkdocs builds for the suite: the real site once per session (conftest), and tiny trees for broken builds."""

from __future__ import annotations

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


def tiny_site(where: Path, pages: dict[str, str]) -> Path:
    """A small site that inherits the real mkdocs.yml and mkdocs-offline.yml (extensions, plugins, validation)."""
    docs = where / "docs"
    (docs / "includes").mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "docs/jieba-dict.txt", docs / "jieba-dict.txt")
    shutil.copy(ROOT / "docs/includes/abbreviations.md", docs / "includes/abbreviations.md")
    shutil.copytree(ROOT / "docs/assets", docs / "assets", dirs_exist_ok=True)  # KaTeX CSS and fonts, extra.css, katex-init.js
    for name, text in pages.items():
        (docs / name).write_text(text, encoding="utf-8")
    nav = "\n".join(f"  - {name}" for name in pages)
    # hook paths resolve from the config's folder: name the real ones
    (where / "mkdocs.yml").write_text(f"INHERIT: {ROOT / 'mkdocs.yml'}\ndocs_dir: docs\nnav:\n{nav}\n"
                                      f"hooks:\n  - {ROOT / 'sitebuild/mathrender.py'}\n", encoding="utf-8")
    # the offline edition's config over the same pages (hook paths resolve from the config's folder)
    (where / "mkdocs-offline.yml").write_text(
        f"INHERIT: {ROOT / 'mkdocs-offline.yml'}\ndocs_dir: docs\nnav:\n{nav}\n"
        f"hooks:\n  - {ROOT / 'sitebuild/mathrender.py'}\n  - {ROOT / 'sitebuild/hooks.py'}\n", encoding="utf-8")
    return where
