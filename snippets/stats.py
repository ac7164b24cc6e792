"""怎样读一次玩具实验：按种子配对比较两组结果，给出区间和一个固定规则下的结论。

读者可以直接复用：

    from snippets.stats import compare_seeds
    c = compare_seeds([71.2, 69.8, 70.5, 72.0], [73.0, 70.1, 74.2, 71.9], seeds=[0, 1, 2, 3])
    print(c.verdict, c.mean_difference, c.interval)

结论只有三种（`VERDICTS`），“区间”指配对自助区间与 t 区间的并（两者都不含 0 才算不含 0）：
- 「一致」：差值的 95% 区间不含 0，且每个种子的差值同号；
- 「多数」：区间不含 0，但有种子反向（或差值为 0）；
- 「不足以下结论」：区间含 0（包括只有一个种子、无法估计波动的情形）。

BLEU 的差别另用句子级的配对自助法（sacreBLEU 的实现）：`bleu_paired_bootstrap`。
"""

# --8<-- [start:imports]
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from itertools import combinations_with_replacement

import numpy as np
import torch

try:   # 只有 BLEU 的比较需要 sacreBLEU：pip install "transformer-paper-verified[bleu]"
    from sacrebleu.metrics import BLEU
    from sacrebleu.significance import PairedTest
except ImportError:
    BLEU = PairedTest = None
# --8<-- [end:imports]


# --8<-- [start:bootstrap]
VERDICTS = ("一致", "多数", "不足以下结论")
EXACT_BOOTSTRAP_MAX_N = 8        # 穷举的上限：C(2n-1, n) 个多重集合，n = 8 时 6435 个


def bootstrap_mean_interval(values, confidence=0.95, n_resamples=20000, seed=0):
    """均值的自助法（bootstrap）百分位区间：有放回地重抽 n 个值，取均值分布的两端分位数。

    n ≤ 8 时穷举全部重抽结果（每个多重集合按多项式概率加权），结果精确、与随机数无关；
    更大的 n 用固定种子的 `n_resamples` 次蒙特卡洛重抽。
    """
    x = [float(v) for v in values]
    n = len(x)
    if n < 1 or not 0 < confidence < 1:
        raise ValueError(f"need at least one value and 0 < confidence < 1, got {n} values, confidence={confidence}")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got n_resamples={n_resamples}")
    tail = (1.0 - confidence) / 2
    if n <= EXACT_BOOTSTRAP_MAX_N:
        # 每个多重集合 {i1 ≤ i2 ≤ ... ≤ in} 出现的概率 = n! / (∏ 重数!) / n^n
        log_total = n * math.log(n)
        log_n_fact = math.lgamma(n + 1)
        dist = []                                            # (均值, 概率)
        for combo in combinations_with_replacement(range(n), n):
            counts = Counter(combo).values()
            log_p = log_n_fact - sum(math.lgamma(c + 1) for c in counts) - log_total
            dist.append((sum(x[i] for i in combo) / n, math.exp(log_p)))
        dist.sort()
        return _weighted_quantile(dist, tail), _weighted_quantile(dist, 1.0 - tail)
    gen = torch.Generator().manual_seed(seed)
    idx = torch.randint(0, n, (n_resamples, n), generator=gen)   # (resamples, n)
    means = torch.tensor(x, dtype=torch.float64)[idx].mean(dim=1)
    means, _ = means.sort()
    lo = means[int(math.floor(tail * (n_resamples - 1)))].item()
    hi = means[int(math.ceil((1.0 - tail) * (n_resamples - 1)))].item()
    return lo, hi


def _weighted_quantile(dist, q):
    """排好序的 (值, 概率) 中，累计概率首次达到 q 的值。"""
    acc = 0.0
    for value, p in dist:
        acc += p
        if acc >= q - 1e-12:
            return value
    return dist[-1][0]
# --8<-- [end:bootstrap]


# --8<-- [start:t-interval]
@lru_cache(maxsize=None)
def t_quantile(p, df):
    """学生 t 分布的分位数：对密度做 Simpson 积分得到分布函数，再二分求根（不依赖 scipy）。"""
    log_c = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)

    def cdf(t):                                              # P(T ≤ t)，t ≥ 0
        steps = 2000
        h = t / steps
        f = [math.exp(log_c - (df + 1) / 2 * math.log1p((i * h) ** 2 / df)) for i in range(steps + 1)]
        return 0.5 + h / 3 * (f[0] + f[-1] + 4 * sum(f[1:-1:2]) + 2 * sum(f[2:-1:2]))

    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    lo, hi = 0.0, 1.0
    while cdf(hi) < p:                                       # 先找到上界（df = 1 时 0.975 分位约 12.7）
        hi *= 2
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if cdf(mid) < p else (lo, mid)
    return (lo + hi) / 2


def t_interval(values, confidence=0.95):
    """均值的 t 区间：mean ± t_{(1+c)/2, n-1} · s / √n（假设差值近似正态）。"""
    x = [float(v) for v in values]
    n = len(x)
    if n < 2 or not 0 < confidence < 1:  # 一个值估计不了波动：summarize 这时不给区间
        raise ValueError(f"need at least two values and 0 < confidence < 1, got {n} values, confidence={confidence}")
    mean = sum(x) / n
    s = math.sqrt(sum((v - mean) ** 2 for v in x) / (n - 1))
    half = t_quantile((1.0 + confidence) / 2, n - 1) * s / math.sqrt(n)
    return mean - half, mean + half
# --8<-- [end:t-interval]


# --8<-- [start:summary]
@dataclass(frozen=True)
class SeedSummary:
    """一个量在若干种子上的值：均值、最小、最大、均值的 t 区间（≥ 2 个种子时）。"""
    values: tuple
    mean: float
    min: float
    max: float
    interval: tuple | None

    @property
    def n(self):
        return len(self.values)


def summarize(values, confidence=0.95):
    """逐种子的值 → `SeedSummary`。表格里写「均值（最小–最大）」，图里画每个种子的点或误差棒。"""
    x = tuple(float(v) for v in values)
    if not x:
        raise ValueError("values is empty: a summary needs at least one seed")
    if not all(math.isfinite(v) for v in x):
        raise ValueError(f"values must be finite: {x}")
    interval = t_interval(x, confidence) if len(x) >= 2 else None
    return SeedSummary(x, sum(x) / len(x), min(x), max(x), interval)
# --8<-- [end:summary]


# --8<-- [start:compare]
@dataclass(frozen=True)
class SeedComparison:
    """两组按种子配对的结果：差值 = b − a。"""
    seeds: tuple
    a: tuple                      # 每个种子上 A 的值
    b: tuple                      # 每个种子上 B 的值
    differences: tuple            # b − a，逐种子
    mean_difference: float
    n_agree: int                  # 与平均差值同号的种子数（|差值| ≤ resolution 不算同号）
    bootstrap_interval: tuple     # 配对自助法的 95% 区间
    t_interval: tuple | None      # 并列给出的 t 区间（只有 1 个种子时为 None）
    interval: tuple               # 下结论用的区间：两者的并（两者都不含 0 才算不含 0）
    verdict: str                  # VERDICTS 之一

    @property
    def n(self):
        return len(self.differences)

    @property
    def sign(self):
        """平均差值的方向：1（b 更大）、-1（b 更小）、0。"""
        return (self.mean_difference > 0) - (self.mean_difference < 0)

    @property
    def spread(self):
        """差值的最小值与最大值。"""
        return min(self.differences), max(self.differences)


def compare_seeds(a, b, seeds=None, confidence=0.95, resolution=0.0):
    """比较 A、B 两组在同一批种子上的结果（第 i 个值来自第 i 个种子），返回 `SeedComparison`。

    resolution：测量的分辨率。|差值| ≤ resolution 的种子算作“没有差别”，不计入同向
    （例如 6437 个词元上的准确率，差一个词元就是 1/6437，不该算作“更高”）。
    """
    a, b, seeds = _check_pairs(a, b, seeds, resolution)
    diffs = tuple(y - x for x, y in zip(a, b))
    n = len(diffs)
    mean = sum(diffs) / n
    sign = (mean > 0) - (mean < 0)
    n_agree = sum(1 for d in diffs if abs(d) > resolution and (d > 0) - (d < 0) == sign)
    if n == 1:                                               # 一个种子：没有波动可估，区间无界
        boot, t_int = (-math.inf, math.inf), None
    else:
        boot = bootstrap_mean_interval(diffs, confidence)
        t_int = t_interval(diffs, confidence)
    # 下结论用的区间：自助区间与 t 区间的并，两者都不含 0 才算不含 0。
    # 只有 2–4 个种子时，百分位自助区间不会比种子本身的范围更宽：单用它，两个同号的种子就算「一致」
    interval = boot if t_int is None else (min(boot[0], t_int[0]), max(boot[1], t_int[1]))
    if not (interval[0] > 0 or interval[1] < 0) or abs(mean) <= resolution:
        verdict = "不足以下结论"
    elif n_agree == n:
        verdict = "一致"
    else:
        verdict = "多数"
    return SeedComparison(seeds, a, b, diffs, mean, n_agree, boot, t_int, interval, verdict)
# --8<-- [end:compare]


# --8<-- [start:describe]
def describe(c, unit="", digits=1, scale=1.0):
    """一句话写出比较结果：平均差、区间、几个种子同向、结论。scale=100 把比例写成百分点。"""
    lo, hi = c.interval
    num = lambda x: f"{x * scale:+.{digits}f}"               # noqa: E731
    interval = "区间无法估计（只有 1 个种子）" if c.n == 1 else f"95% 区间 [{num(lo)}, {num(hi)}]{unit}"
    return (f"平均差 {num(c.mean_difference)}{unit}，{interval}，"
            f"{c.n} 个种子中 {c.n_agree} 个同向：{c.verdict}")
# --8<-- [end:describe]


# --8<-- [start:bleu]
@dataclass(frozen=True)
class BleuComparison:
    """两个系统在同一测试集上的 BLEU 差（b − a），句子级配对自助法。"""
    bleu_a: float
    bleu_b: float
    difference: float
    interval: tuple               # 差值的 95% 自助区间（与 sacreBLEU 用同一组重抽下标）
    p_value: float                # sacreBLEU paired bootstrap 的 p 值
    n_samples: int
    verdict: str                  # 「显著」：区间不含 0 且 p < 0.05；否则「不足以下结论」


def bleu_paired_bootstrap(hyps_a, hyps_b, references, n_samples=1000, confidence=0.95):
    """sacreBLEU 的配对自助法（Koehn 2004）：对句子有放回重抽，两系统用同一组下标。

    随机种子是 sacreBLEU 自己的（环境变量 SACREBLEU_SEED，默认 12345），p 值由它的 `PairedTest` 算出。
    """
    if PairedTest is None:
        raise ImportError("bleu_paired_bootstrap needs sacreBLEU: pip install sacrebleu")
    _check_bleu_inputs(hyps_a, hyps_b, references, n_samples)
    refs = [list(references)]
    metric = BLEU()
    test = PairedTest([("a", list(hyps_a)), ("b", list(hyps_b))], {"BLEU": metric}, refs,
                      test_type="bs", n_samples=n_samples)
    if not test._seed:                                       # sacreBLEU 把 0 和 none 都当作“不固定种子”
        raise ValueError("SACREBLEU_SEED must be a nonzero integer: the test must be reproducible")
    _, scores = test()
    result_a, result_b = scores["BLEU"]
    # 差值的区间：复现 sacreBLEU 的重抽下标（同一种子、同一调用），逐次重算两系统的语料级 BLEU
    idxs = np.random.default_rng(test._seed).choice(len(hyps_a), size=(n_samples, len(hyps_a)), replace=True)
    stats_a = np.array(metric._extract_corpus_statistics(list(hyps_a), refs), dtype="float32")
    stats_b = np.array(metric._extract_corpus_statistics(list(hyps_b), refs), dtype="float32")
    diffs = sorted(metric._compute_score_from_stats(sb.sum(0)).score
                   - metric._compute_score_from_stats(sa.sum(0)).score
                   for sa, sb in zip(stats_a[idxs], stats_b[idxs]))
    tail = (1.0 - confidence) / 2
    lo = diffs[int(math.floor(tail * (n_samples - 1)))]
    hi = diffs[int(math.ceil((1.0 - tail) * (n_samples - 1)))]
    significant = (lo > 0 or hi < 0) and result_b.p_value < 1.0 - confidence
    return BleuComparison(result_a.score, result_b.score, result_b.score - result_a.score,
                          (lo, hi), result_b.p_value, n_samples,
                          "显著" if significant else "不足以下结论")
# --8<-- [end:bleu]


# --8<-- [start:checks]
def _check_pairs(a, b, seeds, resolution):
    if not resolution >= 0:
        raise ValueError(f"resolution must be ≥ 0, got {resolution}")
    a = tuple(float(v) for v in a)
    b = tuple(float(v) for v in b)
    if len(a) != len(b):
        raise ValueError(f"a and b must have one value per seed: len(a)={len(a)}, len(b)={len(b)}")
    if not a:
        raise ValueError("a and b are empty: a comparison needs at least one seed")
    if not all(math.isfinite(v) for v in a + b):
        raise ValueError(f"a and b must be finite: a={a}, b={b}")
    seeds = tuple(range(len(a))) if seeds is None else tuple(seeds)
    if len(seeds) != len(a):
        raise ValueError(f"seeds must name one seed per value: len(seeds)={len(seeds)}, len(a)={len(a)}")
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must be distinct: {seeds}")
    return a, b, seeds


def _check_bleu_inputs(hyps_a, hyps_b, references, n_samples):
    if not (len(hyps_a) == len(hyps_b) == len(references)):
        raise ValueError(f"hyps_a, hyps_b and references must align sentence by sentence: "
                         f"{len(hyps_a)}, {len(hyps_b)}, {len(references)}")
    if len(hyps_a) == 0:
        raise ValueError("hyps_a is empty: the test needs at least one sentence")
    if n_samples < 1:
        raise ValueError(f"n_samples must be ≥ 1, got {n_samples}")
# --8<-- [end:checks]
