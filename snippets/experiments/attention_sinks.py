"""实验：小模型上的注意力汇点（attention sink）与滚动缓存（第 13 章）。

    任务    第 11 章的二阶马尔可夫链（词表 8，每个上下文 (a, b) 2 个后继，转移表由 TABLE_SEED 固定）。
            选它而不是字符级语料，因为下一个符号只取决于最后两个：窗口 w ≥ 2 里已经有预测所需的全部信息。
            所以滑动窗口若让损失变差，原因只能是注意力分布变了（softmax 的分母少了原来放在早期词元上的质量），
            不是信息丢了：这正是 StreamingLLM 说的机制，在这里与「窗口外的内容有用」分得开。熵下界已知
            （真实分布的交叉熵），损失可以报告为超额损失
    两种开头 plain：序列直接从两个随机符号开始，第一个词元的内容每条都不同；
            bos：每条序列前面加一个固定的开始符号 BOS（词表第 9 个符号，从不作为预测目标），像许多 LLM 的训练数据。
            汇点出现在哪里与数据分布有关（Gu 等 2024），所以两种都量
    模型    snippets.residual_stream.AttnResDecoder，普通 pre-RMSNorm 残差（baseline）：读者的 MultiHeadAttention、
            FFN、RMSNorm 与正弦绝对位置编码；4 层、d_model 48、4 头、d_ff 96（与第 11 章相同）
    训练    长度 64 的序列，Adam、预热后线性下降；每种开头、每个种子一个模型，种子决定初始化与数据流；
            只对前面已有两个马尔可夫符号的位置计损失
    测量    训练后（与初始化时，作对照）：每层每个头，对远离开头的查询（位置 t ≥ FAR）平均，注意力落在
            第一个词元、前 s = 1, 2, 4 个词元、以及一个中间词元（位置 MIDDLE）上的质量；与内容无关的均匀头
            给出的基线是 s/(t+1)（对同样的查询取平均）
    滚动缓存 训练好的模型在固定的验证序列上（位置与训练时相同，长度不超过训练长度，只换掩码，每层共用）：
            (a) 因果全注意力；(b) 最近 w 个词元的滑动窗口；(c) 窗口 + 前 s 个词元（汇点）；
            (d) 窗口 + 中间 s 个词元（位置 MIDDLE … MIDDLE+s−1，看的词元数与 (c) 相同）。
            只对位置 ≥ SCORE_FROM 的预测计分：那里 (c)、(d) 多看的 s 个词元都在窗口外

预设：tiny（测试用，几秒）、quick（2 种开头 × 3 个种子，120 步，约 45 秒）、full（2 × 3，800 步，约 4 分钟，
页面用它）、long（2 × 3，2000 步，约 8 分钟，写 results/attention-sinks-long.json，不覆盖 full 的结果）、
wide（2 × 9，800 步，约 12 分钟，写 results/attention-sinks-wide.json：3 个种子定不下的读法用它）。

运行：python -m snippets.experiments.attention_sinks --preset full   （CPU，单线程）
"""

from __future__ import annotations

import statistics
import sys

import torch
from torch import nn
from tqdm import tqdm

from snippets.experiments._cli import experiment_main
from snippets.experiments.attention_residuals import SUCCESSORS, TABLE_SEED, entropy_floor, sample, transition_table
from snippets.experiments.copy_task import lr_factor
from snippets.residual_stream import AttnResDecoder
from snippets.sparse_attention import sliding_window_mask

KIND = "attention-sinks"
LONG_OUT = "attention-sinks-long.json"  # long 的默认输出文件，与 full 的文件并存
WIDE_OUT = "attention-sinks-wide.json"  # wide 的默认输出文件
MODULE = "snippets.experiments.attention_sinks"
SEED = 0
VOCAB = 8
BOS = VOCAB                  # bos 开头的固定开始符号：词表里多出的一个
CONDITIONS = ("plain", "bos")
FIRST_S = (1, 2, 4)          # 「前 s 个词元」的 s
MODES = ("full", "window", "sinks", "middle")

MODEL = {"vocab_size": VOCAB, "n_layers": 4, "d_model": 48, "n_heads": 4, "d_ff": 96}
# seq_len 64：远处的查询 t ≥ far = 32；中间词元在 middle = 16；滚动缓存只对 t ≥ score_from = 40 计分，
# 那里窗口 w ≤ 16 看的是 [t − w + 1, t] ⊂ [25, 63]，前 4 个与中间 4 个（16…19）都在窗口外
COMMON = {"conditions": list(CONDITIONS), "seq_len": 64, "far": 32, "middle": 16, "score_from": 40,
          "windows": [4, 8, 16], "sinks": 4, "model": MODEL}
PRESETS = {
    # tiny：只给测试用（几秒钟），结论没有意义
    "tiny": {**COMMON, "seeds": [0], "steps": 3, "warmup_steps": 1, "batch_size": 4, "lr": 3e-3, "eval_every": 3,
             "val_sequences": 8},
    "quick": {**COMMON, "seeds": [0, 1, 2], "steps": 120, "warmup_steps": 15, "batch_size": 16, "lr": 5e-3,
              "eval_every": 50, "val_sequences": 128},
    "full": {**COMMON, "seeds": [0, 1, 2], "steps": 800, "warmup_steps": 40, "batch_size": 16, "lr": 5e-3,
             "eval_every": 100, "val_sequences": 128},
    # long：2000 步（约 8 分钟）：汇点在「充分训练之后」才出现（Gu 等 2024），多练 2.5 倍，读法会不会变
    "long": {**COMMON, "seeds": [0, 1, 2], "steps": 2000, "warmup_steps": 40, "batch_size": 16, "lr": 5e-3,
             "eval_every": 250, "val_sequences": 128},
    # wide：与 full 相同（800 步），9 个种子（约 12 分钟）：full 的 3 个种子定不下的读法
    "wide": {**COMMON, "seeds": list(range(10)), "steps": 800, "warmup_steps": 40, "batch_size": 16, "lr": 5e-3,
             "eval_every": 100, "val_sequences": 128},
}


def make_batch(table: torch.Tensor, batch: int, n: int, gen: torch.Generator, condition: str) -> torch.Tensor:
    """(batch, n) 的词元：plain 是 n 个马尔可夫符号；bos 是 BOS 加 n − 1 个马尔可夫符号。"""
    if condition == "plain":
        return sample(table, batch, n, gen)
    return torch.cat([torch.full((batch, 1), BOS, dtype=torch.long), sample(table, batch, n - 1, gen)], dim=1)


def token_losses(logits: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """位置 t 的输出预测 x[t+1]：返回 (batch, n−1) 的逐位置交叉熵（nats）。"""
    return nn.functional.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1),
                                       reduction="none").view(x.shape[0], -1)


def train_loss(logits: torch.Tensor, x: torch.Tensor, condition: str) -> torch.Tensor:
    # 只计前面已有两个马尔可夫符号的目标：plain 从 x[2] 起（与第 11 章相同），bos 从 x[3] 起
    return token_losses(logits, x)[:, 1 + (condition == "bos"):].mean()


def scored_floor(table: torch.Tensor, x: torch.Tensor, condition: str, score_from: int) -> float:
    """真实分布在计分目标 x[t+1]（t ≥ score_from）上的平均交叉熵。"""
    symbols = x if condition == "plain" else x[:, 1:]                        # 去掉 BOS：马尔可夫坐标
    return entropy_floor(table, symbols[:, score_from - 1 - (condition == "bos"):])


def window_masks(n: int, window: int, sinks: int, middle: int) -> dict:
    """四种掩码，都是 (n, n) bool、True = 可以看。middle：(d) 多看的 s 个中间词元从这里开始。"""
    band = sliding_window_mask(n, window)                                    # (n, n)
    i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]
    mid = (j >= middle) & (j < middle + sinks) & (j <= i)                    # 中间 s 列（只看过去）
    return {"full": torch.ones(n, n, dtype=torch.bool).tril(), "window": band,
            "sinks": sliding_window_mask(n, window, sinks=sinks), "middle": band | mid}


def attention_mass(model: AttnResDecoder, x: torch.Tensor, far: int, middle: int) -> dict:
    """每层每个头：查询 t ≥ far 放在前 s 个词元、中间词元 middle 上的平均质量，和均匀头的基线。"""
    with torch.no_grad():
        model(x, record=True)
    n = x.shape[1]
    out = {f"first{s}": [] for s in FIRST_S} | {"middle": []}
    for w in model.trace["attention"]:                                      # (batch, h, n, n)
        rows = w[:, :, far:, :].double()                                    # (batch, h, n − far, n)
        for s in FIRST_S:
            out[f"first{s}"].append(rows[..., :s].sum(-1).mean(dim=(0, 2)).tolist())   # (h,)
        out["middle"].append(rows[..., middle].mean(dim=(0, 2)).tolist())
    t = torch.arange(far, n, dtype=torch.float64)
    uniform = {f"first{s}": (s / (t + 1)).mean().item() for s in FIRST_S} | {"middle": (1 / (t + 1)).mean().item()}
    return {"mass": out, "uniform": uniform}


def cache_losses(model: AttnResDecoder, val: torch.Tensor, cfg: dict) -> list[dict]:
    """四种掩码下，位置 ≥ score_from 的平均交叉熵（每个窗口一组）。"""
    n, rows = val.shape[1], []
    with torch.no_grad():
        for w in cfg["windows"]:
            for mode, mask in window_masks(n, w, cfg["sinks"], cfg["middle"]).items():
                loss = token_losses(model(val, mask=mask), val)[:, cfg["score_from"]:].mean().item()
                rows.append({"window": w, "mode": mode, "attended": int(mask[-1].sum()), "loss": loss})
    return rows


def run_one(condition: str, seed: int, cfg: dict, table: torch.Tensor, val: torch.Tensor) -> dict:
    torch.manual_seed(seed)
    vocab = cfg["model"]["vocab_size"] + (condition == "bos")               # bos：多一个开始符号
    model = AttnResDecoder(**{**cfg["model"], "vocab_size": vocab}, residual="standard")
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=cfg["lr"], betas=(0.9, 0.98), eps=1e-9)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, cfg["warmup_steps"], cfg["steps"]))
    out = {"condition": condition, "seed": seed, "params": sum(p.numel() for p in model.parameters()), "curve": [],
           "attention_init": attention_mass(model, val, cfg["far"], cfg["middle"])}
    for step in range(1, cfg["steps"] + 1):
        x = make_batch(table, cfg["batch_size"], cfg["seq_len"], gen, condition)
        loss = train_loss(model(x), x, condition)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        if step % cfg["eval_every"] == 0 or step == cfg["steps"]:
            with torch.no_grad():
                out["curve"].append({"step": step, "val_loss": train_loss(model(val), val, condition).item()})
    out["val_loss"] = out["curve"][-1]["val_loss"]
    out["attention_trained"] = attention_mass(model, val, cfg["far"], cfg["middle"])
    out["cache"] = cache_losses(model, val, cfg)
    return out


def summarize(runs: list[dict], cfg: dict, floors: dict) -> list[dict]:
    """每种开头、每个窗口、每种掩码：种子均值、范围，与熵下界之差，以及相对全注意力的差（每个种子先减再平均）。"""
    rows = []
    for condition, w, mode in ((c, w, m) for c in cfg["conditions"] for w in cfg["windows"] for m in MODES):
        mine = [r for r in runs if r["condition"] == condition]
        losses = [next(c["loss"] for c in r["cache"] if c["window"] == w and c["mode"] == mode) for r in mine]
        fulls = [next(c["loss"] for c in r["cache"] if c["window"] == w and c["mode"] == "full") for r in mine]
        rows.append({"condition": condition, "window": w, "mode": mode, "loss_mean": statistics.fmean(losses),
                     "loss_min": min(losses), "loss_max": max(losses),
                     "excess_mean": statistics.fmean(losses) - floors[condition],
                     "vs_full_mean": statistics.fmean(a - b for a, b in zip(losses, fulls))})
    return rows


def run(preset: str, cfg: dict) -> dict:
    table = transition_table()
    vals = {c: make_batch(table, cfg["val_sequences"], cfg["seq_len"], torch.Generator().manual_seed(999), c)
            for c in cfg["conditions"]}                                     # 固定的验证序列，每种开头一组
    floors = {c: scored_floor(table, vals[c], c, cfg["score_from"]) for c in cfg["conditions"]}
    jobs = [(c, seed) for c in cfg["conditions"] for seed in cfg["seeds"]]
    runs = [run_one(c, seed, cfg, table, vals[c]) for c, seed in tqdm(jobs, desc=KIND, file=sys.stderr, unit="run")]
    return {"task": {"name": "order-2 markov", "vocab_size": VOCAB, "successors": SUCCESSORS, "bos": BOS,
                     "table_seed": TABLE_SEED, "entropy_floor": floors},
            "config": {**cfg, "optimizer": "Adam(betas=(0.9, 0.98), eps=1e-9)", "threads": 1},
            "runs": runs, "summary": summarize(runs, cfg, floors)}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    return experiment_main(MODULE, KIND, PRESETS, run, argv, seed=SEED, default_preset="quick",
                           outputs={"long": LONG_OUT, "wide": WIDE_OUT})


if __name__ == "__main__":
    raise SystemExit(main())
