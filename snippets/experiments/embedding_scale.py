"""实验：共享嵌入的初始化尺度与 ×√d_model（第 06 章）。

论文 §3.4 只说「In the embedding layers, we multiply those weights by √d_model」，没有说初始化。
这里在倒序任务（snippets/experiments/copy_task.py 的 task="reverse"）上训练同一个
snippets.transformer.Transformer（post-LN、嵌入乘 √d_model），只改嵌入矩阵的初始化（和是否共享）：

    t2t          三处共享，N(0, 1/d_model)：TokenEmbedding 的默认，也是 tensor2tensor 的选择；乘 √d 后每维方差约 1
    unit         三处共享，N(0, 1)：nn.Embedding 的默认；乘 √d 后每维方差约 d，嵌入范数约为位置编码的 √(2d) 倍
    unit-noscale 三处共享，N(0, 1) 且不乘 √d（scale_embedding=False）：输入尺度与位置编码相当，
                 但共享的输出投影仍是 N(0, 1)：只有「logits 太大」，没有「嵌入淹没位置编码」
    unit-untied  不共享：两个输入嵌入 N(0, 1) 乘 √d，输出投影单独取 N(0, 1/d_model)：
                 只有「嵌入淹没位置编码」，其余 logits 的尺度正常，也没有共享带来的「复读」项
    t2t-untied   不共享的对照：两个输入嵌入 N(0, 1/d_model) 乘 √d，输出投影 N(0, 1/d_model)，
                 用来分开「输入被淹没」与「不共享」本身的影响

倒序任务要求模型知道每个词的位置，位置信号被淹没时最先受害。每种初始化跑几个种子，记录初始化时
嵌入与位置编码的范数之比、初始 logits（解码器当前输入词元那一列的 logit 与其余各列分开统计，以及
argmax 恰为当前输入词元的位置占比）、初始损失、损失曲线和贪心解码的逐词准确率。

预设：tiny（测试用）、quick（3 种 × 1 个种子，约 1 分钟）、full（5 种 × 3 个种子，约 4 分钟）、long（5 种 × 6 个种子，
约 8 分钟，页面用它；默认写 results/embedding-scale-long.json，不覆盖 full 的结果）。

运行：python -m snippets.experiments.embedding_scale --preset long   （CPU，单线程）
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
INITS = {  # 名字 -> (输入嵌入的标准差，用 d_model 表示；是否乘 √d_model；是否三处共享；不共享时输出投影的标准差)
    "t2t": ("1/sqrt(d)", True, True, None),
    "unit": ("1", True, True, None),
    "unit-noscale": ("1", False, True, None),
    "unit-untied": ("1", True, False, "1/sqrt(d)"),
    "t2t-untied": ("1/sqrt(d)", True, False, "1/sqrt(d)"),
}

TASK = {"task": "reverse", "vocab_size": 12, "seq_len": 8, "d_model": 64, "num_heads": 4,
        "num_layers": 2, "d_ff": 128, "dropout": 0.0, "norm_first": False}
PRESETS = {
    # tiny：只给测试用（几秒钟），结论没有意义
    "tiny": {"inits": ["t2t", "unit"], "seeds": [0], "steps": 6, "warmup_steps": 2, "batch_size": 16,
             "lr": 3e-3, "eval_sequences": 16, "log_every": 3},
    "quick": {"inits": ["t2t", "unit", "unit-untied"], "seeds": [0], "steps": 400, "warmup_steps": 50, "batch_size": 64,
              "lr": 3e-3, "eval_sequences": 256, "log_every": 25},
    "full": {"inits": list(INITS), "seeds": [0, 1, 2], "steps": 400, "warmup_steps": 50, "batch_size": 64,
             "lr": 3e-3, "eval_sequences": 512, "log_every": 25},
    # long：与 full 相同，只是每种 6 个种子（页面上的表和图用它）
    "long": {"inits": list(INITS), "seeds": [0, 1, 2, 3, 4, 5], "steps": 400, "warmup_steps": 50, "batch_size": 64,
             "lr": 3e-3, "eval_sequences": 512, "log_every": 25},
}
LONG_OUT = "embedding-scale-long.json"  # long 的默认输出文件，与 full 的 embedding-scale.json 并存


def _std(spec: str, d: int) -> float:
    return 1.0 if spec == "1" else 1.0 / math.sqrt(d)


def init_shared_weight(model, init: str) -> None:
    """按 INITS 重新初始化嵌入矩阵。共享时三处是同一个 nn.Parameter，改一处即三处；
    不共享时两个输入嵌入取同一分布（各自抽样），输出投影单独取 INITS 给的标准差。"""
    emb_std, _, tied, out_std = INITS[init]
    d = model.d_model
    with torch.no_grad():
        model.src_embed.weight.normal_(0.0, _std(emb_std, d))
        if not tied:
            model.tgt_embed.weight.normal_(0.0, _std(emb_std, d))
            model.output_projection.weight.normal_(0.0, _std(out_std, d))


@torch.no_grad()
def init_stats(model, cfg: dict, gen: torch.Generator) -> dict:
    """初始化时：嵌入/位置编码的范数之比、进入 softmax 的 logits、初始损失。

    logits 分两部分统计：解码器**当前输入词元**那一列（self）与其余各列（other）。三处共享时，
    残差流里带着 √d·e_y（y 是当前输入词元），它与输出投影的第 y 行是同一个向量，self 一列因此偏大。
    """
    model.eval()
    emb = model.src_embed
    pe = model.positional.pe[:cfg["seq_len"] + 1]                          # (n, d)
    src, tgt = make_batch(256, cfg["seq_len"], cfg["vocab_size"], cfg["task"], gen)
    tgt_in = shift_right(tgt)                                               # (256, m) 解码器的输入词元
    logits = model(src, tgt_in)                                             # (256, m, |V|)
    loss = nn.functional.cross_entropy(logits.reshape(-1, cfg["vocab_size"]), tgt.reshape(-1))
    is_self = nn.functional.one_hot(tgt_in, cfg["vocab_size"]).bool()      # (256, m, |V|)
    self_logit, other = logits[is_self], logits[~is_self]                   # (256·m,)、(256·m·(|V|-1),)
    model.train()
    return {"emb_pe_ratio": embedding_to_pe_ratio(emb.weight, emb.scale, pe),
            "logit_std": logits.std().item(), "loss": loss.item(),
            "self_logit_mean": self_logit.mean().item(),
            "other_logit_mean": other.mean().item(), "other_logit_std": other.std().item(),
            "argmax_is_input": (logits.argmax(-1) == tgt_in).double().mean().item()}


def run_one(init: str, seed: int, preset_cfg: dict) -> dict:
    cfg = {**DEFAULT_CONFIG, **TASK, "scale_embedding": INITS[init][1], "tie_weights": INITS[init][2],
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
                     "init_loss_mean": statistics.fmean(r["init_stats"]["loss"] for r in mine),
                     **{f"init_{key}_mean": statistics.fmean(r["init_stats"][key] for r in mine)
                        for key in ("self_logit_mean", "other_logit_std", "argmax_is_input")},
                     "init_argmax_is_input_min": min(r["init_stats"]["argmax_is_input"] for r in mine)})
    return rows


def run(preset: str, cfg: dict) -> dict:
    jobs = [(init, seed) for seed in cfg["seeds"] for init in cfg["inits"]]
    runs = [run_one(init, seed, cfg) for init, seed in tqdm(jobs, desc=KIND, file=sys.stderr, unit="run")]
    return {"task": dict(TASK), "arms": {i: {"embedding_std": INITS[i][0], "scale_embedding": INITS[i][1],
                                             "tie_weights": INITS[i][2], "output_std": INITS[i][3]}
                                         for i in cfg["inits"]},
            "config": {**cfg, "optimizer": "Adam(betas=(0.9, 0.98), eps=1e-9)", "threads": 1},
            "runs": runs, "summary": summarize(runs, cfg["inits"])}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    return experiment_main(MODULE, KIND, PRESETS, run, argv, seed=SEED, default_preset="quick",
                           outputs={"long": LONG_OUT})


if __name__ == "__main__":
    raise SystemExit(main())
