"""端到端检查：在 CPU 上从零训练一个小 Transformer 做「复制/倒序」任务，用贪心解码（带 KV 缓存）评估。

    python -m snippets.experiments.copy_task [--preset full|quick|tiny] [--out results/copy-task.json]

源句是随机符号序列，目标是同一个序列（task="copy"，默认）或它的倒序（task="reverse"）。
模型就是 snippets/transformer.py 的 Transformer（post-LN、三处权重共享、嵌入乘 √d_model）。
写出的 JSON（kind "copy-task"，模式 results/schema/copy-task.schema.json）带出处、超参数、
损失曲线、贪心解码的逐词准确率、训练秒数，以及一个例子的三种注意力权重（最后一层，各头平均）。
预设：full 与 quick 都训练 400 步（CPU 上约 15 s）；tiny 只训练几步，给测试做冒烟运行。
"""

from __future__ import annotations

import sys
import time

import torch
from torch import nn
from tqdm import tqdm

from snippets.decoding import greedy_decode
from snippets.experiments._cli import experiment_main
from snippets.transformer import Transformer

KIND = "copy-task"
PRESETS = {"full": {}, "quick": {}, "tiny": {"steps": 5, "warmup_steps": 2, "eval_sequences": 8}}

PAD, BOS = 0, 1          # 特殊词：PAD 不出现在本任务的数据里（序列等长），BOS 是解码起始符
FIRST_SYMBOL = 2         # 普通符号的 id 从 2 开始

DEFAULT_CONFIG: dict = {
    "task": "copy",          # copy：目标 = 源句；reverse：目标 = 源句倒序
    "vocab_size": 12,        # PAD、BOS + 10 个符号
    "seq_len": 8,
    "d_model": 64,
    "num_heads": 4,
    "num_layers": 2,
    "d_ff": 128,
    "dropout": 0.0,
    "norm_first": False,     # 论文的 post-LN
    "tie_weights": True,
    "scale_embedding": True,
    "optimizer": "Adam(betas=(0.9, 0.98), eps=1e-9)",
    "lr": 3e-3,
    "warmup_steps": 50,      # 学习率：前 warmup_steps 步线性升到 lr，之后线性降到 0
    "steps": 400,
    "batch_size": 64,
    "seed": 0,
    "eval_sequences": 256,
    "eval_seed": 12345,      # 评估用的新序列来自另一个随机数发生器，训练时从未见过
    "num_threads": 1,
}


def make_batch(batch_size: int, seq_len: int, vocab_size: int, task: str,
               generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """返回 src (batch, seq_len) 和 tgt (batch, seq_len)。"""
    src = torch.randint(FIRST_SYMBOL, vocab_size, (batch_size, seq_len), generator=generator)
    if task == "copy":
        tgt = src.clone()
    elif task == "reverse":
        tgt = src.flip(1)
    else:
        raise ValueError(f"task must be 'copy' or 'reverse', got task={task!r}")
    return src, tgt


def shift_right(tgt: torch.Tensor) -> torch.Tensor:
    # 解码器输入 = [BOS, y_1, …, y_{m-1}]：位置 i 预测 y_i 时只看得到 y_{<i}
    bos = torch.full((tgt.shape[0], 1), BOS, dtype=tgt.dtype)
    return torch.cat([bos, tgt[:, :-1]], dim=1)


def lr_factor(step: int, warmup_steps: int, total_steps: int) -> float:
    """学习率倍数：线性预热到 1，再线性降到 0（末尾学习率很小，避免 post-LN 在高学习率下的损失尖峰）。"""
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    return max(0.0, (total_steps - step) / max(1, total_steps - warmup_steps))


def build_model(cfg: dict) -> Transformer:
    return Transformer(cfg["vocab_size"], d_model=cfg["d_model"], num_heads=cfg["num_heads"],
                       num_layers=cfg["num_layers"], d_ff=cfg["d_ff"], dropout=cfg["dropout"],
                       max_len=max(64, cfg["seq_len"] + 1), tie_weights=cfg["tie_weights"],
                       norm_first=cfg["norm_first"], scale_embedding=cfg["scale_embedding"])


@torch.no_grad()
def evaluate(model: Transformer, cfg: dict) -> float:
    """在 eval_sequences 条新序列上做贪心解码，返回逐词准确率。"""
    model.eval()
    gen = torch.Generator().manual_seed(cfg["eval_seed"])
    src, tgt = make_batch(cfg["eval_sequences"], cfg["seq_len"], cfg["vocab_size"], cfg["task"], gen)
    pred = greedy_decode(model, src, cfg["seq_len"], BOS)           # (batch, seq_len)
    return float((pred == tgt).double().mean())


@torch.no_grad()
def attention_example(model: Transformer, cfg: dict) -> dict:
    """一个例子的三种注意力权重：最后一层、各头平均。解码器输入用模型自己的贪心输出（右移）。"""
    model.eval()
    gen = torch.Generator().manual_seed(cfg["eval_seed"] + 1)
    src, tgt = make_batch(1, cfg["seq_len"], cfg["vocab_size"], cfg["task"], gen)
    pred = greedy_decode(model, src, cfg["seq_len"], BOS)           # (1, m)
    tgt_in = shift_right(pred)
    model(src, tgt_in)                                              # 各层记下自己的注意力权重
    enc, dec = model.encoder_layers[-1], model.decoder_layers[-1]

    def mean_heads(w: torch.Tensor) -> list[list[float]]:
        # (1, h, n_q, n_k) -> (n_q, n_k)，保留 6 位小数
        return [[round(float(x), 6) for x in row] for row in w[0].mean(dim=0)]

    return {
        "layer": len(model.encoder_layers) - 1,
        "reduction": "mean over heads",
        "num_heads": model.num_heads,
        "src_tokens": src[0].tolist(),
        "tgt_input_tokens": tgt_in[0].tolist(),
        "predicted_tokens": pred[0].tolist(),
        "target_tokens": tgt[0].tolist(),
        "encoder_self": mean_heads(enc.attn_weights),               # (n, n)
        "decoder_masked_self": mean_heads(dec.self_attn_weights),   # (m, m)，对角线以上为 0
        "cross": mean_heads(dec.cross_attn_weights),                # (m, n)
    }


def train_copy_task(config: dict | None = None) -> dict:
    """训练并评估；返回结果字典（不含来源信息）。会临时设置 torch 的线程数，结束后恢复。"""
    cfg = {**DEFAULT_CONFIG, **(config or {})}
    old_threads = torch.get_num_threads()
    torch.set_num_threads(cfg["num_threads"])
    try:
        torch.manual_seed(cfg["seed"])
        gen = torch.Generator().manual_seed(cfg["seed"])
        model = build_model(cfg)
        opt = torch.optim.Adam(model.parameters(), lr=cfg["lr"], betas=(0.9, 0.98), eps=1e-9)
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt, lambda step: lr_factor(step, cfg["warmup_steps"], cfg["steps"]))
        loss_fn = nn.CrossEntropyLoss()
        losses = []
        model.train()
        start = time.perf_counter()
        for _ in tqdm(range(cfg["steps"]), desc="copy-task", unit="step", file=sys.stderr):
            src, tgt = make_batch(cfg["batch_size"], cfg["seq_len"], cfg["vocab_size"], cfg["task"], gen)
            logits = model(src, shift_right(tgt))                   # (batch, m, vocab)
            loss = loss_fn(logits.reshape(-1, cfg["vocab_size"]), tgt.reshape(-1))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            losses.append(loss.item())
        train_seconds = time.perf_counter() - start
        accuracy = evaluate(model, cfg)
        example = attention_example(model, cfg)
    finally:
        torch.set_num_threads(old_threads)
    return {
        "hyperparameters": cfg,
        "num_parameters": sum(p.numel() for p in model.parameters()),
        "loss_curve": {"every": 10, "values": [round(x, 6) for x in losses[::10]] + [round(losses[-1], 6)]},
        "final_loss": losses[-1],
        "greedy_token_accuracy": accuracy,
        "train_seconds": round(train_seconds, 3),
        "attention": example,
    }


def run(preset: str, cfg: dict, task: str = "copy") -> dict:
    return train_copy_task({"task": task, **cfg})


def main(argv: list[str] | None = None) -> int:
    return experiment_main("snippets.experiments.copy_task", KIND, PRESETS, run, argv, seed=DEFAULT_CONFIG["seed"])


if __name__ == "__main__":
    raise SystemExit(main())
