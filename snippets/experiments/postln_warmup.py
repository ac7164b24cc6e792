"""实验：Post-LN 为什么需要学习率预热？在 CPU 上训练小编码器栈，有无预热各跑几个种子（第 05 章）。

任务：随机词元序列取反序（位置 i 的目标是输入的第 n−1−i 个词元），只用编码器，
每一步都是新抽的一批，所以训练损失也就是没见过的数据上的损失。模型全部是读者代码：
snippets.transformer 的 TokenEmbedding、EncoderLayer，snippets.positional 的 sinusoidal_positional_encoding
（norm_first 开关选 Post-LN / Pre-LN），线性读出；参数用这些模块自带的初始化
（nn.Linear 的 PyTorch 默认初始化），和读者直接构造出来的模型一样；另一组用 Xavier 均匀初始化
（snippets.norms.xavier_init_，第十节的逐层梯度测量与 Xiong et al. 的分析用的就是它）。
Pre-LN 在栈末尾加一个 LayerNorm。

优化器是论文 §5.3 的 Adam（β1 = 0.9、β2 = 0.98、ε = 1e-9）。学习率两种：
  - 无预热：从第 1 步起就是峰值 lr；
  - 有预热：前 warmup_steps 步从 0 线性升到峰值，之后保持不变。
只改这一处，其余（初始化、数据、步数）完全相同。每个 (初始化, 归一化位置, 预热与否, lr, 种子) 记录
损失曲线和末尾 10 步的平均损失；「没学会」= 末尾损失 > 0.9·ln V（ln V 是均匀猜测的损失），
「学会」= 末尾损失 < 0.5。另外记两个诊断：
  - grad_ratio：第 1 步反向传播时，最上一层与最下一层的参数梯度范数之比（第十节那条曲线的首末之比）；
  - logits 对输入的依赖：在一批固定的 256 条探测序列上，logits 沿「输入」方向的标准差
    （固定位置和词表项，看不同输入之间差多少）：训练前（init）、最后一步之后（final），以及损失曲线
    上记录的每一步（input_std，用算出该步损失的参数）。输出若不依赖输入，这个数是 0。

预设（单线程 CPU）：
  full   默认初始化、峰值 lr = 1e-2，4 种条件 × 6 个种子 = 24 次训练（本机约 4–5 分钟），
         写 results/postln-warmup.json；
  sweep  峰值 lr ∈ {1e-3, 3e-3, 1e-2, 3e-2} × 3 个种子：默认初始化跑 4 种条件，Xavier 初始化只跑
         Post-LN 的两种（有无预热），共 72 次训练（本机约 11 分钟），默认写 results/postln-warmup-sweep.json；
  quick  与 full 相同，只用 2 个种子（约 40 秒）；tiny 只供测试。

运行：python -m snippets.experiments.postln_warmup --preset full
      python -m snippets.experiments.postln_warmup --preset sweep
"""

from __future__ import annotations

import math
import os
import statistics
import sys

import torch
from torch import nn
from tqdm import tqdm

from snippets.experiments._cli import experiment_main
from snippets.norms import xavier_init_
from snippets.results import RESULTS_DIR
from snippets.positional import sinusoidal_positional_encoding
from snippets.transformer import EncoderLayer, TokenEmbedding

KIND = "postln-warmup"
MODULE = "snippets.experiments.postln_warmup"
SEED = 0
MODEL = {"num_layers": 6, "d_model": 32, "num_heads": 4, "d_ff": 128, "vocab": 16, "n": 12, "batch": 32}
ADAM = {"betas": [0.9, 0.98], "eps": 1e-9}
TAIL = 10              # 末尾损失取最后 TAIL 步的平均
STUCK_FRACTION = 0.9   # 末尾损失 > 0.9·ln V：没学会
LEARNED_LOSS = 0.5     # 末尾损失 < 0.5：学会了
CONDITIONS = [("post", False), ("post", True), ("pre", False), ("pre", True)]
INITS = ("torch-default", "xavier")
PROBE = {"batch": 256, "seed": 99}  # 测 logits 对输入依赖的固定探测批
PRESETS = {
    "tiny": {"num_layers": 2, "inits": ["torch-default"], "lrs": [1e-2], "seeds": [0], "steps": 12,
             "warmup_steps": 4, "log_every": 4},
    # quick：与 full 相同的设置，只少几个种子（约 40 秒）
    "quick": {"num_layers": 6, "inits": ["torch-default"], "lrs": [1e-2], "seeds": [0, 1], "steps": 200,
              "warmup_steps": 50, "log_every": 10},
    "full": {"num_layers": 6, "inits": ["torch-default"], "lrs": [1e-2], "seeds": [0, 1, 2, 3, 4, 5],
             "steps": 200, "warmup_steps": 50, "log_every": 10},
    # sweep：峰值学习率 × 初始化，每格 3 个种子；Xavier 只跑 Post-LN（约 11 分钟）
    "sweep": {"num_layers": 6, "inits": ["torch-default", "xavier"], "norms_by_init": {"xavier": ["post"]},
              "lrs": [1e-3, 3e-3, 1e-2, 3e-2], "seeds": [0, 1, 2], "steps": 200, "warmup_steps": 50, "log_every": 10},
    # high-lr：sweep 里峰值 3e-2 的一列，8 个种子（约 5 分钟）；3 个种子定不下的比较在这里再读一次
    "high-lr": {"num_layers": 6, "inits": ["torch-default", "xavier"], "norms_by_init": {"xavier": ["post"]},
                "lrs": [3e-2], "seeds": [0, 1, 2, 3, 4, 5, 6, 7], "steps": 200, "warmup_steps": 50, "log_every": 10},
    # xavier：只跑 Xavier 初始化的 Post-LN、峰值 3e-2，32 个种子（约 7 分钟）；页面读它第 1 步的梯度首末之比
    "xavier": {"num_layers": 6, "inits": ["xavier"], "norms_by_init": {"xavier": ["post"]},
               "lrs": [3e-2], "seeds": list(range(32)), "steps": 200, "warmup_steps": 50, "log_every": 10},
}
DEFAULT_OUT = {"sweep": RESULTS_DIR / f"{KIND}-sweep.json"}
HIGH_LR_OUT = f"{KIND}-high-lr.json"  # high-lr 预设的默认输出文件
XAVIER_OUT = f"{KIND}-xavier.json"  # xavier 预设的默认输出文件


class ReverseModel(nn.Module):
    """嵌入 × √d + 正弦位置编码 → num_layers 个 EncoderLayer → （Pre-LN：末尾 LayerNorm）→ 线性读出。"""

    def __init__(self, norm: str, num_layers: int, init: str = "torch-default"):
        super().__init__()
        if init not in INITS:
            raise ValueError(f"init must be one of {INITS}, got {init!r}")
        m = MODEL
        self.embed = TokenEmbedding(m["vocab"], m["d_model"])
        self.register_buffer("pe", sinusoidal_positional_encoding(m["n"], m["d_model"]), persistent=False)
        self.layers = nn.ModuleList(
            EncoderLayer(m["d_model"], m["num_heads"], m["d_ff"], dropout=0.0, norm_first=(norm == "pre"))
            for _ in range(num_layers))
        self.final_norm = nn.LayerNorm(m["d_model"]) if norm == "pre" else nn.Identity()
        self.head = nn.Linear(m["d_model"], m["vocab"])
        if init == "xavier":                                 # 嵌入不动，线性层换成 Xavier、偏置清零
            xavier_init_(self.layers)
            xavier_init_(self.head)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        h = self.embed(tokens) + self.pe                     # (batch, n, d)
        for layer in self.layers:
            h = layer(h)
        return self.head(self.final_norm(h))                 # (batch, n, vocab)


def learning_rate(step: int, peak: float, warmup_steps: int) -> float:
    """第 step 步（从 1 数起）的学习率；warmup_steps = 0 表示不预热。"""
    return peak * min(1.0, step / warmup_steps) if warmup_steps > 0 else peak


def probe_tokens() -> torch.Tensor:
    """固定的探测批 (PROBE["batch"], n)，所有训练共用，不占训练数据的随机数流。"""
    gen = torch.Generator().manual_seed(PROBE["seed"])
    return torch.randint(MODEL["vocab"], (PROBE["batch"], MODEL["n"]), generator=gen)


@torch.no_grad()
def input_dependence(model: nn.Module, tokens: torch.Tensor) -> dict:
    """logits (batch, n, V) 在探测批上：
    across_inputs  固定位置和词表项，沿 batch（不同输入）的标准差，再对位置和词表项取均方根；
    across_vocab   固定输入和位置，沿词表的标准差（预测分布离均匀有多远），再取均方根。"""
    logits = model(tokens).double()                                  # (batch, n, V)
    return {"across_inputs": logits.var(dim=0, unbiased=False).mean().sqrt().item(),
            "across_vocab": logits.var(dim=-1, unbiased=False).mean().sqrt().item()}


def layer_grad_ratio(model: ReverseModel) -> float:
    """当前 .grad 里，最上一层与最下一层全部参数梯度的 Frobenius 范数之比。"""
    norms = [math.sqrt(sum(p.grad.pow(2).sum().item() for p in layer.parameters())) for layer in model.layers]
    return norms[-1] / norms[0]


def run_one(norm: str, warmup: bool, lr: float, seed: int, cfg: dict, init: str = "torch-default") -> dict:
    torch.manual_seed(seed)                                  # 初始化：同一种子下有无预热完全相同
    model = ReverseModel(norm, cfg["num_layers"], init)
    gen = torch.Generator().manual_seed(1000 + seed)         # 数据：同一种子下看到同一串批
    probe = probe_tokens()
    dependence = {"init": input_dependence(model, probe)}
    grad_ratio = None
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
        if step == 1:
            grad_ratio = layer_grad_ratio(model)
        if step == 1 or step % cfg["log_every"] == 0:              # 这一步的参数（更新之前）
            curve.append({"step": step, "loss": loss.item(),
                          "input_std": input_dependence(model, probe)["across_inputs"]})
        opt.step()
        losses.append(loss.item())
    final = statistics.fmean(losses[-TAIL:]) if not diverged else None
    chance = math.log(MODEL["vocab"])
    dependence["final"] = None if diverged else input_dependence(model, probe)
    return {"init": init, "norm": norm, "warmup": warmup, "lr": lr, "seed": seed, "diverged": diverged,
            "final_loss": final,
            "stuck": diverged or final > STUCK_FRACTION * chance,
            "learned": (not diverged) and final < LEARNED_LOSS,
            "grad_ratio": grad_ratio, "logit_std": dependence,
            "curve": curve}


def conditions(cfg: dict, init: str) -> list[tuple[str, bool]]:
    """这个初始化下要跑的 (归一化位置, 预热与否)；norms_by_init 没写的初始化跑全部 4 种。"""
    norms = cfg.get("norms_by_init", {}).get(init, ["post", "pre"])
    return [c for c in CONDITIONS if c[0] in norms]


def summarize(runs: list[dict], cfg: dict) -> list[dict]:
    rows = []
    cells = [(init, lr, cond) for init in cfg["inits"] for lr in cfg["lrs"] for cond in conditions(cfg, init)]
    for init, lr, (norm, warmup) in cells:
        mine = [r for r in runs if (r["init"], r["norm"], r["warmup"], r["lr"]) == (init, norm, warmup, lr)]
        finals = [r["final_loss"] for r in mine if r["final_loss"] is not None]
        rows.append({"init": init, "norm": norm, "warmup": warmup, "lr": lr, "n_seeds": len(mine),
                     "n_learned": sum(r["learned"] for r in mine),
                     "n_stuck": sum(r["stuck"] for r in mine),
                     "n_diverged": sum(r["diverged"] for r in mine),
                     "final_loss_median": statistics.median(finals) if finals else None,
                     "final_loss_min": min(finals) if finals else None,
                     "final_loss_max": max(finals) if finals else None})
    return rows


def run(preset: str, cfg: dict) -> dict:
    jobs = [(i, nm, wu, lr, s) for i in cfg["inits"] for lr in cfg["lrs"] for s in cfg["seeds"]
            for nm, wu in conditions(cfg, i)]
    runs = [run_one(nm, wu, lr, s, cfg, init=i)
            for i, nm, wu, lr, s in tqdm(jobs, desc=KIND, file=sys.stderr, unit="run")]
    return {"config": {**MODEL, **cfg, "optimizer": "Adam", **ADAM, "dropout": 0.0,
                       "probe_batch": PROBE["batch"], "probe_seed": PROBE["seed"],
                       "task": "reverse", "tail": TAIL, "chance_loss": math.log(MODEL["vocab"]),
                       "stuck_above": STUCK_FRACTION * math.log(MODEL["vocab"]),
                       "learned_below": LEARNED_LOSS, "threads": 1},
            "runs": runs, "summary": summarize(runs, cfg)}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    # sweep 默认写到自己的文件，不覆盖 full 的结果
    if "--out" not in argv and any(a in ("sweep", "--preset=sweep") for a in argv):
        argv += ["--out", os.path.relpath(DEFAULT_OUT["sweep"])]
    return experiment_main(MODULE, KIND, PRESETS, run, argv, seed=SEED, default_preset="quick",
                           outputs={"high-lr": HIGH_LR_OUT, "xavier": XAVIER_OUT})


if __name__ == "__main__":
    raise SystemExit(main())
