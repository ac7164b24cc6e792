"""实验：表 3 的 (B)(C)(D) 三组在玩具尺度上（第 10 章，论文 §6.2）。

不另写任务和训练循环：数据、模型、优化器、学习率和评估全部来自第 08 章的 training_recipe
（倒序任务，句长取自 81 句英文的词数分布；读者的 Transformer，post-LN，三处共享权重；
Adam(0.9, 0.98, 1e−9)，学习率 0.3 · noam_lr(step, d_model, 100)，标签平滑 0.1）。
这里只改一个量，其余同第 08 章的基线（d_model 64，4 个头，d_k 16，编码器、解码器各 2 层，d_ff 128，
dropout 0.1，训练集 1000 对、评估集 500 对新序列）：

    组    变体            改了什么
    —     base            第 08 章的基线
    (B)   dk-4            d_k = 4（值的头宽仍是 16），查询、键的宽度降到 1/4，像表 3 的 64 → 16
    (C)   d-32、d-128     d_model 32 / 128（d_ff 随之 64 / 256，头数不变，所以 d_k 8 / 32）
    (C)   layers-1、layers-4   编码器、解码器各 1 / 4 层
    (D)   drop-0、drop-0.3     dropout 0 / 0.3
    (D)   small-drop-0、small-drop-0.1、small-drop-0.3
                          训练集只有 100 对（其余不变），dropout 0 / 0.1 / 0.3：
                          会过拟合的数据量下，dropout 才有机会起作用

每次运行记下评估集困惑度（教师强制，不含平滑项）、逐词准确率、训练集困惑度（两者之差看过拟合）与参数量。
注意 noam_lr 含 d_model^{-1/2}：改宽度也改了学习率的大小，这正是论文公式的做法，页面照实说明。

预设：tiny（测试用，几秒，结论没有意义）、quick（9 个变体，1 个种子，100 步，约 1 分钟）、
full（同样 9 个变体，2 个种子，300 步，页面用它，单独运行约 5 分钟）、long（(B)(C) 的 5 个变体，2 个种子，
900 步，写 results/model-variations-long.json，单独运行约 12 分钟）。本机与别的会话共用 2 个核，实际运行时间与负载
记在结果文件的 provenance 里（提交的 full 在负载 3–4 下用了 561 s）。

运行：python -m snippets.experiments.model_variations --preset full   （CPU，单线程）
"""

from __future__ import annotations

import statistics
import sys

from tqdm import tqdm

from snippets.experiments import training_recipe as recipe
from snippets.experiments._cli import experiment_main
from snippets.transformer import Transformer, count_parameters

KIND = "model-variations"
MODULE = "snippets.experiments.model_variations"
SEED = 0

# 每个变体：(组, 对第 08 章 MODEL 的改动, 对训练配置的改动)
VARIANTS = {
    "base": ("base", {}, {}),
    "dk-4": ("B", {"d_k": 4}, {}),
    "d-32": ("C", {"d_model": 32, "d_ff": 64}, {}),
    "d-128": ("C", {"d_model": 128, "d_ff": 256}, {}),
    "layers-1": ("C", {"num_layers": 1}, {}),
    "layers-4": ("C", {"num_layers": 4}, {}),
    "drop-0": ("D", {"dropout": 0.0}, {}),
    "drop-0.3": ("D", {"dropout": 0.3}, {}),
    "small-drop-0": ("D-small", {"dropout": 0.0}, {"n_train": 100}),
    "small-drop-0.1": ("D-small", {}, {"n_train": 100}),
    "small-drop-0.3": ("D-small", {"dropout": 0.3}, {"n_train": 100}),
}
COMMON = {**recipe.COMMON, "variants": list(VARIANTS), "label_smoothing": 0.1, "beta2": 0.98}
FULL_VARIANTS = ["base", "dk-4", "d-32", "d-128", "layers-4", "drop-0", "small-drop-0", "small-drop-0.1",
                 "small-drop-0.3"]
PRESETS = {
    "tiny": {**COMMON, "variants": ["base", "dk-4", "small-drop-0"], "seeds": [0], "steps": 3, "warmup": 2,
             "n_train": 32, "n_eval": 16},
    "quick": {**COMMON, "variants": FULL_VARIANTS, "seeds": [0], "steps": 100},
    "full": {**COMMON, "variants": FULL_VARIANTS, "seeds": [0, 1], "steps": 300},
    # long：(B)(C) 的 5 个变体、同样 2 个种子，步数 3 倍（900）：回答「300 步时更大的模型更差，是不是只因为没练够」
    "long": {**COMMON, "variants": ["base", "dk-4", "d-32", "d-128", "layers-4"], "seeds": [0, 1], "steps": 900},
}
LONG_OUT = "model-variations-long.json"


def run_variant(name: str, seed: int, cfg: dict, lengths: list[int]) -> dict:
    group, model_change, cfg_change = VARIANTS[name]
    run_cfg = {**cfg, **cfg_change}
    if cfg["n_train"] < run_cfg["n_train"]:                      # tiny：不让 small 比整体还大
        run_cfg["n_train"] = cfg["n_train"]
    hp = {"label_smoothing": cfg["label_smoothing"], "beta2": cfg["beta2"]}
    out = recipe.run_one("paper", seed, run_cfg, lengths, model_cfg=model_change, hp=hp)
    model_cfg = {**recipe.MODEL, **model_change}
    params = count_parameters(Transformer(**model_cfg, max_len=64))
    return {"variant": name, "group": group, "seed": seed, "n_train": run_cfg["n_train"],
            "model": {**model_cfg, "d_k": model_change.get("d_k", model_cfg["d_model"] // model_cfg["num_heads"])},
            "params": params, "final_train_loss": out["final_train_loss"],
            "eval": out["eval"], "train_eval": out["train_eval"]}


def summarize(runs: list[dict], cfg: dict) -> list[dict]:
    rows = []
    for name in cfg["variants"]:
        mine = [r for r in runs if r["variant"] == name]
        ppl = [r["eval"]["perplexity"] for r in mine]
        acc = [r["eval"]["accuracy"] for r in mine]
        gap = [r["eval"]["perplexity"] - r["train_eval"]["perplexity"] for r in mine]
        rows.append({"variant": name, "group": mine[0]["group"], "n_seeds": len(mine), "params": mine[0]["params"],
                     "n_train": mine[0]["n_train"],
                     "perplexity_mean": statistics.fmean(ppl), "perplexity_min": min(ppl), "perplexity_max": max(ppl),
                     "accuracy_mean": statistics.fmean(acc), "accuracy_min": min(acc), "accuracy_max": max(acc),
                     "train_perplexity_mean": statistics.fmean(r["train_eval"]["perplexity"] for r in mine),
                     "gap_mean": statistics.fmean(gap)})
    return rows


def run(preset: str, cfg: dict) -> dict:
    lengths = recipe.corpus_lengths()
    jobs = [(name, seed) for seed in cfg["seeds"] for name in cfg["variants"]]
    runs = [run_variant(n, s, cfg, lengths) for n, s in tqdm(jobs, desc=KIND, file=sys.stderr, unit="run")]
    return {"task": {"name": "reverse", "source": "snippets.experiments.training_recipe", "base_model": recipe.MODEL},
            "config": {**cfg, "threads": 1}, "runs": runs, "summary": summarize(runs, cfg)}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    return experiment_main(MODULE, KIND, PRESETS, run, argv, seed=SEED, default_preset="quick",
                           outputs={"long": LONG_OUT})


if __name__ == "__main__":
    raise SystemExit(main())
