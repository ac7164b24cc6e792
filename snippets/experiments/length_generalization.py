"""实验：四种位置编码与不加位置编码（NoPE）在训练长度之外的表现（第 07 章）。

论文 §3.5 选正弦编码的理由是「it may allow the model to extrapolate to sequence lengths longer than the ones
encountered during training」，论文没有检验它。这里在一个只靠相对位置就能解的玩具任务上量一下：

    任务      因果语言模型式的「前一个词元」：输入 x_0 … x_{n−1}（随机符号），位置 i（i ≥ 1）要输出 x_{i−1}
    模型      TokenEmbedding（×√d）+ 位置编码 + 2 层读者的 EncoderLayer（pre-LN，自注意力换成
              snippets.positional.PositionalSelfAttention，带因果掩码）+ LayerNorm + 线性读出
    五种编码  sinusoid  输入端加正弦编码（论文 §3.5）
              learned   输入端加可学习的位置嵌入表（表 3 (E)），表长 = 最长的评估长度，初始化 N(0, 1/2)
              rope      不加在输入上，注意力里旋转 q、k（RoPE）
              alibi     不加在输入上，注意力分数加 −m_h·(i − j)（ALiBi）
              nope      哪里都不加位置（NoPE）：位置信息只能来自因果掩码
    训练      只在长度 train_len 的序列上训练；评估在 eval_lens 的每个长度上，分别报告
              全部计分位置的准确率，以及只看 i ≥ train_len（训练时从未出现过的位置）的准确率
    探针      最长的评估长度上（同一批评估序列）：按位置分段的准确率（1 … L−1，L … 2L−1，2L … 4L−1，…），
              以及「前一个词元头」（训练长度内对偏移 −1 的键注意力最多的那一层、那一个头）的注意力：
              偏移 −1 上的权重（训练长度内、之外），和位置 ≥ L 的查询落在距离 ≥ L 的键上的总权重
              （训练时从未出现过的距离）。每个头的这三个数都记下

可学习位置嵌入表里 ≥ train_len 的行在训练中从未参与前向，梯度恒为 0，Adam 不更新它们：结果文件记下它们
与初始值的最大差（应为 0），这是「learned 在训练长度之外只有随机向量」的直接证据，不靠训练时长。

预设：tiny（测试用，几秒）、quick（5 种 × 2 个种子，300 步，约 1 分钟）、full（5 种 × 5 个种子，600 步，
约 7 分钟，页面用它）、long（正弦、RoPE 与 NoPE，5 个种子，2400 步，约 16 分钟；回答「多练几倍会不会改变读法」，
默认写 results/length-generalization-long.json，不覆盖 full 的结果）。

运行：python -m snippets.experiments.length_generalization --preset full   （CPU，单线程）
"""

from __future__ import annotations

import math
import statistics
import sys

import torch
from torch import nn
from tqdm import tqdm

from snippets.experiments._cli import experiment_main
from snippets.experiments.copy_task import lr_factor
from snippets.positional import PositionalSelfAttention, sinusoidal_positional_encoding
from snippets.transformer import EncoderLayer, TokenEmbedding

KIND = "length-generalization"
MODULE = "snippets.experiments.length_generalization"
SEED = 0
ENCODINGS = ["sinusoid", "learned", "rope", "alibi", "nope"]

MODEL = {"vocab_size": 16, "d_model": 64, "num_heads": 4, "num_layers": 2, "d_ff": 128, "norm_first": True}
PRESETS = {
    # tiny：只给测试用（几秒钟），结论没有意义
    "tiny": {"encodings": ENCODINGS, "seeds": [0], "steps": 4, "warmup_steps": 2, "batch_size": 8, "lr": 3e-3,
             "train_len": 16, "eval_lens": [16, 32], "eval_sequences": 8},
    "quick": {"encodings": ENCODINGS, "seeds": [0, 1], "steps": 300, "warmup_steps": 30, "batch_size": 32,
              "lr": 3e-3, "train_len": 32, "eval_lens": [32, 64, 128, 256], "eval_sequences": 64},
    "full": {"encodings": ENCODINGS, "seeds": [0, 1, 2, 3, 4], "steps": 600, "warmup_steps": 60, "batch_size": 32,
             "lr": 3e-3, "train_len": 32, "eval_lens": [32, 64, 128, 256], "eval_sequences": 128},
    # long：与 full 相同，只是 4 倍步数，只跑读法可能因训练更久而改变的三种编码
    "long": {"encodings": ["sinusoid", "rope", "nope"], "seeds": list(range(11)), "steps": 2400, "warmup_steps": 60,
             "batch_size": 32, "lr": 3e-3, "train_len": 32, "eval_lens": [32, 64, 128, 256], "eval_sequences": 128},
}
LONG_OUT = "length-generalization-long.json"  # long 的默认输出文件，与 full 的文件并存


class PositionLM(nn.Module):
    """嵌入 + （可选的）输入端位置编码 + 读者的 EncoderLayer（注意力换成带 RoPE/ALiBi 的因果注意力）。
    encoding="nope"：输入端与注意力里都不加位置，只有因果掩码。"""

    def __init__(self, encoding: str, max_len: int, vocab_size: int, d_model: int, num_heads: int,
                 num_layers: int, d_ff: int, norm_first: bool = True):
        super().__init__()
        if encoding not in ENCODINGS:
            raise ValueError(f"encoding must be one of {ENCODINGS}, got encoding={encoding!r}")
        self.encoding = encoding
        self.embed = TokenEmbedding(vocab_size, d_model)                 # ×√d，N(0, 1/d)：每维方差约 1
        if encoding == "sinusoid":
            self.register_buffer("pe", sinusoidal_positional_encoding(max_len, d_model), persistent=False)
        elif encoding == "learned":
            # 每维方差 1/2，与正弦编码（sin² 与 cos² 的平均）相同
            self.pe = nn.Parameter(torch.randn(max_len, d_model) * math.sqrt(0.5))
        else:                                                            # rope、alibi、nope
            self.pe = None
        attn_position = encoding if encoding in ("rope", "alibi") else "none"
        self.layers = nn.ModuleList()
        for _ in range(num_layers):
            layer = EncoderLayer(d_model, num_heads, d_ff, dropout=0.0, norm_first=norm_first)
            layer.self_attn = PositionalSelfAttention(d_model, num_heads, position=attn_position)
            self.layers.append(layer)
        self.norm = nn.LayerNorm(d_model)
        self.readout = nn.Linear(d_model, vocab_size)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        # tokens (batch, n) -> logits (batch, n, |V|)
        z = self.embed(tokens)                                           # (batch, n, d)
        if self.pe is not None:
            z = z + self.pe[: tokens.shape[1]]
        for layer in self.layers:
            z = layer(z)                                                 # 因果掩码在注意力里
        return self.readout(self.norm(z))


def make_batch(batch_size: int, n: int, vocab_size: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """x (batch, n) 随机符号；y (batch, n−1) = x 的前一个词元，对应位置 1 … n−1。"""
    x = torch.randint(0, vocab_size, (batch_size, n), generator=gen)
    return x, x[:, :-1]


@torch.no_grad()
def evaluate(model: PositionLM, n: int, train_len: int, sequences: int, seed: int) -> dict:
    model.eval()
    x, y = make_batch(sequences, n, MODEL["vocab_size"], torch.Generator().manual_seed(seed))
    correct = model(x)[:, 1:].argmax(-1) == y                           # (sequences, n−1)，位置 1 … n−1
    beyond = correct[:, train_len - 1:]                                  # 位置 ≥ train_len
    model.train()
    return {"length": n, "accuracy": correct.double().mean().item(),
            "accuracy_beyond": beyond.double().mean().item() if beyond.numel() else None}


def position_buckets(n: int, train_len: int) -> list[tuple[int, int]]:
    """查询位置的分段 [start, end)：1 … L−1（训练长度内），然后 L … 2L−1、2L … 4L−1 …，直到 n−1。"""
    edges, end = [1, train_len], train_len
    while end < n:
        end = min(2 * end, n)
        edges.append(end)
    return list(zip(edges[:-1], edges[1:]))


@torch.no_grad()
def probe(model: PositionLM, n: int, train_len: int, sequences: int, seed: int) -> dict:
    """最长评估长度上的机制数据（与 evaluate 用同一批序列）：分段准确率与每个头的注意力去向。"""
    if n <= train_len:
        raise ValueError(f"probe needs n > train_len, got n={n}, train_len={train_len}")
    model.eval()
    x, y = make_batch(sequences, n, MODEL["vocab_size"], torch.Generator().manual_seed(seed))
    correct = (model(x)[:, 1:].argmax(-1) == y).double()                # (sequences, n−1)，位置 1 … n−1
    model.train()
    buckets = [{"start": a, "end": b, "accuracy": correct[:, a - 1:b - 1].mean().item()}
               for a, b in position_buckets(n, train_len)]
    i = torch.arange(n)[:, None]                                         # (n, 1) 查询位置
    j = torch.arange(n)[None, :]                                         # (1, n) 键位置
    far = (i - j >= train_len).double()                                  # 训练时从未出现过的距离
    heads = []
    for layer_index, layer in enumerate(model.layers):
        w = layer.attn_weights.double().mean(0)                          # (h, n, n)，对序列取平均
        offset1 = w.diagonal(offset=-1, dim1=-2, dim2=-1)                # (h, n−1)：查询 1 … n−1 看前一个键
        far_mass = (w * far).sum(-1)[:, train_len:]                      # (h, n−L)：查询 L … n−1
        for h in range(w.shape[0]):
            heads.append({"layer": layer_index, "head": h,
                          "offset1_in_range": offset1[h, :train_len - 1].mean().item(),
                          "offset1_beyond": offset1[h, train_len - 1:].mean().item(),
                          "far_mass_beyond": far_mass[h].mean().item()})
    prev = max(range(len(heads)), key=lambda k: heads[k]["offset1_in_range"])
    return {"length": n, "buckets": buckets, "heads": heads, "previous_token_head": prev}


def run_one(encoding: str, seed: int, cfg: dict) -> dict:
    torch.manual_seed(seed)
    model = PositionLM(encoding, max(cfg["eval_lens"]), **MODEL)
    learned_init = model.pe.detach().clone() if encoding == "learned" else None
    gen = torch.Generator().manual_seed(seed)                           # 同一个种子下五种编码看到同一串数据
    opt = torch.optim.Adam(model.parameters(), lr=cfg["lr"], betas=(0.9, 0.98), eps=1e-9)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, cfg["warmup_steps"], cfg["steps"]))
    losses = []
    for _ in range(cfg["steps"]):
        x, y = make_batch(cfg["batch_size"], cfg["train_len"], MODEL["vocab_size"], gen)
        logits = model(x)[:, 1:]                                         # (batch, n−1, |V|)
        loss = nn.functional.cross_entropy(logits.reshape(-1, MODEL["vocab_size"]), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())
    out = {"encoding": encoding, "seed": seed, "final_loss": statistics.fmean(losses[-20:]),
           "eval": [evaluate(model, n, cfg["train_len"], cfg["eval_sequences"], 1000 + seed)
                    for n in cfg["eval_lens"]]}
    if max(cfg["eval_lens"]) > cfg["train_len"]:                         # 与最长评估长度同一批序列
        out["probe"] = probe(model, max(cfg["eval_lens"]), cfg["train_len"], cfg["eval_sequences"], 1000 + seed)
    if learned_init is not None:
        unseen = slice(cfg["train_len"], None)
        out["learned_unseen_rows_max_change"] = (model.pe.detach()[unseen] - learned_init[unseen]).abs().max().item()
        out["learned_seen_rows_max_change"] = (model.pe.detach()[:cfg["train_len"]]
                                               - learned_init[:cfg["train_len"]]).abs().max().item()
    return out


def summarize(runs: list[dict], cfg: dict) -> list[dict]:
    rows = []
    for encoding in cfg["encodings"]:
        mine = [r for r in runs if r["encoding"] == encoding]
        for k, n in enumerate(cfg["eval_lens"]):
            acc = [r["eval"][k]["accuracy"] for r in mine]
            beyond = [r["eval"][k]["accuracy_beyond"] for r in mine]
            row = {"encoding": encoding, "length": n, "n_seeds": len(mine),
                   "accuracy_mean": statistics.fmean(acc), "accuracy_min": min(acc), "accuracy_max": max(acc)}
            if beyond[0] is not None:
                row.update({"beyond_mean": statistics.fmean(beyond), "beyond_min": min(beyond),
                            "beyond_max": max(beyond)})
            rows.append(row)
    return rows


def run(preset: str, cfg: dict) -> dict:
    jobs = [(enc, seed) for seed in cfg["seeds"] for enc in cfg["encodings"]]
    runs = [run_one(enc, seed, cfg) for enc, seed in tqdm(jobs, desc=KIND, file=sys.stderr, unit="run")]
    return {"task": {"name": "previous-token", **MODEL},
            "config": {**cfg, "optimizer": "Adam(betas=(0.9, 0.98), eps=1e-9)", "threads": 1},
            "runs": runs, "summary": summarize(runs, cfg)}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    return experiment_main(MODULE, KIND, PRESETS, run, argv, seed=SEED, default_preset="quick",
                           outputs={"long": LONG_OUT})


if __name__ == "__main__":
    raise SystemExit(main())
