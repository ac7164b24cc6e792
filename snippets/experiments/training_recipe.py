"""实验：论文 §5 的训练配方在一个小翻译式任务上（第 08 章）：标签平滑 ε_ls 与 Adam 的 β₂。

    任务    倒序：源句是随机符号序列，目标是它的倒序。句长从 snippets/data/corpus_en.txt 的 81 句英文的
            词数分布中有放回地抽取（9–19 个词），所以每批都有长有短，需要填充与按长度分批。
            训练集固定 n_train 对（反复多轮），评估集是另外 n_eval 对新序列
    模型    读者的 Transformer（snippets/transformer.py）：post-LN、三处权重共享、嵌入乘 √d，dropout 0.1
    训练    snippets/training.py 的三件东西：token_batches 按长度分批（每批填充后 ≤ max_tokens 个词元，
            每轮打乱批的顺序）；学习率 = lr_scale · noam_lr(step, d_model, warmup)；损失 label_smoothed_nll
            （忽略填充）。优化器 torch.optim.Adam(betas=(0.9, β₂), eps=1e-9)
    变体    paper      ε_ls = 0.1，β₂ = 0.98（论文的设置）
            no-ls      ε_ls = 0，  β₂ = 0.98（只去掉标签平滑）
            beta2-999  ε_ls = 0.1，β₂ = 0.999（只换 β₂，PyTorch 的默认值）
            beta2-999-warm  ε_ls = 0.1，β₂ = 0.999，预热 1000 步 = 1/(1−β₂)（只在 beta2 预设里）：
                       Noam 公式的预热段更长、峰值更低，第 1000 步以后的学习率与另外两种逐步相同
    评估    评估集上教师强制：困惑度 exp(平均 −log p_y)（不含平滑项）、逐词准确率（argmax）、
            平均置信度（max p）与 10 个等宽区间的期望校准误差 ECE；训练集上同样的困惑度与准确率
    β₂ 探针 训练结束时 Σ v̂（Adam 的二阶矩，偏差校正后，对所有参数求和）与最近 50 步梯度平方范数 ‖g‖² 的
            均值之比：v̂ 记得越久，这个比值越受早期大梯度的影响

预设：tiny（测试用，几秒）、quick（3 种 × 2 个种子，150 步，约 1 分钟）、full（3 种 × 4 个种子，400 步，
约 5 分钟，页面用它）、long（只有 paper 与 no-ls，4 个种子，1600 步 = 4 倍，单独运行约 12 分钟，与别的训练同时运行时约 20 分钟；回答「多练几倍会不会
改变标签平滑的读法」，默认写 results/training-recipe-long.json，不覆盖 full 的结果）、beta2（paper、beta2-999 与
beta2-999-warm，4 个种子，1600 步，单独运行约 20 分钟；回答「β₂ = 0.999 吃亏，是因为 v̂ 记得太久，还是因为 100 步的预热
对它太短」，默认写 results/training-recipe-beta2.json）、ls（只有 paper 与 no-ls，16 个种子，400 步，单线程约 12 分钟；
full 的 4 个种子定不下 400 步时标签平滑的读法，默认写 results/training-recipe-ls.json）。

运行：python -m snippets.experiments.training_recipe --preset full   （CPU，单线程）
"""

from __future__ import annotations

import math
import statistics
import sys
from pathlib import Path

import torch
from tqdm import tqdm

from snippets.experiments._cli import experiment_main
from snippets.training import label_smoothed_nll, noam_lr, padding_waste, token_batches
from snippets.transformer import Transformer

KIND = "training-recipe"
MODULE = "snippets.experiments.training_recipe"
SEED = 0
CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus_en.txt"

PAD, BOS, FIRST_SYMBOL = 0, 1, 2
MODEL = {"vocab_size": 12, "d_model": 64, "num_heads": 4, "num_layers": 2, "d_ff": 128, "dropout": 0.1,
         "norm_first": False, "tie_weights": True}
VARIANTS = {"paper": {"label_smoothing": 0.1, "beta2": 0.98},
            "no-ls": {"label_smoothing": 0.0, "beta2": 0.98},
            "beta2-999": {"label_smoothing": 0.1, "beta2": 0.999},
            # 预热 ≥ 1/(1−β₂)：v̂ 的有效窗口约 1/(1−β₂) 步，预热至少要覆盖它（RAdam 一节的读法）
            "beta2-999-warm": {"label_smoothing": 0.1, "beta2": 0.999, "warmup": 1000}}
COMMON = {"variants": ["paper", "no-ls", "beta2-999"], "max_tokens": 512, "warmup": 100, "lr_scale": 0.3,
          "n_train": 1000, "n_eval": 500, "grad_window": 50}
PRESETS = {
    # tiny：只给测试用（几秒钟），结论没有意义
    "tiny": {**COMMON, "seeds": [0], "steps": 4, "warmup": 2, "n_train": 64, "n_eval": 32},
    "quick": {**COMMON, "seeds": [0, 1], "steps": 150},
    "full": {**COMMON, "seeds": [0, 1, 2, 3], "steps": 400},
    # long：与 full 相同，只是 4 倍步数，只跑标签平滑的两种变体
    "long": {**COMMON, "variants": ["paper", "no-ls"], "seeds": [0, 1, 2, 3], "steps": 1600},
    # ls：只跑标签平滑的两种变体，400 步，16 个种子（每个种子约 45 秒）：full 的 4 个种子定不下 400 步的读法
    "ls": {**COMMON, "variants": ["paper", "no-ls"], "seeds": list(range(16)), "steps": 400},
    # beta2：β₂ 的两种解释分开量：同样 1600 步，0.999 配 100 步与 1000 步预热
    "beta2": {**COMMON, "variants": ["paper", "beta2-999", "beta2-999-warm"], "seeds": [0, 1, 2, 3], "steps": 1600},
}
LONG_OUT = "training-recipe-long.json"  # long 的默认输出文件，与 full 的文件并存
BETA2_OUT = "training-recipe-beta2.json"  # beta2 的默认输出文件
LS_OUT = "training-recipe-ls.json"  # ls 的默认输出文件


def corpus_lengths(path: Path = CORPUS) -> list[int]:
    """语料每一行的词数（按空白切分）：实验的句长分布。"""
    return [len(line.split()) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def make_pairs(n: int, lengths: list[int], gen: torch.Generator) -> list[torch.Tensor]:
    """n 条源序列，长度从 lengths 中有放回地抽取；目标 = 源序列倒序。"""
    picks = torch.randint(0, len(lengths), (n,), generator=gen).tolist()
    return [torch.randint(FIRST_SYMBOL, MODEL["vocab_size"], (lengths[i],), generator=gen) for i in picks]


def collate(seqs: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """src (batch, n)、解码器输入 (batch, n)（BOS + 目标右移）、目标 (batch, n)，都用 PAD 补齐。"""
    n = max(len(s) for s in seqs)
    src = torch.full((len(seqs), n), PAD, dtype=torch.long)
    tgt_in, tgt = src.clone(), src.clone()
    for row, s in enumerate(seqs):
        rev = s.flip(0)
        src[row, :len(s)], tgt[row, :len(s)] = s, rev
        tgt_in[row, 0], tgt_in[row, 1:len(s)] = BOS, rev[:-1]
    return src, tgt_in, tgt


def forward(model: Transformer, src: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
    src_mask = (src != PAD)[:, None, None, :]                    # (batch, 1, 1, n)：只遮住源句的填充键
    return model(src, tgt_in, src_mask=src_mask)                 # (batch, n, |V|)；目标侧默认因果掩码


@torch.no_grad()
def evaluate(model: Transformer, pairs: list[torch.Tensor], batches: list[list[int]]) -> dict:
    """教师强制：困惑度、准确率、平均置信度、ECE（10 个等宽置信度区间）。"""
    model.eval()
    nll, conf, correct = [], [], []
    for b in batches:
        src, tgt_in, tgt = collate([pairs[i] for i in b])
        logp = torch.log_softmax(forward(model, src, tgt_in), dim=-1)[tgt != PAD]   # (tokens, |V|)
        y = tgt[tgt != PAD]
        nll.append(-logp.gather(-1, y[:, None]).squeeze(-1))
        p_max, pred = logp.exp().max(dim=-1)
        conf.append(p_max)
        correct.append((pred == y).double())
    model.train()
    nll, conf, correct = torch.cat(nll).double(), torch.cat(conf).double(), torch.cat(correct)
    bins = torch.clamp((conf * 10).long(), max=9)
    ece = sum((bins == k).double().mean() * (conf[bins == k].mean() - correct[bins == k].mean()).abs()
              for k in range(10) if (bins == k).any())
    return {"perplexity": math.exp(nll.mean().item()), "accuracy": correct.mean().item(),
            "confidence": conf.mean().item(), "ece": float(ece), "tokens": int(nll.numel())}


def run_one(variant: str, seed: int, cfg: dict, lengths: list[int], *, model_cfg: dict | None = None,
            hp: dict | None = None) -> dict:
    """训练并评估一次。model_cfg 覆盖 MODEL 的几项、hp 覆盖变体的超参数：第 10 章的变体扫描用同一个循环
    （snippets/experiments/model_variations.py），只改模型的宽度、深度、d_k 或 dropout。
    hp 里有 warmup 时它代替 cfg["warmup"]（beta2-999-warm）。"""
    hp = VARIANTS[variant] if hp is None else hp
    warmup = hp.get("warmup", cfg["warmup"])
    mcfg = {**MODEL, **(model_cfg or {})}
    data_gen = torch.Generator().manual_seed(seed)               # 同一个种子下三种变体看到同样的数据
    train, test = make_pairs(cfg["n_train"], lengths, data_gen), make_pairs(cfg["n_eval"], lengths, data_gen)
    train_batches = token_batches([len(s) for s in train], cfg["max_tokens"])
    test_batches = token_batches([len(s) for s in test], cfg["max_tokens"])
    torch.manual_seed(seed)
    model = Transformer(**mcfg, max_len=64)
    opt = torch.optim.Adam(model.parameters(), lr=0.0, betas=(0.9, hp["beta2"]), eps=1e-9)
    order_gen = torch.Generator().manual_seed(10_000 + seed)
    losses, grad_sq, queue = [], [], []
    model.train()
    for step in range(1, cfg["steps"] + 1):
        if not queue:                                            # 新的一轮：打乱批的顺序
            queue = [train_batches[i] for i in torch.randperm(len(train_batches), generator=order_gen).tolist()]
        src, tgt_in, tgt = collate([train[i] for i in queue.pop()])
        for group in opt.param_groups:
            group["lr"] = cfg["lr_scale"] * noam_lr(step, mcfg["d_model"], warmup)
        logits = forward(model, src, tgt_in)
        loss = label_smoothed_nll(logits.reshape(-1, mcfg["vocab_size"]), tgt.reshape(-1),
                                  eps=hp["label_smoothing"], ignore_index=PAD)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        grad_sq.append(sum(float((p.grad.double() ** 2).sum()) for p in model.parameters() if p.grad is not None))
        opt.step()
        losses.append(loss.item())
    v_hat = sum(float(s["exp_avg_sq"].double().sum()) / (1 - hp["beta2"] ** s["step"].item())
                for s in opt.state.values())
    window = grad_sq[-cfg["grad_window"]:]
    return {"variant": variant, "seed": seed, **hp, "warmup": warmup, "final_train_loss": statistics.fmean(losses[-20:]),
            "eval": evaluate(model, test, test_batches), "train_eval": evaluate(model, train, train_batches),
            "v_hat_over_recent_grad_sq": v_hat / statistics.fmean(window),
            "grad_sq_first_over_last": statistics.fmean(grad_sq[:cfg["grad_window"]]) / statistics.fmean(window)}


def summarize(runs: list[dict], cfg: dict) -> list[dict]:
    rows = []
    for variant in cfg["variants"]:
        mine = [r for r in runs if r["variant"] == variant]
        row = {"variant": variant, "n_seeds": len(mine)}
        for key in ("perplexity", "accuracy", "confidence", "ece"):
            vals = [r["eval"][key] for r in mine]
            row.update({f"{key}_mean": statistics.fmean(vals), f"{key}_min": min(vals), f"{key}_max": max(vals)})
        row["train_perplexity_mean"] = statistics.fmean(r["train_eval"]["perplexity"] for r in mine)
        row["v_hat_ratio_mean"] = statistics.fmean(r["v_hat_over_recent_grad_sq"] for r in mine)
        rows.append(row)
    return rows


def batching_stats(lengths: list[int], cfg: dict) -> dict:
    """训练集（种子 0）的填充浪费：按长度分批与按原顺序（随机）装批，同一个 max_tokens。"""
    train = make_pairs(cfg["n_train"], lengths, torch.Generator().manual_seed(0))
    lens = [len(s) for s in train]
    out = {"n_examples": len(lens), "max_tokens": cfg["max_tokens"], "real_tokens": sum(lens)}
    for name, sort in (("sorted", True), ("unsorted", False)):
        batches = token_batches(lens, cfg["max_tokens"], sort=sort)
        out[name] = {"batches": len(batches), "padding_waste": padding_waste(lens, batches)}
    return out


def run(preset: str, cfg: dict) -> dict:
    lengths = corpus_lengths()
    jobs = [(variant, seed) for seed in cfg["seeds"] for variant in cfg["variants"]]
    runs = [run_one(v, s, cfg, lengths) for v, s in tqdm(jobs, desc=KIND, file=sys.stderr, unit="run")]
    return {"task": {"name": "reverse", "length_source": "snippets/data/corpus_en.txt (words per line)",
                     "min_length": min(lengths), "max_length": max(lengths), **MODEL},
            "config": {**cfg, "optimizer": "Adam(betas=(0.9, beta2), eps=1e-9)", "threads": 1},
            "batching": batching_stats(lengths, cfg), "runs": runs, "summary": summarize(runs, cfg)}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    return experiment_main(MODULE, KIND, PRESETS, run, argv, seed=SEED, default_preset="quick",
                           outputs={"long": LONG_OUT, "beta2": BETA2_OUT, "ls": LS_OUT})


if __name__ == "__main__":
    raise SystemExit(main())
