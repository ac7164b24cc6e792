"""``python -m sitebuild.generate.figures`` (``make figures``): results/*.json → docs/generated/ (figures, tables, claims page).

Every results file is validated once (:func:`snippets.results.load_all`): an invalid file
stops the run with an error naming the file and the field, it is never skipped. Then every
renderer of every module in :mod:`sitebuild.generate.render` runs; then every figure ``<name>.svg`` gets
its companions (:func:`figure_companions`), and the claims pages are written.
Output is deterministic: the same inputs give byte-identical files, so ``make figures`` renders
only when an input changed (:func:`inputs_digest`, recorded in :data:`STAMP` with a digest of
every file written); ``--force`` renders anyway. The claims pages are written every time.
"""

from __future__ import annotations

import argparse
import hashlib
import html
import importlib
import json
import pkgutil
import re
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import sitebuild.generate.render
from sitebuild.generate import claims
from sitebuild.generate.render.ch10_paper_map import paper_map
from sitebuild.config import chapters
from snippets.results import RESULTS_DIR, ResultsError, load_all

ROOT = Path(__file__).resolve().parents[2]
OUT_DIR = ROOT / "docs" / "generated"
# Everything the renderers read besides the results files and the chapter titles (the cheat
# sheet's headings, :func:`sitebuild.config.chapters`): their code (and the snippets code they
# import), the questions, the errata.
INPUTS = ("results/schema/*.json", "sitebuild/generate/figures.py", "sitebuild/generate/render/*.py", "sitebuild/config.py",
          "sitebuild/questions.py", "snippets/**/*.py", "docs/chapters/*/questions.md", "docs/errata.yml",
          "docs/errata.schema.json")
# Libraries whose versions can change the bytes of a figure.
LIBRARIES = ("matplotlib", "numpy")
STAMP = ".figures-stamp.json"


def renderers() -> list:
    out = []
    for info in sorted(pkgutil.iter_modules(sitebuild.generate.render.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"sitebuild.generate.render.{info.name}")
        out += getattr(module, "RENDERERS", [])
    return out


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def inputs_digest(results_dir: Path = RESULTS_DIR) -> str:
    """One digest of everything a render reads: the results, the :data:`INPUTS` files, the chapter
    titles, the library versions, and the last commit of docs/errata.yml (the errata page names the
    commit that added each entry, from that file's history; a commit elsewhere changes no render)."""
    files = sorted(Path(results_dir).resolve().glob("*.json"))
    files += sorted({p for pattern in INPUTS for p in ROOT.glob(pattern) if p.is_file()})
    parts = [str(Path(results_dir).resolve())]
    parts += [f"{p}:{_sha(p.read_bytes())}" for p in files]
    parts.append(json.dumps(chapters(), ensure_ascii=False))  # not the chapters' text: it changes often
    parts.append(json.dumps(paper_map(), ensure_ascii=False))  # only the pages' `paper:` front matter (the paper map)
    parts += [f"{lib}=={version(lib)}" for lib in LIBRARIES]
    errata = subprocess.run(["git", "log", "-1", "--format=%H", "--", "docs/errata.yml"], cwd=ROOT,
                            capture_output=True, text=True)
    parts.append(f"git:{errata.stdout.strip()}")
    return _sha("\n".join(parts).encode())


def _outputs(out_dir: Path) -> dict[str, str]:
    """Digest of every file a render wrote (the claims pages, written every time, left out)."""
    return {p.name: _sha(p.read_bytes()) for p in sorted(out_dir.iterdir())
            if p.is_file() and p.name != STAMP and not claims.written(p.name)}


def up_to_date(digest: str, out_dir: Path) -> bool:
    """The last render had these inputs and its files are still there, unchanged."""
    stamp = out_dir / STAMP
    if not stamp.is_file():
        return False
    record = json.loads(stamp.read_text(encoding="utf-8"))
    return record.get("inputs") == digest and record.get("outputs") == _outputs(out_dir)


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
    from sitebuild.generate.render._style import dark_variant, md_caption  # matplotlib: only when rendering

    text = svg.read_text(encoding="utf-8")
    svg.with_name(f"{svg.stem}-dark.svg").write_text(dark_variant(text), encoding="utf-8")
    m = SOURCE.search(text)
    files = html.unescape(m.group(1)).split() if m else []
    unknown = [f for f in files if f not in results_by_file]
    if unknown:
        raise ValueError(f"{svg.name} names results files that were not loaded: {unknown}")
    line = md_caption(*(results_by_file[f] for f in files)) if files else NO_SOURCE
    svg.with_name(f"{svg.stem}.source.md").write_text(line, encoding="utf-8")


def render_if_changed(results_dir: Path = RESULTS_DIR, out_dir: Path = OUT_DIR, force: bool = False) -> list[Path] | None:
    """:func:`render_all`, unless the last render had the same inputs and left its files untouched
    (then ``None``). A render that raises leaves no stamp, so the next run renders again."""
    digest = inputs_digest(results_dir)
    if not force and up_to_date(digest, out_dir):
        return None
    (out_dir / STAMP).unlink(missing_ok=True)
    files = render_all(results_dir, out_dir)
    record = {"inputs": digest, "outputs": _outputs(out_dir)}
    (out_dir / STAMP).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return files


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m sitebuild.generate.figures", description=__doc__.splitlines()[0])
    ap.add_argument("--results", type=Path, default=RESULTS_DIR)
    ap.add_argument("--out", type=Path, default=OUT_DIR)
    ap.add_argument("--force", action="store_true", help="render even when no input changed")
    args = ap.parse_args(argv)
    try:
        files = render_if_changed(args.results, args.out, args.force)
    except ResultsError as exc:
        print(f"figures: invalid results file: {exc}", file=sys.stderr)
        return 1
    if files is None:
        print(f"figures: inputs unchanged since the last render into {args.out}")
    else:
        print(f"wrote {len(files)} files into {args.out}")
    claims.main()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
