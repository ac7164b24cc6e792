"""The command line every experiment shares: --preset/--out, one thread, provenance, validated write."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

from snippets.results import RESULTS_DIR, command_line, loadavg, provenance, write_results


def experiment_main(module: str, kind: str, presets: dict, run, argv=None, *, seed: int = 0,
                    dtypes=("float32",), default_preset: str = "full", outputs: dict | None = None) -> int:
    """``python -m <module> [--preset P] [--out FILE]``: ``run(preset, cfg) -> dict`` becomes results/<kind>.json,
    or results/<outputs[P]> for a preset that has its own file (a ``long`` run beside the ``full`` one).

    Runs single-threaded (bit-for-bit repeatable, independent of the machine's other load),
    records provenance from the start, and writes through :func:`snippets.results.write_results`,
    which validates against ``results/schema/<kind>.schema.json`` first.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = argparse.ArgumentParser(prog=f"python -m {module}",
                                     description=(sys.modules[run.__module__].__doc__ or kind).splitlines()[0])
    parser.add_argument("--preset", choices=sorted(presets), default=default_preset)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    args.out = args.out or RESULTS_DIR / (outputs or {}).get(args.preset, f"{kind}.json")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        prov = provenance("cpu", command=command_line(module, argv), seed=seed, dtypes=dtypes)
        t0 = time.perf_counter()
        body = run(args.preset, presets[args.preset])
        prov["runtime_s"] = round(time.perf_counter() - t0, 2)
        prov["load_average"]["after"] = loadavg()
    finally:
        torch.set_num_threads(threads)
    path = write_results({"kind": kind, "schema_version": 1, "preset": args.preset, "provenance": prov, **body},
                         args.out)
    print(f"wrote {path} ({prov['runtime_s']} s)", file=sys.stderr)
    return 0
