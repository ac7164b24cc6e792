"""实验：初始化时 Post-LN 与 Pre-LN 编码器栈的逐层梯度范数，和残差流的均方根（第 05 章）。

Xiong et al. (2020) 分析了初始化时的梯度：Post-LN 靠近输出的层梯度大，Pre-LN 各层差不多。
这里用读者在页面上看到的代码（snippets.transformer.EncoderLayer 的 norm_first 开关，
snippets.norms.gradient_norms_per_layer）量一遍：float64、固定种子、没有 dropout，
所以每个数都是确定的，测试会重算并与结果文件比较。

设置：N 层编码器（N = 6、12），d_model = 64，h = 4，d_ff = 256；输入 x_0 的元素取 N(0, 1)
（相当于乘过 √d 的嵌入），随机目标，线性读出 + 交叉熵。Pre-LN 在栈末尾加一个 LayerNorm
（与 snippets.transformer.Transformer 一致），Post-LN 没有。线性层用 Xavier 均匀初始化
（Xiong et al. 的假设），另记一组 PyTorch 默认初始化作对照。每个数是若干个种子的平均。

运行：python -m snippets.experiments.depth_gradients --preset full   （CPU，单线程，约 10 秒）
"""

from __future__ import annotations

import statistics
import sys

import torch
from torch import nn
from tqdm import tqdm

from snippets.experiments._cli import experiment_main
from snippets.norms import gradient_norms_per_layer, xavier_init_
from snippets.transformer import EncoderLayer

KIND = "depth-gradients"
MODULE = "snippets.experiments.depth_gradients"
SEED = 0
MODEL = {"d_model": 64, "num_heads": 4, "d_ff": 256, "vocab": 32, "batch": 8, "n": 16}
NORMS = ("post", "pre")
PRESETS = {
    "tiny": {"depths": [2], "seeds": [0], "inits": ["xavier"]},
    "quick": {"depths": [6, 12], "seeds": [0, 1], "inits": ["xavier", "torch-default"]},
    "full": {"depths": [6, 12], "seeds": list(range(8)), "inits": ["xavier", "torch-default"]},
}


def build(depth: int, norm: str, init: str, seed: int):
    """(layers, final_norm, head)，float64；种子决定全部参数。"""
    torch.manual_seed(seed)
    m = MODEL
    layers = nn.ModuleList(
        EncoderLayer(m["d_model"], m["num_heads"], m["d_ff"], dropout=0.0, norm_first=(norm == "pre"))
        for _ in range(depth))
    final_norm = nn.LayerNorm(m["d_model"]) if norm == "pre" else nn.Identity()
    head = nn.Linear(m["d_model"], m["vocab"])
    if init == "xavier":
        xavier_init_(layers)
        xavier_init_(head)
    elif init != "torch-default":
        raise ValueError(f"init must be 'xavier' or 'torch-default', got {init!r}")
    return layers.double(), final_norm.double(), head.double()


def batch(seed: int):
    """输入 x_0 (batch, n, d) ~ N(0, 1) 与随机目标 (batch, n)，由种子决定。"""
    m = MODEL
    gen = torch.Generator().manual_seed(10_000 + seed)
    x = torch.randn(m["batch"], m["n"], m["d_model"], generator=gen, dtype=torch.float64)
    targets = torch.randint(m["vocab"], (m["batch"], m["n"]), generator=gen)
    return x, targets


def measure(depth: int, norm: str, init: str, seed: int) -> dict:
    layers, final_norm, head = build(depth, norm, init, seed)
    x, targets = batch(seed)
    return gradient_norms_per_layer(layers, final_norm, head, x, targets)


def mean_curves(per_seed: list[dict]) -> dict:
    return {key: [statistics.fmean(vals) for vals in zip(*(r[key] for r in per_seed))]
            for key in ("param_grad", "input_grad", "stream_rms")}


def run(preset: str, cfg: dict) -> dict:
    jobs = [(i, L, nm) for i in cfg["inits"] for L in cfg["depths"] for nm in NORMS]
    rows = []
    for init, depth, norm in tqdm(jobs, desc=KIND, file=sys.stderr, unit="config"):
        per_seed = [measure(depth, norm, init, s) for s in cfg["seeds"]]
        rows.append({"init": init, "depth": depth, "norm": norm, **mean_curves(per_seed),
                     "per_seed": [{"seed": s, **r} for s, r in zip(cfg["seeds"], per_seed)]})
    return {"config": {**MODEL, **cfg, "dtype": "float64", "dropout": 0.0, "threads": 1,
                       "loss": "cross-entropy against random targets"},
            "rows": rows}


def main(argv=None) -> int:
    return experiment_main(MODULE, KIND, PRESETS, run, argv, seed=SEED, dtypes=("float64",),
                           default_preset="quick")


if __name__ == "__main__":
    raise SystemExit(main())
