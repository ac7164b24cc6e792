"""RoPE 的频率网格：原始、PI、NTK-aware、YaRN 与底数 500000（第 07 章的波长图）。

不是训练，只是把 snippets.positional.scaled_rope_frequencies 在一组设定下算出来、连同出处写进结果文件，
页面的波长图由它生成（图必须来自带出处的结果文件）。设定：每个头 d = 128，原长度 L = 4096，
扩展倍数 s = 4，YaRN 的 α = 1、β = 32（LLaMA 上的取值）。三个预设相同（计算不到一秒）。

运行：python -m snippets.experiments.rope_scaling --preset full
"""

from __future__ import annotations

import math
import sys

import torch
from tqdm import tqdm

from snippets.experiments._cli import experiment_main
from snippets.positional import rope_frequencies, scaled_rope_frequencies, yarn_mscale

KIND = "rope-scaling"
MODULE = "snippets.experiments.rope_scaling"
SETTING = {"d": 128, "base": 10000.0, "factor": 4.0, "original_len": 4096, "alpha": 1.0, "beta": 32.0,
           "large_base": 500000.0}
PRESETS = {name: dict(SETTING) for name in ("tiny", "quick", "full")}
GRIDS = ["rope", "pi", "ntk", "yarn", "rope-500k"]


def run(preset: str, cfg: dict) -> dict:
    d, b, s, L = cfg["d"], cfg["base"], cfg["factor"], cfg["original_len"]
    grids = {}
    for name in tqdm(GRIDS, desc=KIND, file=sys.stderr, unit="grid"):
        if name == "rope":
            theta = rope_frequencies(d, b, torch.float64)
        elif name == "rope-500k":
            theta = rope_frequencies(d, cfg["large_base"], torch.float64)
        else:
            ramp = {"original_len": L, "alpha": cfg["alpha"], "beta": cfg["beta"]} if name == "yarn" else {}
            theta = scaled_rope_frequencies(d, b, name, s, **ramp)              # pi、ntk 只读 s
        grids[name] = [2 * math.pi / t for t in theta.double().tolist()]      # 波长 λ_i = 2π/θ_i
    return {"config": dict(cfg), "wavelengths": grids,
            "ntk_base": b * s ** (d / (d - 2)), "yarn_mscale": yarn_mscale(s)}


def main(argv=None) -> int:
    return experiment_main(MODULE, KIND, PRESETS, run, argv, seed=0, default_preset="full")


if __name__ == "__main__":
    raise SystemExit(main())
