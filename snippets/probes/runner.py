"""命令行入口的实现：预设（presets）、依次运行六个探针、写带出处的结果文件。

    python -m snippets.probes --device cpu|cuda --preset quick|full [--out results/<tag>.json]

``--out`` 缺省为 ``results/<device-tag>.json``。进度条（tqdm）写到 stderr。
``quick`` 在 2 核 CPU 上 < 60 s，``full`` < 5 min。``tiny`` 只给测试用。
CUDA 的结果只能来自真实 GPU：没有 GPU 时 ``--device cuda`` 直接报错退出，不写任何文件。
"""

from __future__ import annotations

import argparse
import copy
import sys
import time
from pathlib import Path

from snippets import results as R

from .results import KIND, SCHEMA_VERSION

# ----------------------------------------------------------------------------- 预设
_ATT = ("attention", "attention_core", "sdpa")
_REC = ("rnn", "lstm", "gru")


def _cpu_walltime(n_att, n_rec, n_conv, ds, *, repeats, target_s, retry, seq_steps, seq_batches,
                  n_lstm=None, d_rec=None, d_lstm=None):
    # n 扫描：注意力类 batch 1、d = 32；受限注意力与循环层 batch 4、d = 64；卷积 batch 16
    n_layers = {**{k: {"batch": 1, "d": 32, "sizes": n_att} for k in _ATT},
                "restricted": {"batch": 4, "d": 64, "sizes": n_att},
                **{k: {"batch": 4, "d": 64, "sizes": n_rec} for k in _REC},
                "conv": {"batch": 16, "d": 64, "sizes": n_conv}}
    if n_lstm:  # 融合 LSTM 的固定开销（oneDNN）较大，用更长的序列
        n_layers["lstm"]["sizes"] = n_lstm
    # d 扫描：batch 1；注意力类与卷积在 n = 256，循环层在 n = 64（否则太慢）
    d_layers = {**{k: {"batch": 1, "n": 256, "sizes": ds} for k in (*_ATT, "restricted", "conv")},
                **{k: {"batch": 1, "n": 64, "sizes": d_rec or ds} for k in _REC}}
    if d_lstm:
        d_layers["lstm"]["sizes"] = d_lstm
    return {"sweeps": [{"axis": "n", "layers": n_layers}, {"axis": "d", "layers": d_layers}],
            "modes": ["fwd", "fwd+bwd"], "dtypes": ["float32"], "repeats": repeats, "target_s": target_s,
            "floor_size": 1, "overhead_factor": 3.0, "residual_threshold": 0.25, "retry": retry,
            "seqdep": {"d": 128, "steps": seq_steps, "batches": seq_batches}}


def _cuda_walltime(n_att, n_rec, ds, *, repeats, target_s, sdpa_sizes, n_rec_fixed=256):
    # 循环层逐步走 Python 循环，GPU 上每一步都受内核启动开销支配：它们的尺寸决定总用时
    n_layers = {**{k: {"batch": 8, "d": 64, "sizes": n_att} for k in _ATT},
                "restricted": {"batch": 8, "d": 256, "sizes": n_att},
                **{k: {"batch": 16, "d": 256, "sizes": n_rec} for k in _REC},
                "conv": {"batch": 16, "d": 256, "sizes": n_att}}
    d_layers = {**{k: {"batch": 8, "n": 256, "sizes": ds} for k in (*_ATT, "restricted", "conv")},
                **{k: {"batch": 8, "n": n_rec_fixed, "sizes": ds} for k in _REC}}
    return {"sweeps": [{"axis": "n", "layers": n_layers}, {"axis": "d", "layers": d_layers}],
            "modes": ["fwd", "fwd+bwd"], "dtypes": ["float32", "bfloat16"], "repeats": repeats,
            "target_s": target_s, "floor_size": 1, "overhead_factor": 3.0, "residual_threshold": 0.25,
            "retry": True, "seqdep": {"d": 128, "steps": 256, "batches": [1, 16, 256]},
            "matmul_size": 8192,
            "sdpa": {"batch": 4, "heads": 16, "head_dim": 64, "sizes": sdpa_sizes}}


PRESETS: dict[str, dict] = {
    "tiny": {
        "flops": {"ns": [16, 33], "ds": [8], "d_fixed": 8, "n_fixed": 16, "crossover_ds": [8]},
        "paths": {"ns": [8, 9], "d": 4},
        "sequential": {"ns": [4, 8], "d": 8},
        "memory": {"ns": [256, 512], "d": 64, "block": 128},
        "gradients": {"T": 40, "d": 8, "k_max": 30, "seeds": [0]},
        "walltime": {"sweeps": [{"axis": "n", "layers": {"attention": {"batch": 1, "d": 8, "sizes": [16, 32]},
                                                          "rnn": {"batch": 1, "d": 8, "sizes": [8, 16]}}},
                                {"axis": "d", "layers": {"conv": {"batch": 1, "n": 16, "sizes": [8, 16]}}}],
                     "modes": ["fwd", "fwd+bwd"], "dtypes": ["float32"], "repeats": 2, "target_s": 0.001,
                     "floor_size": 1, "overhead_factor": 5.0, "residual_threshold": 0.25, "retry": False,
                     "seqdep": {"d": 16, "steps": 8, "batches": [1, 4]}},
    },
    "quick": {
        "flops": {"ns": [16, 64, 256], "ds": [16, 32, 64], "d_fixed": 32, "n_fixed": 64, "crossover_ds": [16]},
        "paths": {"ns": [16, 33], "d": 4},
        "sequential": {"ns": [8, 16, 32], "d": 8},
        "memory": {"ns": [256, 512, 1024, 2048], "d": 64, "block": 256},
        "gradients": {"T": 200, "d": 32, "k_max": 150, "seeds": [0]},
        "walltime": _cpu_walltime([256, 512, 1024], [64, 128, 256], [256, 512, 1024], [128, 256, 512],
                                  repeats=3, target_s=0.004, retry=False, seq_steps=128, seq_batches=[1, 16],
                                  n_lstm=[128, 256, 512], d_rec=[256, 512, 1024], d_lstm=[256, 512, 1024]),
    },
    "full": {
        "flops": {"ns": [16, 32, 64, 128, 256, 512, 1024], "ds": [8, 16, 32, 64, 128, 256], "d_fixed": 64,
                  "n_fixed": 128, "crossover_ds": [16, 32, 64]},
        "paths": {"ns": [8, 16, 32, 64, 128], "d": 4},
        "sequential": {"ns": [8, 16, 32, 64], "d": 8},
        "memory": {"ns": [256, 512, 1024, 2048, 4096, 8192], "d": 64, "block": 256},
        "gradients": {"T": 200, "d": 32, "k_max": 150, "seeds": [0, 1, 2, 3, 4]},
        "walltime": _cpu_walltime([256, 512, 1024, 2048], [64, 128, 256, 512], [256, 512, 1024, 2048],
                                  [128, 256, 512, 1024], repeats=9, target_s=0.02, retry=True,
                                  seq_steps=256, seq_batches=[1, 4, 16, 64], n_lstm=[128, 256, 512, 1024],
                                  d_rec=[256, 512, 1024, 2048], d_lstm=[256, 512, 1024]),
    },
}

CUDA_WALLTIME = {
    "tiny": _cuda_walltime([256, 512], [64, 128], [64, 128], repeats=2, target_s=0.002, sdpa_sizes=[256]),
    "quick": _cuda_walltime([1024, 2048, 4096], [256, 512, 1024], [256, 512, 1024], repeats=5, target_s=0.01,
                            sdpa_sizes=[1024, 4096]),
    # d 到 8192、n 到 16384：更小的尺寸在 H200 上几乎都受启动开销支配，拟合不出指数
    "full": _cuda_walltime([1024, 2048, 4096, 8192, 16384], [128, 256, 512, 1024], [1024, 2048, 4096, 8192],
                           repeats=5, target_s=0.02, n_rec_fixed=128, sdpa_sizes=[1024, 2048, 4096, 8192, 16384]),
}


def plan_for(preset: str, device: str) -> dict:
    if preset not in PRESETS:
        raise ValueError(f"preset={preset!r} 必须是 {sorted(PRESETS)} 之一")
    plan = copy.deepcopy(PRESETS[preset])
    if str(device).startswith("cuda"):
        plan["walltime"] = copy.deepcopy(CUDA_WALLTIME[preset])
    return plan


# ----------------------------------------------------------------------------- 运行
def run_all(preset: str, device: str, command: str, *, seed: int = 0, progress_bar: bool = True) -> dict:
    import torch
    from tqdm import tqdm

    from . import flops, gradients, memory, paths, sequential, walltime

    if torch.device(device).type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: no CUDA device; GPU results come only from a real GPU, nothing written.")
    torch.manual_seed(seed)
    plan = plan_for(preset, device)
    t0 = time.perf_counter()
    dtypes = {"float32", "float64", *plan["walltime"]["dtypes"]}
    prov = R.provenance(device, command=command, seed=seed, dtypes=dtypes,
                        device_independent_probes=["paths", "sequential", "gradients"])

    total = (len(flops.FLOP_KINDS) + len(plan["flops"]["crossover_ds"]) + len(paths.PATH_CONFIGS)
             + len(sequential.SEQ_KINDS) + len(plan["memory"]["ns"]) + len(gradients.CONFIGS)
             + walltime.progress_units(plan["walltime"]))
    bar = tqdm(total=total, desc="probes", unit="step", file=sys.stderr, disable=not progress_bar,
               dynamic_ncols=True)
    timings: dict[str, float] = {}
    out: dict = {}

    def timed(name, fn):
        bar.set_postfix_str(name)
        t = time.perf_counter()
        out[name] = fn()
        timings[name] = round(time.perf_counter() - t, 2)
        if not progress_bar:  # 无进度条时（如 GPU 机器上的日志）每个探针结束打印一行
            print(f"{name}: {timings[name]} s", file=sys.stderr, flush=True)

    steps = [0]

    def walltime_step(k):
        bar.update(k)
        steps[0] += k
        if not progress_bar:
            print(f"walltime: step {steps[0]} of {walltime.progress_units(plan['walltime'])} "
                  f"at {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)

    timed("flops", lambda: flops.run(device=device, progress=bar.update, **plan["flops"]))
    timed("paths", lambda: paths.run(progress=bar.update, **plan["paths"]))  # 与设备无关，float64 在 CPU 上
    timed("sequential", lambda: sequential.run(progress=bar.update, **plan["sequential"]))  # 图结构，与设备无关
    timed("memory", lambda: memory.run(device=device, progress=bar.update, **plan["memory"]))
    timed("gradients", lambda: gradients.run(progress=bar.update, **plan["gradients"]))  # float64，CPU
    timed("walltime", lambda: walltime.run(plan["walltime"], device=device, progress=walltime_step))
    bar.close()

    prov["runtime_s"] = round(time.perf_counter() - t0, 2)
    prov["probe_runtime_s"] = timings
    prov["load_average"]["after"] = R.loadavg()
    return {"kind": KIND, "schema_version": SCHEMA_VERSION, "preset": preset, "provenance": prov, "probes": out}


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(prog="python -m snippets.probes", description=__doc__.splitlines()[0])
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--preset", choices=sorted(PRESETS), default="quick")
    ap.add_argument("--out", default=None, help="output file; default results/<device-tag>.json")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = ap.parse_args(argv)
    data = run_all(args.preset, args.device, R.command_line("snippets.probes", argv), seed=args.seed,
                   progress_bar=not args.no_progress)
    out = Path(args.out) if args.out else R.RESULTS_DIR / f"{data['provenance']['tag']}.json"
    try:
        R.write_results(data, out)  # validates first: an invalid file is never written
    except R.ResultsError as exc:
        print(f"not written: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {out} ({data['provenance']['runtime_s']} s)", file=sys.stderr)
    return 0
