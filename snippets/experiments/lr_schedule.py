"""论文公式 (3) 的学习率曲线：base（d_model = 512）与 big（d_model = 1024），warmup_steps = 4000（第 08 章的图）。

不是训练，只是把 snippets.training.noam_lr 在 1 到 max_step 步上算出来（每 every 步取一个点，外加峰值那一步），
连同出处写进结果文件，页面的学习率图由它生成（图必须来自带出处的结果文件）。三个预设相同（计算不到一秒）。
运行：python -m snippets.experiments.lr_schedule --preset full
"""

from __future__ import annotations

import sys

from tqdm import tqdm

from snippets.experiments._cli import experiment_main
from snippets.training import noam_lr

KIND = "lr-schedule"
MODULE = "snippets.experiments.lr_schedule"
SETTING = {"warmup": 4000, "max_step": 100_000, "every": 250, "models": {"base": 512, "big": 1024}}
PRESETS = {name: dict(SETTING) for name in ("tiny", "quick", "full")}


def run(preset: str, cfg: dict) -> dict:
    steps = sorted({1, cfg["warmup"], *range(cfg["every"], cfg["max_step"] + 1, cfg["every"])})
    curves = {name: [noam_lr(s, d, cfg["warmup"]) for s in steps]
              for name, d in tqdm(cfg["models"].items(), desc=KIND, file=sys.stderr, unit="model")}
    return {"config": dict(cfg), "steps": steps, "lr": curves,
            "peak": {name: noam_lr(cfg["warmup"], d, cfg["warmup"]) for name, d in cfg["models"].items()}}


def main(argv=None) -> int:
    return experiment_main(MODULE, KIND, PRESETS, run, argv, seed=0, default_preset="full")


if __name__ == "__main__":
    raise SystemExit(main())
