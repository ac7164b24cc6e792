"""实验：加性注意力、不缩放的点积注意力、缩放点积注意力，谁在查表任务上学得好？（第 03 章）

论文 §3.2.1 说："While for small values of d_k the two mechanisms perform similarly, additive
attention outperforms dot product attention without scaling for larger values of d_k"，
出处是 Britz et al. 2017，论文本身没有做这个实验。这里在一个小任务上量一下。

任务（键–值查表，associative lookup）：每个样本有 n_pairs 对 (键向量 x_i, 类别 c_i)，
x_i ~ N(0, I_{d_in})，c_i 在 n_classes 个类别里均匀抽取；查询就是其中一个键 x_j，
目标是它的类别 c_j。模型只有一层注意力：

    分数 s_i = score(x_j, x_i)            三种打分方式之一，宽度 d_k
    权重 α = softmax(s)，输出 o = Σ α_i E[c_i]   E：可学习的类别嵌入 (n_classes, d_v)
    logits = o W_out + b                        线性读出，交叉熵损失

注意力的输出先经过线性层再进损失（和 Transformer 里一样），所以 softmax 饱和时，
到分数的梯度会变小（见第 03 章「饱和时的梯度」）。三种打分方式用的都是读者在页面上看到的代码：
additive → snippets.additive.AdditiveAttention（隐藏层带偏置 b_h）；additive-nobias → 同一个类，bias=False
（Bahdanau 论文公式的原样：没有 b_h）；dot-scaled → snippets.attention.scaled_dot_product_attention；
dot-unscaled → 同一个函数，把 q 乘 √d_k 传进去（softmax(√d_k·q kᵀ/√d_k) = softmax(q kᵀ)）。
初始化让 q、k 的各分量方差约为 1（论文脚注 4 的假设）：W ~ N(0, 1/d_in)。

运行：python -m snippets.experiments.additive_vs_dot --preset full   （CPU，单线程，约 3–4 分钟）
"""

from __future__ import annotations

import math
import statistics
import sys

import torch
from torch import nn
from tqdm import tqdm

from snippets.experiments._cli import experiment_main
from snippets.additive import AdditiveAttention, additive_scores
from snippets.attention import scaled_dot_product_attention
from snippets.softmax import attention_logits

KIND = "additive-vs-dot"
MODULE = "snippets.experiments.additive_vs_dot"
MECHANISMS = ("additive", "additive-nobias", "dot-unscaled", "dot-scaled")
SEED = 0

TASK = {"n_pairs": 16, "d_in": 32, "n_classes": 8, "d_v": 32}
PRESETS = {
    # tiny：只给测试用（几秒钟），结论没有意义
    "tiny": {"d_k_values": [4, 64], "seeds": [0], "steps": 30, "batch_size": 32, "lr": 3e-3,
             "eval_size": 256, "eval_every": 15, "early_step": 15},
    "quick": {"d_k_values": [4, 16, 64, 256], "seeds": [0], "steps": 400, "batch_size": 64, "lr": 3e-3,
              "eval_size": 1024, "eval_every": 50, "early_step": 200},
    "full": {"d_k_values": [4, 16, 64, 256], "seeds": [0, 1, 2], "steps": 1000, "batch_size": 64,
             "lr": 3e-3, "eval_size": 2048, "eval_every": 50, "early_step": 200},
    # long：与 full 相同，只是 8 个种子（约 9 分钟）；3 个种子定不下的比较在这里再读一次
    "long": {"d_k_values": [4, 16, 64, 256], "seeds": [0, 1, 2, 3, 4, 5, 6, 7], "steps": 1000, "batch_size": 64,
             "lr": 3e-3, "eval_size": 2048, "eval_every": 50, "early_step": 200},
}
LONG_OUT = "additive-vs-dot-long.json"  # long 的默认输出文件，与 full 的 additive-vs-dot.json 并存


def make_batch(gen: torch.Generator, batch: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """查表任务的一批：query (batch, 1, d_in)，keys (batch, n_pairs, d_in)，labels (batch, n_pairs)，target (batch,)。"""
    n, d_in, c = TASK["n_pairs"], TASK["d_in"], TASK["n_classes"]
    keys = torch.randn(batch, n, d_in, generator=gen)
    labels = torch.randint(c, (batch, n), generator=gen)
    pick = torch.randint(n, (batch,), generator=gen)
    rows = torch.arange(batch)
    return keys[rows, pick].unsqueeze(1), keys, labels, labels[rows, pick]


class Lookup(nn.Module):
    """一层注意力 + 类别嵌入 + 线性读出；mechanism 决定打分方式。"""

    def __init__(self, mechanism: str, d_k: int):
        super().__init__()
        if mechanism not in MECHANISMS:
            raise ValueError(f"mechanism must be one of {MECHANISMS}, got {mechanism!r}")
        d_in, d_v, c = TASK["d_in"], TASK["d_v"], TASK["n_classes"]
        self.mechanism, self.d_k = mechanism, d_k
        if mechanism.startswith("additive"):
            self.attn = AdditiveAttention(d_in, d_in, d_k, bias=mechanism == "additive")
        else:
            self.w_q = nn.Parameter(torch.randn(d_in, d_k) / math.sqrt(d_in))  # q 的分量方差约为 1
            self.w_k = nn.Parameter(torch.randn(d_in, d_k) / math.sqrt(d_in))
        self.values = nn.Embedding(c, d_v)
        self.readout = nn.Linear(d_v, c)

    def scorer_parameters(self) -> list[nn.Parameter]:
        return list(self.attn.parameters()) if self.mechanism.startswith("additive") else [self.w_q, self.w_k]

    def logits_into_softmax(self, query: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        """进入 softmax 的分数 (batch, 1, n_pairs)，只用于统计（与 forward 里算的是同一个量）。"""
        if self.mechanism.startswith("additive"):
            a = self.attn
            return additive_scores(query, keys, a.w_q, a.w_k, a.v_a, a.b_h)
        scale = "sqrt" if self.mechanism == "dot-scaled" else "none"
        return attention_logits(query @ self.w_q, keys @ self.w_k, scale)

    def forward(self, query, keys, labels):
        v = self.values(labels)  # (batch, n_pairs, d_v)
        if self.mechanism.startswith("additive"):
            out, weights = self.attn(query, keys, v)
        else:
            q, k = query @ self.w_q, keys @ self.w_k  # (batch, 1, d_k), (batch, n_pairs, d_k)
            if self.mechanism == "dot-unscaled":
                q = q * math.sqrt(self.d_k)  # 抵消函数内部的 1/√d_k：softmax(q kᵀ)
            out, weights = scaled_dot_product_attention(q, k, v)
        return self.readout(out.squeeze(1)), weights.squeeze(1)  # (batch, n_classes), (batch, n_pairs)


@torch.no_grad()
def evaluate(model: Lookup, data) -> dict:
    query, keys, labels, target = data
    logits, weights = model(query, keys, labels)
    s = model.logits_into_softmax(query, keys).squeeze(1)  # (eval, n_pairs)
    return {
        "accuracy": (logits.argmax(-1) == target).float().mean().item(),
        "loss": nn.functional.cross_entropy(logits, target).item(),
        "logit_std": s.std(dim=-1).mean().item(),  # 每行分数的标准差，再对样本取平均
        "max_weight": weights.amax(-1).mean().item(),  # 每行最大的注意力权重，再取平均
    }


def run_one(mechanism: str, d_k: int, seed: int, cfg: dict, eval_data) -> dict:
    torch.manual_seed(1000 * seed + d_k)  # 参数初始化：同一 (seed, d_k) 下三种机制各自固定
    model = Lookup(mechanism, d_k)
    gen = torch.Generator().manual_seed(seed)  # 训练数据：同一个 seed 下三种机制看到同一串样本
    opt = torch.optim.Adam(model.parameters(), lr=cfg["lr"])
    start = evaluate(model, eval_data)
    curve = [{"step": 0, "accuracy": start["accuracy"]}]
    grad_norm0 = None
    for step in range(1, cfg["steps"] + 1):
        query, keys, labels, target = make_batch(gen, cfg["batch_size"])
        logits, _ = model(query, keys, labels)
        loss = nn.functional.cross_entropy(logits, target)
        opt.zero_grad()
        loss.backward()
        if grad_norm0 is None:  # 第一步：打分参数的梯度范数（初始化时 softmax 饱和与否）
            grad_norm0 = math.sqrt(sum(p.grad.pow(2).sum().item() for p in model.scorer_parameters()))
        opt.step()
        if step % cfg["eval_every"] == 0 or step == cfg["steps"]:
            curve.append({"step": step, "accuracy": evaluate(model, eval_data)["accuracy"]})
    end = evaluate(model, eval_data)
    return {"mechanism": mechanism, "d_k": d_k, "seed": seed,
            "init": {"logit_std": start["logit_std"], "max_weight": start["max_weight"],
                     "accuracy": start["accuracy"], "scorer_grad_norm": grad_norm0},
            "final": end, "curve": curve}


def summarize(runs: list[dict], cfg: dict) -> list[dict]:
    rows = []
    for d_k in cfg["d_k_values"]:
        for mech in MECHANISMS:
            mine = [r for r in runs if r["mechanism"] == mech and r["d_k"] == d_k]
            acc = [r["final"]["accuracy"] for r in mine]
            early = [c["accuracy"] for r in mine for c in r["curve"] if c["step"] == cfg["early_step"]]
            rows.append({
                "mechanism": mech, "d_k": d_k, "n_seeds": len(mine),
                "accuracy_mean": statistics.fmean(acc), "accuracy_min": min(acc), "accuracy_max": max(acc),
                "accuracy_std": statistics.stdev(acc) if len(acc) > 1 else 0.0,
                "early_accuracy_mean": statistics.fmean(early), "early_accuracy_min": min(early),
                "init_logit_std_mean": statistics.fmean(r["init"]["logit_std"] for r in mine),
                "init_max_weight_mean": statistics.fmean(r["init"]["max_weight"] for r in mine),
                "final_logit_std_mean": statistics.fmean(r["final"]["logit_std"] for r in mine),
            })
    return rows


def run(preset: str, cfg: dict) -> dict:
    eval_data = make_batch(torch.Generator().manual_seed(12345), cfg["eval_size"])  # 固定的测试集
    jobs = [(m, d, s) for d in cfg["d_k_values"] for s in cfg["seeds"] for m in MECHANISMS]
    runs = [run_one(mech, d_k, seed, cfg, eval_data)
            for mech, d_k, seed in tqdm(jobs, desc=KIND, file=sys.stderr, unit="run")]
    return {"task": dict(TASK), "config": {**cfg, "mechanisms": list(MECHANISMS), "optimizer": "Adam", "threads": 1},
            "runs": runs, "summary": summarize(runs, cfg)}


def main(argv=None) -> int:
    return experiment_main(MODULE, KIND, PRESETS, run, argv, seed=SEED, default_preset="quick",
                           outputs={"long": LONG_OUT})


if __name__ == "__main__":
    raise SystemExit(main())
