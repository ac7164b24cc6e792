"""实验：去掉 1/√d_k，传回 Q、K 的梯度是变小还是变大？（第 03 章）

论文 §3.2.1 的担心是：不缩放时 softmax 饱和，「gradients extremely small」。饱和确实让到**分数**的梯度
∂L/∂s = J·∂L/∂p 变小；但从分数再往 q、k 走一步还要乘缩放因子 c：s_ij = c·q_i·k_j，

    ∂L/∂q_i = c · Σ_j (∂L/∂s_ij) · k_j ，   ∂L/∂k_j = c · Σ_i (∂L/∂s_ij) · q_i ，

不缩放（c = 1）比缩放（c = 1/√d_k）多出 √d_k 倍。两者谁赢，这里直接量。

设置（初始化时，脚注 4 的假设）：q、k、v 的分量独立标准正态；每组 n_q 个查询、n_k 个键，
上游梯度 g = ∂L/∂o 也是独立标准正态、与缩放无关（L = Σ g·o）。同一批 q、k、v、g 分别用
c = 1/√d_k 与 c = 1 各算一次：分数用读者的 snippets.softmax.attention_logits（scale="sqrt" / "none"），
权重用 stable_softmax，输出 o = P·V，梯度由 autograd 给出。记录（每个 d_k、每个种子）：

- 每行 ‖∂L/∂s‖、‖∂L/∂q‖、每个键 ‖∂L/∂k‖ 的中位数，以及不缩放/缩放的中位数之比；
- 尾部份额：‖∂L/∂q‖² 最大的 10% 的查询占全部平方和的比例（两种缩放各一个）；
- 「几乎收不到信号」的查询比例：不缩放时 ‖∂L/∂q‖ 小于缩放时中位数 1% 的行所占的比例。

运行：python -m snippets.experiments.qk_gradient --preset full   （CPU，单线程，几秒到十几秒）
"""

from __future__ import annotations

import statistics
import sys

import torch
from tqdm import tqdm

from snippets.experiments._cli import experiment_main
from snippets.softmax import attention_logits, stable_softmax

KIND = "qk-gradient"
MODULE = "snippets.experiments.qk_gradient"
SEED = 0
TAIL = 0.10  # 尾部：‖∂L/∂q‖² 最大的 10% 的查询
STARVED = 0.01  # 「几乎收不到信号」：小于缩放时中位数的 1%

PRESETS = {
    # tiny：只给测试用，结论没有意义
    "tiny": {"d_k_values": [16, 256], "seeds": [0], "groups": 4, "n_q": 16, "n_k": 64, "d_v": 16},
    "quick": {"d_k_values": [16, 64, 256, 1024], "seeds": [0], "groups": 32, "n_q": 64, "n_k": 64, "d_v": 16},
    "full": {"d_k_values": [16, 64, 256, 1024], "seeds": list(range(16)), "groups": 64, "n_q": 64, "n_k": 64,
             "d_v": 16},
}


def gradients(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor, scale: str) -> dict:
    """一次前向与反向：返回 ∂L/∂s（每行）、∂L/∂q（每个查询）、∂L/∂k（每个键）的范数。

    q (groups, n_q, d_k)，k (groups, n_k, d_k)，v (groups, n_k, d_v)，g = ∂L/∂o (groups, n_q, d_v)。
    """
    q, k = q.clone().requires_grad_(), k.clone().requires_grad_()
    s = attention_logits(q, k, scale)  # (groups, n_q, n_k)：进入 softmax 的分数
    s.retain_grad()
    out = stable_softmax(s) @ v  # (groups, n_q, d_v)
    (out * g).sum().backward()
    return {"ds": s.grad.norm(dim=-1).flatten(), "dq": q.grad.norm(dim=-1).flatten(),
            "dk": k.grad.norm(dim=-1).flatten()}


def tail_share(norms: torch.Tensor, top: float = TAIL) -> float:
    """norms² 最大的 top 比例的元素占全部平方和的份额。"""
    sq = norms.pow(2).sort(descending=True).values
    m = max(1, round(top * sq.numel()))
    return (sq[:m].sum() / sq.sum()).item()


def run_one(d_k: int, seed: int, cfg: dict) -> dict:
    gen = torch.Generator().manual_seed(1000 * seed + d_k)
    shape = (cfg["groups"],)
    q = torch.randn(*shape, cfg["n_q"], d_k, generator=gen, dtype=torch.float64)
    k = torch.randn(*shape, cfg["n_k"], d_k, generator=gen, dtype=torch.float64)
    v = torch.randn(*shape, cfg["n_k"], cfg["d_v"], generator=gen, dtype=torch.float64)
    g = torch.randn(*shape, cfg["n_q"], cfg["d_v"], generator=gen, dtype=torch.float64)
    scaled, raw = gradients(q, k, v, g, "sqrt"), gradients(q, k, v, g, "none")
    out = {"d_k": d_k, "seed": seed, "rows": int(scaled["dq"].numel())}
    for key in ("ds", "dq", "dk"):
        a, b = raw[key].median().item(), scaled[key].median().item()
        out[f"{key}_median_scaled"], out[f"{key}_median_unscaled"], out[f"{key}_ratio"] = b, a, a / b
    out["dq_tail_share_scaled"] = tail_share(scaled["dq"])
    out["dq_tail_share_unscaled"] = tail_share(raw["dq"])
    out["dq_starved_unscaled"] = (raw["dq"] < STARVED * out["dq_median_scaled"]).double().mean().item()
    return out


def summarize(runs: list[dict], cfg: dict) -> list[dict]:
    rows = []
    for d_k in cfg["d_k_values"]:
        mine = [r for r in runs if r["d_k"] == d_k]
        row = {"d_k": d_k, "n_seeds": len(mine)}
        for key in ("ds_ratio", "dq_ratio", "dk_ratio", "dq_tail_share_scaled", "dq_tail_share_unscaled",
                    "dq_starved_unscaled"):
            vals = [r[key] for r in mine]
            row[f"{key}_mean"], row[f"{key}_min"], row[f"{key}_max"] = statistics.fmean(vals), min(vals), max(vals)
        rows.append(row)
    return rows


def run(preset: str, cfg: dict) -> dict:
    jobs = [(d, s) for d in cfg["d_k_values"] for s in cfg["seeds"]]
    runs = [run_one(d_k, seed, cfg) for d_k, seed in tqdm(jobs, desc=KIND, file=sys.stderr, unit="run")]
    return {"config": {**cfg, "tail": TAIL, "starved": STARVED, "dtype": "float64", "threads": 1},
            "runs": runs, "summary": summarize(runs, cfg)}


def main(argv=None) -> int:
    return experiment_main(MODULE, KIND, PRESETS, run, argv, seed=SEED, dtypes=("float64",), default_preset="quick")


if __name__ == "__main__":
    raise SystemExit(main())
