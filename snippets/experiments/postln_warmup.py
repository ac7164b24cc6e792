"""实验：Post-LN 为什么需要学习率预热？在 CPU 上训练小编码器栈，有无预热各跑几个种子（第 05 章）。

任务：随机词元序列取反序（位置 i 的目标是输入的第 n−1−i 个词元），只用编码器，
每一步都是新抽的一批，所以训练损失也就是没见过的数据上的损失。模型全部是读者代码：
snippets.transformer 的 TokenEmbedding、sinusoidal_positional_encoding、EncoderLayer
（norm_first 开关选 Post-LN / Pre-LN），线性读出；参数用这些模块自带的初始化
（nn.Linear 的 PyTorch 默认初始化），和读者直接构造出来的模型一样。Pre-LN 在栈末尾加一个 LayerNorm。

优化器是论文 §5.3 的 Adam（β1 = 0.9、β2 = 0.98、ε = 1e-9）。学习率两种：
  - 无预热：从第 1 步起就是峰值 lr；
  - 有预热：前 warmup_steps 步从 0 线性升到峰值，之后保持不变。
只改这一处，其余（初始化、数据、步数）完全相同。每个 (归一化位置, 预热与否, lr, 种子) 记录
损失曲线和末尾 10 步的平均损失；「没学会」= 末尾损失 > 0.9·ln V（ln V 是均匀猜测的损失），
「学会」= 末尾损失 < 0.5。

运行：python -m snippets.experiments.postln_warmup --preset full   （CPU，单线程，约 3 分钟）
"""

from __future__ import annotations

import math
import statistics
import sys

import torch
from torch import nn
from tqdm import tqdm

from snippets.experiments._cli import experiment_main
from snippets.transformer import EncoderLayer, TokenEmbedding, sinusoidal_positional_encoding

KIND = "postln-warmup"
MODULE = "snippets.experiments.postln_warmup"
SEED = 0
MODEL = {"num_layers": 6, "d_model": 32, "num_heads": 4, "d_ff": 128, "vocab": 16, "n": 12, "batch": 32}
ADAM = {"betas": [0.9, 0.98], "eps": 1e-9}
TAIL = 10              # 末尾损失取最后 TAIL 步的平均
STUCK_FRACTION = 0.9   # 末尾损失 > 0.9·ln V：没学会
LEARNED_LOSS = 0.5     # 末尾损失 < 0.5：学会了
CONDITIONS = [("post", False), ("post", True), ("pre", False), ("pre", True)]
PRESETS = {
    "tiny": {"num_layers": 2, "lrs": [1e-2], "seeds": [0], "steps": 12, "warmup_steps": 4, "log_every": 4},
    # quick：与 full 相同的设置，只少几个种子（约 40 秒）
    "quick": {"num_layers": 6, "lrs": [1e-2], "seeds": [0, 1], "steps": 200, "warmup_steps": 50,
              "log_every": 10},
    "full": {"num_layers": 6, "lrs": [1e-2], "seeds": [0, 1, 2, 3, 4, 5], "steps": 200,
             "warmup_steps": 50, "log_every": 10},
}


class ReverseModel(nn.Module):
    """嵌入 × √d + 正弦位置编码 → num_layers 个 EncoderLayer → （Pre-LN：末尾 LayerNorm）→ 线性读出。"""

    def __init__(self, norm: str, num_layers: int):
        super().__init__()
        m = MODEL
        self.embed = TokenEmbedding(m["vocab"], m["d_model"])
        self.register_buffer("pe", sinusoidal_positional_encoding(m["n"], m["d_model"]), persistent=False)
        self.layers = nn.ModuleList(
            EncoderLayer(m["d_model"], m["num_heads"], m["d_ff"], dropout=0.0, norm_first=(norm == "pre"))
            for _ in range(num_layers))
        self.final_norm = nn.LayerNorm(m["d_model"]) if norm == "pre" else nn.Identity()
        self.head = nn.Linear(m["d_model"], m["vocab"])

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        h = self.embed(tokens) + self.pe                     # (batch, n, d)
        for layer in self.layers:
            h = layer(h)
        return self.head(self.final_norm(h))                 # (batch, n, vocab)


def learning_rate(step: int, peak: float, warmup_steps: int) -> float:
    """第 step 步（从 1 数起）的学习率；warmup_steps = 0 表示不预热。"""
    return peak * min(1.0, step / warmup_steps) if warmup_steps > 0 else peak


def run_one(norm: str, warmup: bool, lr: float, seed: int, cfg: dict) -> dict:
    torch.manual_seed(seed)                                  # 初始化：同一种子下有无预热完全相同
    model = ReverseModel(norm, cfg["num_layers"])
    gen = torch.Generator().manual_seed(1000 + seed)         # 数据：同一种子下看到同一串批
    opt = torch.optim.Adam(model.parameters(), lr=lr, betas=tuple(ADAM["betas"]), eps=ADAM["eps"])
    warmup_steps = cfg["warmup_steps"] if warmup else 0
    losses, curve, diverged = [], [], False
    for step in range(1, cfg["steps"] + 1):
        for group in opt.param_groups:
            group["lr"] = learning_rate(step, lr, warmup_steps)
        tokens = torch.randint(MODEL["vocab"], (MODEL["batch"], MODEL["n"]), generator=gen)
        logits = model(tokens)
        loss = nn.functional.cross_entropy(logits.reshape(-1, MODEL["vocab"]), tokens.flip(1).reshape(-1))
        if not math.isfinite(loss.item()):
            diverged = True
            break
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if step == 1 or step % cfg["log_every"] == 0:
            curve.append({"step": step, "loss": loss.item()})
    final = statistics.fmean(losses[-TAIL:]) if not diverged else None
    chance = math.log(MODEL["vocab"])
    return {"norm": norm, "warmup": warmup, "lr": lr, "seed": seed, "diverged": diverged,
            "final_loss": final,
            "stuck": diverged or final > STUCK_FRACTION * chance,
            "learned": (not diverged) and final < LEARNED_LOSS,
            "curve": curve}


def summarize(runs: list[dict], cfg: dict) -> list[dict]:
    rows = []
    for lr in cfg["lrs"]:
        for norm, warmup in CONDITIONS:
            mine = [r for r in runs if r["norm"] == norm and r["warmup"] == warmup and r["lr"] == lr]
            finals = [r["final_loss"] for r in mine if r["final_loss"] is not None]
            rows.append({"norm": norm, "warmup": warmup, "lr": lr, "n_seeds": len(mine),
                         "n_learned": sum(r["learned"] for r in mine),
                         "n_stuck": sum(r["stuck"] for r in mine),
                         "n_diverged": sum(r["diverged"] for r in mine),
                         "final_loss_median": statistics.median(finals) if finals else None,
                         "final_loss_min": min(finals) if finals else None,
                         "final_loss_max": max(finals) if finals else None})
    return rows


def run(preset: str, cfg: dict) -> dict:
    jobs = [(nm, wu, lr, s) for lr in cfg["lrs"] for s in cfg["seeds"] for nm, wu in CONDITIONS]
    runs = [run_one(nm, wu, lr, s, cfg)
            for nm, wu, lr, s in tqdm(jobs, desc=KIND, file=sys.stderr, unit="run")]
    return {"config": {**MODEL, **cfg, "optimizer": "Adam", **ADAM, "init": "torch-default", "dropout": 0.0,
                       "task": "reverse", "tail": TAIL, "chance_loss": math.log(MODEL["vocab"]),
                       "stuck_above": STUCK_FRACTION * math.log(MODEL["vocab"]),
                       "learned_below": LEARNED_LOSS, "threads": 1},
            "runs": runs, "summary": summarize(runs, cfg)}


def main(argv=None) -> int:
    return experiment_main(MODULE, KIND, PRESETS, run, argv, seed=SEED, default_preset="quick")


if __name__ == "__main__":
    raise SystemExit(main())
