"""实验：共享嵌入的初始化尺度与 ×√d_model（第 06 章）。

论文 §3.4 只说「In the embedding layers, we multiply those weights by √d_model」，没有说初始化。
这里在倒序任务（snippets/experiments/copy_task.py 的 task="reverse"）上训练同一个
snippets.transformer.Transformer（post-LN、三处权重共享、嵌入乘 √d_model），只改共享矩阵的初始化：

    t2t        N(0, 1/d_model)：TokenEmbedding 的默认，也是 tensor2tensor 的选择；乘 √d 后每维方差约 1
    unit       N(0, 1)：nn.Embedding 的默认；乘 √d 后每维方差约 d，嵌入范数约为位置编码的 √(2d) 倍
    unit-noscale N(0, 1) 且不乘 √d（scale_embedding=False）：输入尺度与位置编码相当，
               但共享的输出投影仍是 N(0, 1)，用来把「嵌入淹没位置编码」与「logits 太大」分开

倒序任务要求模型知道每个词的位置，位置信号被淹没时最先受害。每种初始化跑几个种子，
记录初始化时嵌入与位置编码的范数之比、初始 logits 的标准差、损失曲线和贪心解码的逐词准确率。

运行：python -m snippets.experiments.embedding_scale --preset full   （CPU，单线程）
"""

from __future__ import annotations

import math
import statistics
import sys

import torch
from torch import nn
from tqdm import tqdm

from snippets.embedding import embedding_to_pe_ratio
from snippets.experiments._cli import experiment_main
from snippets.experiments.copy_task import DEFAULT_CONFIG, build_model, evaluate, lr_factor, make_batch, shift_right

KIND = "embedding-scale"
MODULE = "snippets.experiments.embedding_scale"
SEED = 0
INITS = {  # 名字 -> (共享矩阵的标准差，用 d_model 表示；是否乘 √d_model)
    "t2t": ("1/sqrt(d)", True),
    "unit": ("1", True),
    "unit-noscale": ("1", False),
}

TASK = {"task": "reverse", "vocab_size": 12, "seq_len": 8, "d_model": 64, "num_heads": 4,
        "num_layers": 2, "d_ff": 128, "dropout": 0.0, "norm_first": False, "tie_weights": True}
PRESETS = {
    # tiny：只给测试用（几秒钟），结论没有意义
    "tiny": {"inits": ["t2t", "unit"], "seeds": [0], "steps": 6, "warmup_steps": 2, "batch_size": 16,
             "lr": 3e-3, "eval_sequences": 16, "log_every": 3},
    "quick": {"inits": ["t2t", "unit"], "seeds": [0], "steps": 400, "warmup_steps": 50, "batch_size": 64,
              "lr": 3e-3, "eval_sequences": 256, "log_every": 25},
    "full": {"inits": list(INITS), "seeds": [0, 1, 2], "steps": 400, "warmup_steps": 50, "batch_size": 64,
             "lr": 3e-3, "eval_sequences": 512, "log_every": 25},
}


def init_shared_weight(model, init: str) -> None:
    """按 INITS 重新初始化共享矩阵（三处共用一个 nn.Parameter，改一处即三处）。"""
    std = 1.0 if INITS[init][0] == "1" else 1.0 / math.sqrt(model.d_model)
    with torch.no_grad():
        model.src_embed.weight.normal_(0.0, std)


@torch.no_grad()
def init_stats(model, cfg: dict, gen: torch.Generator) -> dict:
    """初始化时：嵌入/位置编码的范数之比、进入 softmax 的 logits 的标准差、初始损失。"""
    model.eval()
    emb = model.src_embed
    pe = model.positional.pe[:cfg["seq_len"] + 1]                          # (n, d)
    src, tgt = make_batch(256, cfg["seq_len"], cfg["vocab_size"], cfg["task"], gen)
    logits = model(src, shift_right(tgt))                                   # (256, m, |V|)
    loss = nn.functional.cross_entropy(logits.reshape(-1, cfg["vocab_size"]), tgt.reshape(-1))
    model.train()
    return {"emb_pe_ratio": embedding_to_pe_ratio(emb.weight, emb.scale, pe),
            "logit_std": logits.std().item(), "loss": loss.item()}


def run_one(init: str, seed: int, preset_cfg: dict) -> dict:
    cfg = {**DEFAULT_CONFIG, **TASK, "scale_embedding": INITS[init][1],
           "eval_sequences": preset_cfg["eval_sequences"]}
    torch.manual_seed(seed)
    model = build_model(cfg)
    init_shared_weight(model, init)
    gen = torch.Generator().manual_seed(seed)               # 同一个种子下三种初始化看到同一串训练数据
    start = init_stats(model, cfg, torch.Generator().manual_seed(999))
    opt = torch.optim.Adam(model.parameters(), lr=preset_cfg["lr"], betas=(0.9, 0.98), eps=1e-9)
    steps, warmup = preset_cfg["steps"], preset_cfg["warmup_steps"]
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, warmup, steps))
    curve, window = [], []
    for step in range(1, steps + 1):
        src, tgt = make_batch(preset_cfg["batch_size"], cfg["seq_len"], cfg["vocab_size"], cfg["task"], gen)
        logits = model(src, shift_right(tgt))                               # (batch, m, |V|)
        loss = nn.functional.cross_entropy(logits.reshape(-1, cfg["vocab_size"]), tgt.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        window.append(loss.item())
        if step % preset_cfg["log_every"] == 0 or step == steps:
            curve.append({"step": step, "loss": statistics.fmean(window)})  # 这一段的平均训练损失
            window = []
    return {"init": init, "seed": seed, "init_stats": start, "curve": curve,
            "final_loss": curve[-1]["loss"], "accuracy": evaluate(model, cfg)}


def summarize(runs: list[dict], inits: list[str]) -> list[dict]:
    rows = []
    for init in inits:
        mine = [r for r in runs if r["init"] == init]
        acc = [r["accuracy"] for r in mine]
        rows.append({"init": init, "n_seeds": len(mine),
                     "accuracy_mean": statistics.fmean(acc), "accuracy_min": min(acc), "accuracy_max": max(acc),
                     "final_loss_mean": statistics.fmean(r["final_loss"] for r in mine),
                     "emb_pe_ratio_mean": statistics.fmean(r["init_stats"]["emb_pe_ratio"] for r in mine),
                     "init_logit_std_mean": statistics.fmean(r["init_stats"]["logit_std"] for r in mine),
                     "init_loss_mean": statistics.fmean(r["init_stats"]["loss"] for r in mine)})
    return rows


def run(preset: str, cfg: dict) -> dict:
    jobs = [(init, seed) for seed in cfg["seeds"] for init in cfg["inits"]]
    runs = [run_one(init, seed, cfg) for init, seed in tqdm(jobs, desc=KIND, file=sys.stderr, unit="run")]
    return {"task": dict(TASK), "config": {**cfg, "optimizer": "Adam(betas=(0.9, 0.98), eps=1e-9)", "threads": 1},
            "runs": runs, "summary": summarize(runs, cfg["inits"])}


def main(argv=None) -> int:
    return experiment_main(MODULE, KIND, PRESETS, run, argv, seed=SEED, default_preset="quick")


if __name__ == "__main__":
    raise SystemExit(main())
