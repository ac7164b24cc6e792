"""``python -m sitebuild.figures`` (``make figures``): results/*.json → docs/generated/ (figures, tables, claims page).

Every results file is validated once (:func:`snippets.results.load_all`): an invalid file
stops the run with an error naming the file and the field, it is never skipped. Then every
renderer of every module in :mod:`sitebuild.render` runs, and the claims page is written.
Output is deterministic: the same inputs give byte-identical files.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from pathlib import Path

import sitebuild.render
from sitebuild import claims
from snippets.results import RESULTS_DIR, ResultsError, load_all

OUT_DIR = Path(__file__).resolve().parent.parent / "docs" / "generated"


def renderers() -> list:
    out = []
    for info in sorted(pkgutil.iter_modules(sitebuild.render.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"sitebuild.render.{info.name}")
        out += getattr(module, "RENDERERS", [])
    return out


def render_all(results_dir: Path = RESULTS_DIR, out_dir: Path = OUT_DIR) -> list[Path]:
    results = load_all(results_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for fn in renderers():
        fn(results, out_dir)
    return sorted(out_dir.iterdir())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m sitebuild.figures", description=__doc__.splitlines()[0])
    ap.add_argument("--results", type=Path, default=RESULTS_DIR)
    ap.add_argument("--out", type=Path, default=OUT_DIR)
    args = ap.parse_args(argv)
    try:
        files = render_all(args.results, args.out)
    except ResultsError as exc:
        print(f"figures: invalid results file: {exc}", file=sys.stderr)
        return 1
    claims.main()
    print(f"wrote {len(files)} files into {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
