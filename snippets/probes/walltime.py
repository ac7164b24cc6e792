"""墙钟时间（wall time）：每种层的前向、前向+反向时间随 n（固定 d）和随 d（固定 n）的变化。

这是**测量**，不是计数：它只进 ``results/`` 和图，从不进通过/失败的测试。

CPU 的做法（来自本机试点的教训）：

- **单线程**：计时在一个子进程里做，子进程启动前就设好 ``OMP_NUM_THREADS`` /
  ``MKL_NUM_THREADS`` / ``OPENBLAS_NUM_THREADS`` = 1，导入 torch 后再 ``torch.set_num_threads(1)``。
  两个线程时小层的斜率偏低。
- **固定 glibc 分配器**（只用于计时）：子进程带 ``MALLOC_MMAP_THRESHOLD_``（32 MiB，glibc 的上限）
  和 ``MALLOC_TRIM_THRESHOLD_``，否则每次调用都把大缓冲区还给操作系统，朴素注意力会有成千上万次
  缺页，n 斜率读成 2.3。测内存时不这样做。
- **交错**：每一轮（repeat）把所有层、所有尺寸各测一次，再开始下一轮；报告各轮的中位数，
  并保存每一个原始样本。每个样本是 ``inner`` 次调用的平均（``inner`` 事先校准，使样本约为
  ``target_s`` 秒）。
- **拟合**：对中位数做 log-log 最小二乘，报告斜率、残差（ln 残差的 2-范数）、逐轮斜率的
  最小/最大/标准差（spread），以及同一组尺寸上闭式 FLOPs 的斜率作参照。残差超过
  ``residual_threshold`` 时该序列重测一次，两次都记录。
- **开销主导**（overhead-dominated）：每种层在最小尺寸（n = 1 或 d = 1）的中位时间是"地板"；
  中位时间小于 ``overhead_factor`` × 地板（预设里取 3：固定开销至少占三分之一）的点被标为开销
  主导，不参与拟合，但照样保存和画出。

被计时的是页面上的代码（:mod:`~snippets.probes.layers`：``MultiHeadAttention``、
``restricted_attention``、``RNNLayer``、``LSTMLayer``，输入检查关闭），外加只在探针里的 GRU、
卷积和 ``F.scaled_dot_product_attention``。循环层是逐步的 Python 循环（与页面一致），
所以小尺寸时的每步开销会显出来：这些点标成开销主导。GFLOP/s 用闭式 FLOPs × batch 计算。

CUDA 的做法：同一套扫描代码，只是计时器换成 ``torch.cuda.Event``；fp32 与 bf16 都测；
另外测 SDPA 的三个后端（flash、memory-efficient、math，用 ``torch.nn.attention.sdpa_kernel``
指定）、稠密 bf16 矩阵乘法的上限，并把注意力的吞吐表示为该上限的比例。

顺序依赖（sequential dependency）：n 次相互依赖的 (B×d)@(d×d) 与一次 (nB×d)@(d×d)
（FLOPs 相同）的时间比，B = 1、16 等。
"""

from __future__ import annotations

import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn.functional as F

from .fit import loglog_fit, spread
from snippets.results import loadavg

from .facts import LAYERS, MODES, closed_form
from .layers import make_layer


# 子进程的环境变量：单线程 + 固定 glibc 分配器
THREAD_ENV = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
MALLOC_ENV = {"MALLOC_MMAP_THRESHOLD_": str(32 * 1024 * 1024), "MALLOC_TRIM_THRESHOLD_": str(1 << 40)}

# ----------------------------------------------------------------------------- 计时器
class CpuTimer:
    name = "time.perf_counter (CPU, 1 thread)"

    def sync(self) -> None:
        pass

    def __call__(self, fn, inner: int) -> float:
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        return (time.perf_counter() - t0) / inner


class CudaTimer:
    name = "torch.cuda.Event(enable_timing=True)"

    def __init__(self, device="cuda"):
        self.device = device

    def sync(self) -> None:
        torch.cuda.synchronize(self.device)

    def __call__(self, fn, inner: int) -> float:
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize(self.device)
        start.record()
        for _ in range(inner):
            fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3 / inner  # ms → s


def calibrate(fn, timer, target_s: float, max_inner: int = 10_000) -> int:
    """预热一次，再估计单次时间，返回使一个样本约为 ``target_s`` 的调用次数。"""
    fn()
    timer.sync()
    t1 = timer(fn, 1)
    if t1 < target_s / 20:  # 很快的调用：用 10 次再估一次，减少计时分辨率误差
        t1 = timer(fn, 10)
    return int(min(max_inner, max(1, math.ceil(target_s / max(t1, 1e-9)))))


# ----------------------------------------------------------------------------- 被计时的函数
def _dtype(name: str) -> torch.dtype:
    return getattr(torch, name)


def build_callables(layer: str, batch: int, n: int, d: int, *, dtype: torch.dtype, device: str,
                    seed: int = 0):
    """返回 ``{"fwd": f, "fwd+bwd": g}``，两个无参函数；以及每次调用的闭式 FLOPs。"""
    g = torch.Generator().manual_seed(seed)
    kw = {"radius": 4} if layer == "restricted" else {}
    pl = make_layer(layer, d, seed=seed, dtype=dtype, device=device, requires_grad=True, **kw)
    params, forward = pl.params, pl.fn
    n_in = 3 if layer == "attention_core" else 1
    xs = [torch.randn(batch, n, d, generator=g).to(device=device, dtype=dtype).requires_grad_(True)
          for _ in range(n_in)]  # 每个 (batch, n, d)
    wrt = xs + list(params)

    def fwd():
        with torch.no_grad():
            return forward(*xs)

    def fwdbwd():
        y = forward(*xs)
        return torch.autograd.grad(y.sum(), wrt)

    flops = {m: batch * closed_form(layer, n, d, m) for m in MODES}
    return {"fwd": fwd, "fwd+bwd": fwdbwd}, flops


# ----------------------------------------------------------------------------- 扫描
def _series_key(s):
    return (s["sweep"], s["dtype"], s["layer"], s["mode"])


def _make_series(plan: dict, dtypes) -> list[dict]:
    series = []
    for sw in plan["sweeps"]:
        for dt in dtypes:
            for layer, cfg in sw["layers"].items():
                for mode in plan["modes"]:
                    fixed = {k: v for k, v in cfg.items() if k not in ("sizes",)}
                    series.append({"sweep": sw["axis"], "dtype": dt, "layer": layer, "mode": mode,
                                   "batch": cfg["batch"], "fixed": fixed, "sizes": list(cfg["sizes"]),
                                   "floor_size": plan.get("floor_size", 1)})
    return series


def _shape(series: dict, size: int) -> tuple[int, int]:
    """(n, d) for one point of a series."""
    if series["sweep"] == "n":
        return size, series["fixed"]["d"]
    return series["fixed"]["n"], size


def _measure_series(series_list, *, repeats, target_s, timer, device, progress=None) -> None:
    """交错测量：每一轮把所有序列的所有点各测一次。结果写回 ``series_list``。"""
    # 准备：每个点造好可调用对象并校准 inner
    jobs = []
    for s in series_list:
        s["points"] = []
        sizes = [s["floor_size"]] + s["sizes"]
        for i, size in enumerate(sizes):
            n, d = _shape(s, size)
            try:
                fns, flops = build_callables(s["layer"], s["batch"], n, d, dtype=_dtype(s["dtype"]),
                                             device=device)
                fn = fns[s["mode"]]
                inner = calibrate(fn, timer, target_s)
                pt = {"size": size, "n": n, "d": d, "inner": inner, "flops": flops[s["mode"]],
                      "samples_s": [], "floor": i == 0}
                jobs.append((pt, fn))
            except Exception as exc:  # noqa: BLE001  例如 GPU 显存不足：记录下来，不伪造
                pt = {"size": size, "n": n, "d": d, "error": f"{type(exc).__name__}: {exc}"[:300],
                      "floor": i == 0, "samples_s": []}
            s["points"].append(pt)
    for _ in range(repeats):
        for pt, fn in jobs:
            try:
                pt["samples_s"].append(timer(fn, pt["inner"]))
            except Exception as exc:  # noqa: BLE001
                pt.setdefault("error", f"{type(exc).__name__}: {exc}"[:300])
        if progress:
            progress(1)


def _analyse_series(s: dict, plan: dict) -> None:
    """中位数、开销标记、拟合、逐轮斜率的 spread。"""
    factor = plan["overhead_factor"]
    floor_pt = s["points"][0]
    floor_med = statistics.median(floor_pt["samples_s"]) if floor_pt["samples_s"] else None
    s["floor"] = {"size": floor_pt["size"], "median_s": floor_med, "samples_s": floor_pt["samples_s"],
                  "inner": floor_pt.get("inner")}
    pts = s["points"][1:]
    for p in pts:
        if p["samples_s"]:
            p["median_s"] = statistics.median(p["samples_s"])
            p["gflops"] = p["flops"] / p["median_s"] / 1e9
            p["overhead_dominated"] = bool(floor_med is not None and p["median_s"] < factor * floor_med)
        else:
            p["median_s"] = None
            p["overhead_dominated"] = None
    s["points"] = pts
    fit_pts = [p for p in pts if p["median_s"] is not None and not p["overhead_dominated"]]
    s["fit"] = loglog_fit([p["size"] for p in fit_pts], [p["median_s"] for p in fit_pts])
    s["fit_sizes"] = [p["size"] for p in fit_pts]
    s["flop_slope"] = loglog_fit([p["size"] for p in fit_pts], [p["flops"] for p in fit_pts])["slope"]
    per_rep = []
    reps = min((len(p["samples_s"]) for p in fit_pts), default=0)
    for r in range(reps):
        per_rep.append(loglog_fit([p["size"] for p in fit_pts], [p["samples_s"][r] for p in fit_pts])["slope"])
    s["per_repeat_slopes"] = per_rep
    s["spread"] = spread(per_rep)
    s["paper_exponent"] = LAYERS[s["layer"]].exponent[s["sweep"]]


def sequential_dependency(cfg: dict, *, dtype, device, timer, repeats, target_s) -> list[dict]:
    """n 次相互依赖的 (B×d)@(d×d) 与一次 (nB×d)@(d×d)（同样的 FLOPs）的时间比。"""
    d, steps = cfg["d"], cfg["steps"]
    g = torch.Generator().manual_seed(0)
    q, _ = torch.linalg.qr(torch.randn(d, d, generator=g, dtype=torch.float64))
    W = q.to(device=device, dtype=dtype)  # 正交矩阵：连乘不爆炸也不下溢（避免非规格化数拖慢计时）
    out = []
    for B in cfg["batches"]:
        h0 = torch.randn(B, d, generator=g).to(device=device, dtype=dtype)  # (B, d)
        X = torch.randn(steps * B, d, generator=g).to(device=device, dtype=dtype)  # (nB, d)

        def dependent():
            h = h0
            for _ in range(steps):
                h = h @ W  # (B, d)，依赖上一步
            return h

        def one_matmul():
            return X @ W  # (nB, d)

        row = {"batch": B, "d": d, "steps": steps, "flops": 2 * steps * B * d * d}
        for name, fn in (("dependent", dependent), ("one_matmul", one_matmul)):
            inner = calibrate(fn, timer, target_s)
            samples = [timer(fn, inner) for _ in range(repeats)]
            med = statistics.median(samples)
            row[name] = {"inner": inner, "samples_s": samples, "median_s": med,
                         "gflops": row["flops"] / med / 1e9}
        row["ratio"] = row["dependent"]["median_s"] / row["one_matmul"]["median_s"]
        out.append(row)
    return out


def _run_sweeps(plan: dict, *, device: str, dtypes, timer, progress=None) -> dict:
    series = _make_series(plan, dtypes)
    _measure_series(series, repeats=plan["repeats"], target_s=plan["target_s"], timer=timer,
                    device=device, progress=progress)
    for s in series:
        _analyse_series(s, plan)
    # 残差过大的序列重测一次（两次都记录，保留残差小的那次）
    bad = [s for s in series if s["fit"]["residual"] is not None and s["fit"]["residual"] > plan["residual_threshold"]]
    if plan.get("retry") and bad:
        redo = [dict(sweep=s["sweep"], dtype=s["dtype"], layer=s["layer"], mode=s["mode"], batch=s["batch"],
                     fixed=s["fixed"], sizes=s["sizes"], floor_size=s["floor_size"]) for s in bad]
        _measure_series(redo, repeats=plan["repeats"], target_s=plan["target_s"], timer=timer, device=device)
        for old, new in zip(bad, redo):
            _analyse_series(new, plan)
            first = {k: old[k] for k in ("points", "floor", "fit", "fit_sizes", "flop_slope",
                                          "per_repeat_slopes", "spread")}
            second = {k: new[k] for k in first}
            keep = second if new["fit"]["residual"] < old["fit"]["residual"] else first
            old.update(keep)
            old["attempts"] = [{"fit": first["fit"], "spread": first["spread"]},
                               {"fit": second["fit"], "spread": second["spread"]}]
            old["remeasured_because"] = f"residual {first['fit']['residual']:.3f} > {plan['residual_threshold']}"
    seqdep = {dt: sequential_dependency(plan["seqdep"], dtype=_dtype(dt), device=device, timer=timer,
                                        repeats=plan["repeats"], target_s=plan["target_s"]) for dt in dtypes}
    if progress:
        progress(1)
    return {"series": series, "sequential_dependency": seqdep}


# ----------------------------------------------------------------------------- CUDA 专有
def cuda_extras(plan: dict, *, timer, device="cuda") -> dict:
    """SDPA 后端、稠密矩阵乘法上限、注意力占上限的比例。只在真实 GPU 上运行。"""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    out: dict = {}
    # 稠密矩阵乘法上限（bf16 与 fp32）
    ceil = []
    for dt in ("bfloat16", "float32"):
        m = plan["matmul_size"]
        a = torch.randn(m, m, device=device, dtype=_dtype(dt))
        b = torch.randn(m, m, device=device, dtype=_dtype(dt))
        fn = lambda a=a, b=b: a @ b  # noqa: E731
        inner = calibrate(fn, timer, plan["target_s"])
        samples = [timer(fn, inner) for _ in range(plan["repeats"])]
        med = statistics.median(samples)
        ceil.append({"dtype": dt, "m": m, "flops": 2 * m ** 3, "inner": inner, "samples_s": samples,
                     "median_s": med, "tflops": 2 * m ** 3 / med / 1e12,
                     "allow_tf32": bool(torch.backends.cuda.matmul.allow_tf32)})
        del a, b
    out["matmul_ceiling"] = ceil
    bf16_ceiling = next(c["tflops"] for c in ceil if c["dtype"] == "bfloat16")

    backends = {"flash": SDPBackend.FLASH_ATTENTION, "memory_efficient": SDPBackend.EFFICIENT_ATTENTION,
                "math": SDPBackend.MATH}
    cfg = plan["sdpa"]
    rows = []
    for dt in ("bfloat16", "float32"):
        for name, be in backends.items():
            for n in cfg["sizes"]:
                row = {"backend": name, "dtype": dt, "batch": cfg["batch"], "heads": cfg["heads"],
                       "head_dim": cfg["head_dim"], "n": n,
                       "flops_fwd": 4 * cfg["batch"] * cfg["heads"] * n * n * cfg["head_dim"]}
                try:
                    q, k, v = (torch.randn(cfg["batch"], cfg["heads"], n, cfg["head_dim"], device=device,
                                           dtype=_dtype(dt)) for _ in range(3))

                    def fn(q=q, k=k, v=v, be=be):
                        with sdpa_kernel(be):
                            return F.scaled_dot_product_attention(q, k, v)

                    inner = calibrate(fn, timer, plan["target_s"])
                    samples = [timer(fn, inner) for _ in range(plan["repeats"])]
                    med = statistics.median(samples)
                    row.update(inner=inner, samples_s=samples, median_s=med,
                               tflops=row["flops_fwd"] / med / 1e12)
                    row["fraction_of_bf16_matmul"] = row["tflops"] / bf16_ceiling
                    del q, k, v
                except Exception as exc:  # noqa: BLE001  后端不支持该 dtype，或显存不足：照实记录
                    row["error"] = f"{type(exc).__name__}: {exc}"[:300]
                torch.cuda.empty_cache()
                rows.append(row)
    out["sdpa_backends"] = rows
    return out


# ----------------------------------------------------------------------------- 入口
def measure(plan: dict, device: str = "cpu", progress=None) -> dict:
    """在当前进程里测（CUDA 用；CPU 请走 :func:`run`，它会开一个单线程、固定分配器的子进程）。"""
    cuda = str(device).startswith("cuda")
    timer = CudaTimer(device) if cuda else CpuTimer()
    dtypes = plan["dtypes"]
    before = loadavg()
    t0 = time.perf_counter()
    res = _run_sweeps(plan, device=device, dtypes=dtypes, timer=timer, progress=progress)
    if cuda:
        res.update(cuda_extras(plan, timer=timer, device=device))
    res.update({
        "timer": timer.name, "threads": torch.get_num_threads(), "dtypes": list(dtypes),
        "env": {k: os.environ.get(k) for k in (*THREAD_ENV, *MALLOC_ENV)},
        "load_average_before": before, "load_average_after": loadavg(),
        "elapsed_s": round(time.perf_counter() - t0, 2), "plan": plan, "python": platform.python_version(),
        "rate_note": ("GFLOP/s use the closed-form FLOPs x batch; attention, restricted, RNN and LSTM are the "
                      "reader's classes (input checks off), GRU and conv are probe-only, sdpa is PyTorch's kernel"),
    })
    return res


def progress_units(plan: dict) -> int:
    return plan["repeats"] + 1


def run(plan: dict, device: str = "cpu", progress=None) -> dict:
    """CPU：在子进程里测（环境变量在解释器启动前就位）；CUDA：在本进程里测。"""
    if str(device).startswith("cuda"):
        return measure(plan, device, progress)
    env = dict(os.environ, **THREAD_ENV, **MALLOC_ENV)
    with tempfile.TemporaryDirectory() as tmp:
        out_path = os.path.join(tmp, "walltime.json")
        cmd = [sys.executable, "-m", "snippets.probes.walltime", "--child", json.dumps(plan), out_path]
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True, cwd=root)
        assert proc.stdout is not None
        for line in proc.stdout:  # 子进程每完成一轮打印一行 "progress 1"
            if line.startswith("progress") and progress:
                progress(int(line.split()[1]))
        rc = proc.wait()
        if rc != 0:
            raise RuntimeError(f"walltime child failed with exit code {rc}")
        with open(out_path, encoding="utf-8") as fh:
            return json.load(fh)


def _child(argv) -> int:
    plan = json.loads(argv[0])
    torch.set_num_threads(1)

    def progress(k):
        print(f"progress {k}", flush=True)

    res = measure(plan, "cpu", progress)
    with open(argv[1], "w", encoding="utf-8") as fh:
        json.dump(res, fh)
    return 0


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "--child":
        sys.exit(_child(sys.argv[2:]))
    print("usage: python -m snippets.probes (walltime runs as a child process of it)", file=sys.stderr)
    sys.exit(2)
