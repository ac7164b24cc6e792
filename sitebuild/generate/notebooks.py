"""``python -m sitebuild.generate.notebooks``: execute the companion notebooks and store their outputs.

The notebook pages show outputs, but the site build does not execute them (mkdocs-jupyter's
``execute: false``: a fresh kernel per notebook per build is slow). The outputs are stored in
``docs/notebooks/*.ipynb`` instead, and a slow test (tests/site/test_notebooks.py) executes
each notebook again and checks with :func:`differences` that the stored outputs still match:
the same output kinds and text, numbers equal within a tolerance, images only by presence.
Run this module after changing a notebook or the snippets it calls.
"""

from __future__ import annotations

import argparse
import math
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "docs" / "notebooks"
TIMEOUT_S = 300

NUMBER = re.compile(r"[-−+]?(?:\d[\d,]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
# Printed numbers carry 3-4 significant digits: the last one may round the other way.
REL_TOL = 2e-3
# Rounding-level residuals ("差 3.1e-16", float32's "9.54e-07") differ between machines and BLAS builds.
NOISE = 1e-5


def execute(path: Path):
    """The notebook at ``path`` executed top to bottom in a fresh kernel (run from the repo root)."""
    import nbclient
    import nbformat

    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    client = nbclient.NotebookClient(nb, timeout=TIMEOUT_S, kernel_name="python3", record_timing=False,
                                     resources={"metadata": {"path": str(ROOT)}})
    client.execute()
    return nb


def _text(output) -> str:
    if output.get("output_type") == "stream":
        return output.get("text", "")
    data = output.get("data", {})
    return "" if any(k.startswith("image/") for k in data) else data.get("text/plain", "")


def _numbers_match(a: str, b: str) -> bool:
    x, y = (float(s.replace(",", "").replace("−", "-")) for s in (a, b))
    if abs(x) < NOISE and abs(y) < NOISE:
        return True
    return math.isclose(x, y, rel_tol=REL_TOL, abs_tol=0.0)


def _same_text(a: str, b: str) -> bool:
    a, b = ADDRESS.sub("0x…", a), ADDRESS.sub("0x…", b)
    if NUMBER.sub("#", a) != NUMBER.sub("#", b):
        return False
    return all(_numbers_match(x, y) for x, y in zip(NUMBER.findall(a), NUMBER.findall(b)))


def _merged(outputs) -> list:
    """Consecutive stream outputs of one stream as one: how a kernel splits them depends on timing."""
    out = []
    for o in outputs:
        if out and o.get("output_type") == "stream" and out[-1].get("output_type") == "stream" \
                and out[-1].get("name") == o.get("name"):
            out[-1] = {**out[-1], "text": out[-1]["text"] + o.get("text", "")}
        else:
            out.append(dict(o))
    return out


def _kinds(outputs) -> list[str]:
    out = []
    for o in outputs:
        data = o.get("data", {})
        out.append(o["output_type"] + ("/image" if any(k.startswith("image/") for k in data) else ""))
    return out


def differences(stored, fresh) -> list[str]:
    """Where a fresh execution's outputs differ from the stored ones (empty when they match)."""
    problems = []
    cells = [(s, f) for s, f in zip(stored.cells, fresh.cells) if s.cell_type == "code"]
    for i, (s, f) in enumerate(cells, 1):
        s, f = _merged(s.outputs), _merged(f.outputs)
        if _kinds(s) != _kinds(f):
            problems.append(f"code cell {i}: output kinds {_kinds(s)} != {_kinds(f)}")
            continue
        for so, fo in zip(s, f):
            if not _same_text(_text(so), _text(fo)):
                problems.append(f"code cell {i}: stored\n{_text(so)}\nfresh\n{_text(fo)}")
    return problems


def main(argv=None) -> int:
    import nbformat

    ap = argparse.ArgumentParser(prog="python -m sitebuild.generate.notebooks", description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*", type=Path, help="notebooks (default: docs/notebooks/*.ipynb)")
    args = ap.parse_args(argv)
    for path in args.paths or sorted(NOTEBOOKS.glob("*.ipynb")):
        nb = execute(path)
        nbformat.write(nb, path)
        print(f"executed {path.relative_to(ROOT) if path.is_absolute() else path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
