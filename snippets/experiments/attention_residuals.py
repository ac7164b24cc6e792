"""实验：普通残差、Full AttnRes、Block AttnRes 在同一个玩具语言模型上（第 11 章）。

    任务    二阶马尔可夫链生成的符号序列（词表 8）：每个上下文 (a, b) 只有 2 个可能的后继，概率取自
            Dirichlet(1, 1)（转移表由 TABLE_SEED 固定）。真实分布已知，所以验证集上「最好能做到」的
            交叉熵（熵下界）可以精确算出；表里报告 验证损失 − 熵下界（超额损失）
    模型    snippets.residual_stream.AttnResDecoder：读者的 MultiHeadAttention、FFN、RMSNorm 与正弦位置编码，
            4 层（8 个子层）、d_model 48、4 头、d_ff 96；三种残差 ——
            baseline  普通 pre-RMSNorm 残差
            full      Full AttnRes（每个子层之前对嵌入和此前全部子层输出做深度注意力）
            block     Block AttnRes，n_blocks = 4（每块 2 个子层 = 1 个 Transformer 层）
    同样的预算 三者用同样的种子、同样的数据流、同样的步数与批大小（相同的词元数）；AttnRes 每个子层多 2d 个参数、
            每个词元多 O(L²d) 次乘加（这里 < 1% 的参数，见结果文件里的 params）
    测量    验证损失（固定的 64 条序列）；训练结束时每个子层输入的均方根、每个子层参数的梯度范数（同一验证批上
            反传一次）、每个 AttnRes 运算的平均深度注意力权重（热图）；普通残差在初始化和训练后各子层输出两两之间的
            平均余弦，以及 ‖h_l‖ 与「各输出互不相关」时的预测 √(Σ‖v_i‖²) 之比
    深度探针 只在初始化时（不训练）：32 个子层的普通残差模型，float64，量 ‖h_l‖ 随 l 的增长

预设：tiny（测试用，几秒）、quick（3 种 × 3 个种子，80 步，批 16 × 长 32，训练步数是 full 的五分之一）、full（3 种 × 5 个种子，
400 步，页面用它）、long（与 full 相同，但 900 步、10 个种子，写 results/attention-residuals-long.json，
不覆盖 full 的结果）、
gpu（更大：8 层、d_model 128、3000 步、5 个种子；给有加速器的机器，本仓库没有提交它的结果）。
一次运行用了多久，看结果文件的 provenance.runtime_s（页面表下的出处行也写出它）：在单线程 CPU 上，full 每个种子
约 40 秒，long 每个种子 1–2 分钟。

运行：python -m snippets.experiments.attention_residuals --preset full   （CPU，单线程）
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
from snippets.residual_stream import AttnResDecoder

KIND = "attention-residuals"
LONG_OUT = "attention-residuals-long.json"  # long 的默认输出文件，与 full 的文件并存
MODULE = "snippets.experiments.attention_residuals"
SEED = 0
TABLE_SEED = 1234
VOCAB, SUCCESSORS = 8, 2
VARIANTS = {"baseline": {"residual": "standard", "n_blocks": None},
            "full": {"residual": "attnres", "n_blocks": None},
            "block": {"residual": "attnres", "n_blocks": 4}}

MODEL = {"vocab_size": VOCAB, "n_layers": 4, "d_model": 48, "n_heads": 4, "d_ff": 96}
PRESETS = {
    # tiny：只给测试用（几秒钟），结论没有意义
    "tiny": {"variants": list(VARIANTS), "seeds": [0], "steps": 3, "warmup_steps": 1, "batch_size": 4, "seq_len": 16,
             "lr": 3e-3, "eval_every": 3, "val_sequences": 8, "model": MODEL, "probe_layers": 4, "probe_seeds": [0]},
    "quick": {"variants": list(VARIANTS), "seeds": [0, 1, 2], "steps": 80, "warmup_steps": 10, "batch_size": 16,
              "seq_len": 32, "lr": 5e-3, "eval_every": 25, "val_sequences": 64, "model": MODEL,
              "probe_layers": 16, "probe_seeds": [0, 1, 2]},
    # full：5 个种子（3 个种子时多处逐种子配对「不足以下结论」；5 个种子仍在 5 分钟的预算内）
    "full": {"variants": list(VARIANTS), "seeds": [0, 1, 2, 3, 4], "steps": 400, "warmup_steps": 40, "batch_size": 16,
             "seq_len": 32, "lr": 5e-3, "eval_every": 50, "val_sequences": 64, "model": MODEL,
             "probe_layers": 16, "probe_seeds": [0, 1, 2]},
    # long：与 full 相同，只是 900 步、10 个种子（每个种子 1–2 分钟；7 个种子仍定不下 Block 与普通残差的损失）：
    # 回答「多练几步，三者的先后会不会变」
    "long": {"variants": list(VARIANTS), "seeds": list(range(10)), "steps": 900, "warmup_steps": 40, "batch_size": 16,
             "seq_len": 32, "lr": 5e-3, "eval_every": 100, "val_sequences": 64, "model": MODEL,
             "probe_layers": 16, "probe_seeds": [0, 1, 2]},
    # gpu：更大的模型与更长的训练，给有加速器的机器（CPU 上要几个小时）
    "gpu": {"variants": list(VARIANTS), "seeds": [0, 1, 2, 3, 4], "steps": 3000, "warmup_steps": 200,
            "batch_size": 64, "seq_len": 128, "lr": 2e-3, "eval_every": 250, "val_sequences": 256,
            "model": {**MODEL, "n_layers": 8, "d_model": 128, "d_ff": 512}, "probe_layers": 32,
            "probe_seeds": [0, 1, 2]},
}


def transition_table() -> torch.Tensor:
    """(V, V, V) 的转移概率 P(c | a, b)：每个 (a, b) 只有 SUCCESSORS 个非零项。"""
    gen = torch.Generator().manual_seed(TABLE_SEED)
    table = torch.zeros(VOCAB, VOCAB, VOCAB, dtype=torch.float64)
    for a in range(VOCAB):
        for b in range(VOCAB):
            succ = torch.randperm(VOCAB, generator=gen)[:SUCCESSORS]
            w = -torch.log(torch.rand(SUCCESSORS, generator=gen, dtype=torch.float64))   # Dirichlet(1,…,1)
            table[a, b, succ] = w / w.sum()
    return table


def sample(table: torch.Tensor, batch: int, n: int, gen: torch.Generator) -> torch.Tensor:
    x = torch.empty(batch, n, dtype=torch.long)
    x[:, :2] = torch.randint(0, VOCAB, (batch, 2), generator=gen)
    for t in range(2, n):
        probs = table[x[:, t - 2], x[:, t - 1]]                          # (batch, V)
        x[:, t] = torch.multinomial(probs, 1, generator=gen).squeeze(1)
    return x


def entropy_floor(table: torch.Tensor, x: torch.Tensor) -> float:
    """真实分布在 x 上的平均交叉熵（只算位置 2 …，与模型的计分位置相同）。"""
    p = table[x[:, :-2], x[:, 1:-1], x[:, 2:]]                           # (batch, n−2)
    return (-torch.log(p)).mean().item()


def loss_fn(logits: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    # 预测位置 2 … n−1（前两个符号没有完整的上下文）
    return nn.functional.cross_entropy(logits[:, 1:-1].reshape(-1, VOCAB), x[:, 2:].reshape(-1))


def rms(t: torch.Tensor) -> float:
    return t.detach().pow(2).mean().sqrt().item()


def mean_pairwise_cosine(vectors: list[torch.Tensor]) -> float:
    """各子层输出（每个词元一个 d 维向量）两两之间余弦的平均（对词元、对所有 i < j 的对取平均）。"""
    v = torch.stack([t.detach().reshape(-1, t.shape[-1]) for t in vectors])   # (L, tokens, d)
    v = v / v.norm(dim=-1, keepdim=True).clamp_min(1e-12)
    cos = torch.einsum("itd,jtd->ijt", v, v).mean(-1)                          # (L, L)
    i, j = torch.triu_indices(len(vectors), len(vectors), offset=1)
    return cos[i, j].mean().item()


def stream_stats(model: AttnResDecoder, x: torch.Tensor) -> dict:
    """普通残差：h_l 的均方根，与「各输出互不相关」的预测 √(Σ_{i<l} ‖v_i‖²)（v_0 = 嵌入）之比。"""
    with torch.no_grad():
        model(x, record=True)
    tr = model.trace
    sources = [tr["x0"]] + tr["outputs"]
    streams = tr["inputs"] + [tr["final"]]                                     # h_0 … h_L
    stream_rms = [rms(h) for h in streams]
    predicted = [math.sqrt(sum(rms(v) ** 2 for v in sources[:l + 1])) for l in range(len(streams))]
    return {"stream_rms": stream_rms, "uncorrelated_rms": predicted,
            "ratio_last": stream_rms[-1] / predicted[-1],
            "output_rms": [rms(v) for v in tr["outputs"]],
            "mean_cosine": mean_pairwise_cosine(sources)}


def sublayer_grad_norms(model: AttnResDecoder) -> list[float]:
    return [math.sqrt(sum(p.grad.pow(2).sum().item() for p in list(sub.parameters()) + list(norm.parameters())))
            for sub, norm in zip(model.sublayers, model.norms)]


def depth_probe(cfg: dict) -> dict:
    """初始化时、不训练：probe_layers 层（2× 个子层）的普通残差模型，float64。"""
    rows = []
    table = transition_table()
    for seed in cfg["probe_seeds"]:
        torch.manual_seed(seed)
        model = AttnResDecoder(**{**cfg["model"], "n_layers": cfg["probe_layers"]}, residual="standard").double()
        x = sample(table, 16, cfg["seq_len"], torch.Generator().manual_seed(10_000 + seed))
        rows.append({"seed": seed, **stream_stats(model, x)})
    return {"n_layers": cfg["probe_layers"], "dtype": "float64", "runs": rows}


def run_one(variant: str, seed: int, cfg: dict, table: torch.Tensor, val: torch.Tensor) -> dict:
    torch.manual_seed(seed)
    model = AttnResDecoder(**cfg["model"], **VARIANTS[variant])
    gen = torch.Generator().manual_seed(seed)                          # 同一个种子下三种残差看到同一串数据
    opt = torch.optim.Adam(model.parameters(), lr=cfg["lr"], betas=(0.9, 0.98), eps=1e-9)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, cfg["warmup_steps"], cfg["steps"]))
    out = {"variant": variant, "seed": seed, "params": sum(p.numel() for p in model.parameters()), "curve": []}
    if variant == "baseline":
        out["stream_init"] = stream_stats(model, val)
    for step in range(1, cfg["steps"] + 1):
        x = sample(table, cfg["batch_size"], cfg["seq_len"], gen)
        loss = loss_fn(model(x), x)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        if step % cfg["eval_every"] == 0 or step == cfg["steps"]:
            with torch.no_grad():
                out["curve"].append({"step": step, "val_loss": loss_fn(model(val), val).item()})
    out["val_loss"] = out["curve"][-1]["val_loss"]
    # 训练结束：在验证批上前向（记录）并反传一次
    opt.zero_grad(set_to_none=True)
    loss = loss_fn(model(val, record=True), val)
    loss.backward()
    tr = model.trace
    out["input_rms"] = [rms(h) for h in tr["inputs"]] + [rms(tr["final"])]
    out["output_rms"] = [rms(v) for v in tr["outputs"]]
    out["grad_norm"] = sublayer_grad_norms(model)
    if variant == "baseline":
        out["stream_final"] = stream_stats(model, val)
    else:
        # 每个 AttnRes 运算的平均权重：对批和位置取平均，长度 = 来源数
        out["alpha"] = [a.detach().double().mean(dim=tuple(range(1, a.dim()))).tolist() for a in tr["alphas"]]
    return out


def summarize(runs: list[dict], cfg: dict, floor: float) -> list[dict]:
    rows = []
    for variant in cfg["variants"]:
        mine = [r for r in runs if r["variant"] == variant]
        losses = [r["val_loss"] for r in mine]
        rows.append({"variant": variant, "n_seeds": len(mine), "params": mine[0]["params"],
                     "val_loss_mean": statistics.fmean(losses), "val_loss_min": min(losses),
                     "val_loss_max": max(losses), "excess_mean": statistics.fmean(losses) - floor})
    return rows


def run(preset: str, cfg: dict) -> dict:
    table = transition_table()
    val = sample(table, cfg["val_sequences"], cfg["seq_len"], torch.Generator().manual_seed(999))
    floor = entropy_floor(table, val)
    jobs = [(v, seed) for seed in cfg["seeds"] for v in cfg["variants"]]
    runs = [run_one(v, seed, cfg, table, val) for v, seed in tqdm(jobs, desc=KIND, file=sys.stderr, unit="run")]
    return {"task": {"name": "order-2 markov", "vocab_size": VOCAB, "successors": SUCCESSORS,
                     "table_seed": TABLE_SEED, "entropy_floor": floor},
            "config": {**cfg, "optimizer": "Adam(betas=(0.9, 0.98), eps=1e-9)", "threads": 1},
            "depth_probe": depth_probe(cfg), "runs": runs, "summary": summarize(runs, cfg, floor)}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    return experiment_main(MODULE, KIND, PRESETS, run, argv, seed=SEED, default_preset="quick",
                           outputs={"long": LONG_OUT})


if __name__ == "__main__":
    raise SystemExit(main())
