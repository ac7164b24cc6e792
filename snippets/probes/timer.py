"""One call's wall time, as chapters 12 and 13's probes take it: CUDA events on a GPU (kernels run
asynchronously, so a host clock would time only their launch), ``time.perf_counter`` on the CPU."""

from __future__ import annotations

import statistics
import time

import torch


class Timer:
    def __init__(self, device):
        self.cuda = str(device).startswith("cuda")
        self.name = "torch.cuda.Event(enable_timing=True)" if self.cuda else "time.perf_counter (CPU, 1 thread)"

    def __call__(self, fn) -> float:
        if self.cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize()
            return start.elapsed_time(end) / 1000.0
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0


def median_time(timer: Timer, fn, repeats: int) -> tuple[float, list[float]]:
    """One warm-up call, then the median of ``repeats`` timed calls, and the calls' times."""
    fn()
    samples = [timer(fn) for _ in range(repeats)]
    return statistics.median(samples), samples
