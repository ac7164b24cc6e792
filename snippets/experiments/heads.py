"""实验：头数 h 与「头学到了什么」（第 04 章）：表 3 (A) 的玩具版，加上逐头消融与剪枝。

任务（取三个邻居，three-neighbour copy）：输入是 n 个随机符号 x_1 … x_n（词表 V 个符号），
位置 i 要同时输出三个符号 (x_{i-2}, x_{i+1}, x_{i+3})：三个读出头各做一次 V 类分类，三个都对才算对；
只在三个邻居都存在的位置计分。每个输出都要**原样**取回另一个位置的符号，而且要同时取回三个：
一个头的 softmax 只有一个分布，要同时看三处就只能把权重分开，取回的是三个值向量的加权平均
（论文 §3.2.2 的「averaging inhibits this」）。

模型就是读者的代码：嵌入 + 正弦位置编码（snippets.transformer）+ 一个 EncoderLayer
（post-LN，其中的自注意力是 snippets.attention.MultiHeadAttention）+ 线性读出。
扫 h ∈ {1, 2, 4, …, 64}，d_model = 64 固定，d_k = d_v = d_model / h：参数量与矩阵乘法的 FLOPs 都不随 h 变
（论文表 3 (A) 的做法："keeping the amount of computation constant"）。
每个训练好的模型再做两件事（h ≥ 2）：
- 逐头消融：把第 i 个头的 W_i^O 置零（即从 Σ_i head_i W_i^O 里去掉这一项），看准确率掉多少；
- 剪枝：按单头消融的代价从小到大，一个一个累积剪掉，记下每一步的准确率（单头消融是 Michel et al., 2019
  §3 的做法；按消融代价排序、累积剪枝是本章的简化）。
另外记下每个头在各个相对位移上的平均注意力质量，以及 h ≤ 8 时种子 0 的平均注意力图（画图用）。

预设：
- full：h ∈ {1, 2, …, 64}，3 个种子，各 600 步 → results/multi-head.json；
- long：只训练页面讨论的 h ∈ {1, 8, 64}，2 个种子，各 6000 步，在 checkpoints 列出的步数上记下测试准确率
  （与 full 同样的初始化种子、数据流和测试集；第 600 步的准确率与 full 的同一组 (h, 种子) 相差不到
  1 个百分点，差别来自 full 运行之后代码里浮点运算顺序的改动）→ results/multi-head-long.json。
  600 步的结果读的是「600 步内学到多少」；long 回答「再多练会不会学会」，即学习速度与种子依赖。

运行：python -m snippets.experiments.heads --preset full   （CPU，单线程，约 4.5 分钟 CPU 时间；机器繁忙时墙钟更久）
      python -m snippets.experiments.heads --preset long   （CPU，单线程，约 9 分钟 CPU 时间，h = 64 占三分之二；
      10000 步在共享的 2 核机器上要 25 分钟以上，所以取 6000 步）
"""

from __future__ import annotations

import copy
import os
import statistics
import sys

import torch
from torch import nn
from tqdm import tqdm

from snippets.experiments._cli import experiment_main
from snippets.results import RESULTS_DIR
from snippets.positional import sinusoidal_positional_encoding
from snippets.transformer import EncoderLayer

KIND = "multi-head"
MODULE = "snippets.experiments.heads"
SEED = 0
TASK = {"vocab_size": 10, "seq_len": 12, "offsets": [-2, 1, 3]}
MODEL = {"d_model": 64, "d_ff": 128, "num_layers": 1}
PRESETS = {
    # tiny：只给测试用（几秒钟），结论没有意义
    "tiny": {"heads": [1, 2], "seeds": [0], "steps": 20, "batch_size": 32, "lr": 3e-3,
             "eval_size": 128, "ablation_eval_size": 64, "map_heads_max": 2},
    "quick": {"heads": [1, 4, 16, 64], "seeds": [0], "steps": 300, "batch_size": 64, "lr": 3e-3,
              "eval_size": 1024, "ablation_eval_size": 512, "map_heads_max": 4},
    "full": {"heads": [1, 2, 4, 8, 16, 32, 64], "seeds": [0, 1, 2], "steps": 600, "batch_size": 64,
             "lr": 3e-3, "eval_size": 2048, "ablation_eval_size": 1024, "map_heads_max": 8},
    # long：页面讨论的三个 h 训练更久，看 600 步时学不好的模型是「学得慢」还是「学不会」
    "long": {"heads": [1, 8, 64], "seeds": [0, 1], "steps": 6000, "batch_size": 64, "lr": 3e-3,
             "eval_size": 2048, "ablation_eval_size": 1024, "map_heads_max": 1,
             "checkpoints": [600, 1500, 3000, 4500, 6000]},
    # two-heads：与 full 相同，只跑 h = 2 与 h = 8、8 个种子；full 的 3 个种子定不下这两者的高低
    "two-heads": {"heads": [2, 8], "seeds": [0, 1, 2, 3, 4, 5, 6, 7], "steps": 600, "batch_size": 64,
                  "lr": 3e-3, "eval_size": 2048, "ablation_eval_size": 1024, "map_heads_max": 8},
}
LONG_OUT = "multi-head-long.json"  # long 预设的默认输出文件（results/ 下），不覆盖 full 的结果
TWO_HEADS_OUT = "multi-head-two-heads.json"  # two-heads 预设的默认输出文件
# 论文表 3 (A) 与 base 行（newstest2013 开发集，未做检查点平均）：h、d_k = d_v、PPL、BLEU。
# 页面与图拿它和玩具实验的趋势并排比较；这里只是抄录，不是测量。
PAPER_TABLE3_A = [
    {"h": 1, "d_k": 512, "ppl": 5.29, "bleu": 24.9},
    {"h": 4, "d_k": 128, "ppl": 5.00, "bleu": 25.5},
    {"h": 8, "d_k": 64, "ppl": 4.92, "bleu": 25.8},
    {"h": 16, "d_k": 32, "ppl": 4.91, "bleu": 25.8},
    {"h": 32, "d_k": 16, "ppl": 5.01, "bleu": 25.4},
]
# 表 3 (B)：h = 8、d_v = 64 不变，只缩小 d_k（每行 h·d_k < 512）。同样只是抄录。
PAPER_TABLE3_B = [
    {"h": 8, "d_k": 16, "ppl": 5.16, "bleu": 25.1},
    {"h": 8, "d_k": 32, "ppl": 5.01, "bleu": 25.4},
]
PRUNE_TOLERANCE = 0.01  # 剪枝：准确率最多比不剪时低 1 个百分点


def scored_positions() -> torch.Tensor:
    """三个邻居都存在的位置 i（从 0 数起）。"""
    offs, n = TASK["offsets"], TASK["seq_len"]
    return torch.arange(-min(offs), n - max(offs))


def make_batch(gen: torch.Generator, batch: int) -> tuple[torch.Tensor, torch.Tensor]:
    """x (batch, n) 的随机符号；y (batch, 计分位置数, 3)：每个计分位置的三个邻居。"""
    x = torch.randint(TASK["vocab_size"], (batch, TASK["seq_len"]), generator=gen)
    pos = scored_positions()
    y = torch.stack([x[:, pos + o] for o in TASK["offsets"]], dim=-1)
    return x, y


class NeighbourModel(nn.Module):
    """嵌入 + 正弦位置编码 + 读者的 EncoderLayer（含 MultiHeadAttention）+ 三个线性读出。"""

    def __init__(self, num_heads: int):
        super().__init__()
        d, v, n = MODEL["d_model"], TASK["vocab_size"], TASK["seq_len"]
        self.embed = nn.Embedding(v, d)
        self.register_buffer("pe", sinusoidal_positional_encoding(n, d), persistent=False)
        self.layers = nn.ModuleList(EncoderLayer(d, num_heads, MODEL["d_ff"], dropout=0.0)
                                    for _ in range(MODEL["num_layers"]))
        self.readout = nn.Linear(d, v * len(TASK["offsets"]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = self.embed(x) + self.pe  # (batch, n, d)
        for layer in self.layers:
            z = layer(z)
        logits = self.readout(z[:, scored_positions()])  # (batch, 计分位置数, 3·V)
        return logits.unflatten(-1, (len(TASK["offsets"]), TASK["vocab_size"]))  # (batch, p, 3, V)


def loss_fn(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return nn.functional.cross_entropy(logits.reshape(-1, TASK["vocab_size"]), y.reshape(-1))


@torch.no_grad()
def accuracy(model: NeighbourModel, data) -> float:
    """三个邻居都对的位置所占比例。"""
    x, y = data
    return (model(x).argmax(-1) == y).all(-1).double().mean().item()


@torch.no_grad()
def ablated(model: NeighbourModel, heads: list[int]) -> NeighbourModel:
    """把这些头的 W_i^O（nn.Linear 权重里的第 i 段列）置零的副本：输出里去掉 head_i W_i^O 这几项。"""
    out = copy.deepcopy(model)
    attn = out.layers[-1].self_attn
    for i in heads:
        attn.w_o.weight[:, i * attn.d_head:(i + 1) * attn.d_head] = 0.0
    return out


@torch.no_grad()
def offset_mass(model: NeighbourModel, x: torch.Tensor) -> tuple[list[dict], torch.Tensor]:
    """每个头在各相对位移 j − i 上的平均注意力质量（只看计分位置的查询），以及平均注意力图 (h, n, n)。"""
    model(x)
    w = model.layers[-1].attn_weights  # (batch, h, n, n)
    pos = scored_positions()
    rows = []
    n = TASK["seq_len"]
    for i in range(w.shape[1]):
        mass = {}
        for o in range(-(n - 1), n):  # 每个计分查询 q 给位置 q + o 的权重，对查询和样本取平均
            qs = pos[(pos + o >= 0) & (pos + o < n)]
            mass[o] = w[:, i, qs, qs + o].sum(-1).mean().item() / len(pos) if len(qs) else 0.0
        top = max(mass, key=mass.get)
        rows.append({"head": i, "top_offset": top, "top_mass": mass[top],
                     "task_mass": sum(mass[o] for o in TASK["offsets"])})
    return rows, w.mean(0)


def run_one(h: int, seed: int, cfg: dict, eval_data, ablation_data) -> dict:
    torch.manual_seed(1000 * seed + h)  # 参数初始化
    model = NeighbourModel(h)
    gen = torch.Generator().manual_seed(seed)  # 训练数据：同一个种子下每个 h 看到同一串样本
    opt = torch.optim.Adam(model.parameters(), lr=cfg["lr"])
    checkpoints = set(cfg.get("checkpoints", ()))
    curve = []  # 中途的测试准确率：[{"step", "accuracy", "loss"}]
    model.train()
    for step in range(1, cfg["steps"] + 1):
        x, y = make_batch(gen, cfg["batch_size"])
        loss = loss_fn(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step in checkpoints:  # 评估不消耗随机数（dropout = 0），不改变之后的训练
            model.eval()
            with torch.no_grad():
                curve.append({"step": step, "accuracy": accuracy(model, eval_data),
                              "loss": loss_fn(model(eval_data[0]), eval_data[1]).item()})
            model.train()
    model.eval()
    with torch.no_grad():
        final_loss = loss_fn(model(eval_data[0]), eval_data[1]).item()
    run = {"h": h, "d_k": MODEL["d_model"] // h, "seed": seed, "accuracy": accuracy(model, eval_data),
           "loss": final_loss, "num_parameters": sum(p.numel() for p in model.parameters())}
    if checkpoints:
        run["curve"] = curve
    heads, mean_map = offset_mass(model, ablation_data[0])
    base = accuracy(model, ablation_data)
    run["ablation_base_accuracy"] = base
    if h >= 2:
        for row in heads:  # 单头消融
            row["ablated_accuracy"] = accuracy(ablated(model, [row["head"]]), ablation_data)
            row["drop"] = base - row["ablated_accuracy"]
        order = sorted(range(h), key=lambda i: (heads[i]["drop"], i))  # 代价从小到大
        curve = [base] + [accuracy(ablated(model, order[:k]), ablation_data) for k in range(1, h)]
        run["prune_order"] = order
        run["prune_curve"] = curve  # curve[k]：剪掉 k 个头后的准确率
        run["prunable_heads"] = max(k for k in range(h) if all(c >= base - PRUNE_TOLERANCE for c in curve[:k + 1]))
    run["heads"] = heads
    if seed == cfg["seeds"][0] and h <= cfg["map_heads_max"]:
        run["mean_attention"] = [[[round(v, 4) for v in row] for row in m] for m in mean_map.tolist()]
    return run


def summarize(runs: list[dict], cfg: dict) -> list[dict]:
    rows = []
    for h in cfg["heads"]:
        mine = [r for r in runs if r["h"] == h]
        acc = [r["accuracy"] for r in mine]
        row = {"h": h, "d_k": MODEL["d_model"] // h, "n_seeds": len(mine),
               "accuracy_mean": statistics.fmean(acc), "accuracy_min": min(acc), "accuracy_max": max(acc),
               "num_parameters": mine[0]["num_parameters"]}
        if h >= 2:
            row["max_drop_mean"] = statistics.fmean(max(x["drop"] for x in r["heads"]) for r in mine)
            row["prunable_heads_min"] = min(r["prunable_heads"] for r in mine)
            row["prunable_heads_mean"] = statistics.fmean(r["prunable_heads"] for r in mine)
        rows.append(row)
    return rows


def run(preset: str, cfg: dict) -> dict:
    eval_data = make_batch(torch.Generator().manual_seed(12345), cfg["eval_size"])  # 固定的测试集
    ablation_data = make_batch(torch.Generator().manual_seed(54321), cfg["ablation_eval_size"])
    jobs = [(h, s) for s in cfg["seeds"] for h in cfg["heads"]]
    runs = [run_one(h, s, cfg, eval_data, ablation_data)
            for h, s in tqdm(jobs, desc=KIND, file=sys.stderr, unit="run")]
    return {"task": {**TASK, "scored_positions": scored_positions().tolist()},
            "model": dict(MODEL),
            "config": {**cfg, "optimizer": "Adam", "threads": 1, "prune_tolerance": PRUNE_TOLERANCE},
            "runs": runs, "summary": summarize(runs, cfg)}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    long = any(a in ("long", "--preset=long") for a in argv)
    if long and not any(a == "--out" or a.startswith("--out=") for a in argv):
        argv += ["--out", os.path.relpath(RESULTS_DIR / LONG_OUT)]  # 从仓库根运行时是 results/multi-head-long.json
    return experiment_main(MODULE, KIND, PRESETS, run, argv, seed=SEED, default_preset="quick",
                           outputs={"two-heads": TWO_HEADS_OUT})


if __name__ == "__main__":
    raise SystemExit(main())
