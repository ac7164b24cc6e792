"""``python -m sitebuild.figures`` (``make figures``): results/*.json → docs/generated/ (figures, tables, claims page).

Every results file is validated once (:func:`snippets.results.load_all`): an invalid file
stops the run with an error naming the file and the field, it is never skipped. Then every
renderer of every module in :mod:`sitebuild.render` runs; then every figure ``<name>.svg`` gets
its companions (:func:`figure_companions`), and the claims page is written.
Output is deterministic: the same inputs give byte-identical files.
"""

from __future__ import annotations

import argparse
import html
import importlib
import pkgutil
import re
import sys
from pathlib import Path

import sitebuild.render
from sitebuild import claims
from sitebuild.render.style import dark_variant, md_caption
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
    by_file = {r["_file"]: r for r in results}
    for svg in sorted(out_dir.glob("*.svg")):
        if not svg.stem.endswith("-dark"):
            figure_companions(svg, by_file)
    return sorted(out_dir.iterdir())


SOURCE = re.compile(r"<dc:source>(.*?)</dc:source>", re.S)
NO_SOURCE = '<p class="provenance">尚无测量结果：results/ 中没有这张图需要的结果文件。</p>\n'


def figure_companions(svg: Path, results_by_file: dict) -> None:
    """Write ``<name>-dark.svg`` (the dark-palette copy) and ``<name>.source.md`` (one provenance
    line in HTML for the page to include under the figure) next to ``svg``.

    The results a figure was drawn from are named in its metadata (``save_svg(..., sources=)``).
    """
    text = svg.read_text(encoding="utf-8")
    svg.with_name(f"{svg.stem}-dark.svg").write_text(dark_variant(text), encoding="utf-8")
    m = SOURCE.search(text)
    files = html.unescape(m.group(1)).split() if m else []
    unknown = [f for f in files if f not in results_by_file]
    if unknown:
        raise ValueError(f"{svg.name} names results files that were not loaded: {unknown}")
    line = md_caption(*(results_by_file[f] for f in files)) if files else NO_SOURCE
    svg.with_name(f"{svg.stem}.source.md").write_text(line, encoding="utf-8")


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
