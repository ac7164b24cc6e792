"""``python -m sitebuild.editions.offline`` (``make offline``): the offline edition.

``mkdocs build -f mkdocs-offline.yml`` into ``site-offline/`` (open ``index.html`` from disk,
search included), then ``dist/site-offline.zip`` with ``site-offline/`` as its top folder.
Its canonical links, sitemap and BibTeX entries carry the published address
(:func:`sitebuild.editions.edition_url`), never the machine it was built on.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from sitebuild.editions import edition_url

ROOT = Path(__file__).resolve().parents[2]


def build_offline(site_dir: Path, zip_path: Path | None = None, strict: bool = True,
                  config_dir: Path = ROOT) -> subprocess.CompletedProcess:
    """Build ``config_dir/mkdocs-offline.yml`` into ``site_dir``; zip it when ``zip_path`` is given."""
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1", SITE_URL=edition_url())
    cmd = [sys.executable, "-m", "mkdocs", "build", "-f", "mkdocs-offline.yml", "--site-dir", str(site_dir)]
    proc = subprocess.run(cmd + (["--strict"] if strict else []), cwd=config_dir, env=env,
                          capture_output=True, text=True, timeout=900)
    if proc.returncode == 0 and zip_path is not None:
        zip_path.parent.mkdir(parents=True, exist_ok=True)
        archive = shutil.make_archive(str(zip_path.with_suffix("")), "zip", root_dir=site_dir.parent,
                                      base_dir=site_dir.name)
        if Path(archive) != zip_path:
            Path(archive).replace(zip_path)
    return proc


def main() -> int:
    site_dir, zip_path = ROOT / "site-offline", ROOT / "dist" / "site-offline.zip"
    shutil.rmtree(site_dir, ignore_errors=True)
    proc = build_offline(site_dir, zip_path)
    sys.stdout.write(proc.stdout)
    sys.stderr.write(proc.stderr)
    if proc.returncode == 0:
        print(f"offline edition: site-offline/ and dist/site-offline.zip "
              f"({zip_path.stat().st_size / 1e6:.2f} MB); open site-offline/index.html")
    return proc.returncode


if __name__ == "__main__":
    raise SystemExit(main())
