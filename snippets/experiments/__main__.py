"""``python -m snippets.experiments [--preset full|quick] [--only NAME ...]``: run every experiment module."""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

import snippets.experiments as package


def modules() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(package.__path__) if not m.name.startswith("_"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m snippets.experiments", description=__doc__.splitlines()[0])
    ap.add_argument("--preset", choices=["full", "quick"], default="full")
    ap.add_argument("--only", nargs="*", default=None, help=f"module names, of {modules()}")
    args = ap.parse_args(argv)
    failed = []
    for name in args.only or modules():
        print(f"== snippets.experiments.{name} --preset {args.preset}", file=sys.stderr, flush=True)
        if importlib.import_module(f"snippets.experiments.{name}").main(["--preset", args.preset]) != 0:
            failed.append(name)
    if failed:
        print(f"failed: {failed}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
