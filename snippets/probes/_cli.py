"""The command line a chapter's probe module shares (chapter 12's inference, chapter 13's long
context): ``--device``, ``--preset``, ``--out``, ``--no-progress``; the results file is written
through ``snippets.results.write_results`` and named after the device."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

from snippets import results as R


def start(device: str, command: str) -> dict:
    """Refuse a CUDA run without a CUDA device, time a CPU run on one thread (the 2-core machine's
    setting), and return the run's provenance."""
    if torch.device(device).type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: no CUDA device; GPU results come only from a real GPU, nothing written.")
    if torch.device(device).type == "cpu":
        torch.set_num_threads(1)
    return R.provenance(device, command=command, seed=0, dtypes=["float32"], threads=torch.get_num_threads())


def probe_main(module: str, name: str, presets, run, argv=None, description: str = "") -> int:
    """``run(preset, device, command, progress_bar=...)`` → the results; written to
    ``results/<name>-<device-tag>.json`` unless ``--out`` says otherwise."""
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(prog=f"python -m {module}", description=description)
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--preset", choices=sorted(presets), default="quick")
    ap.add_argument("--out", default=None, help=f"output file; default results/{name}-<device-tag>.json")
    ap.add_argument("--no-progress", action="store_true")
    args = ap.parse_args(argv)
    data = run(args.preset, args.device, R.command_line(module, argv), progress_bar=not args.no_progress)
    out = Path(args.out) if args.out else R.RESULTS_DIR / f"{name}-{data['provenance']['tag']}.json"
    try:
        R.write_results(data, out)
    except R.ResultsError as exc:
        print(f"not written: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {out} ({data['provenance']['runtime_s']} s)", file=sys.stderr)
    return 0
