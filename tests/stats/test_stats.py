"""snippets/stats.py on cases whose answer is known: identical arms, a constant shift, one outlier
seed, a single seed, a one-token difference; the exact bootstrap against brute force; the t
quantile against its table; the BLEU test against sacreBLEU's own paired bootstrap."""

from __future__ import annotations

import itertools
import re
import math

import pytest

from snippets.stats import (
    VERDICTS, bleu_paired_bootstrap, bootstrap_mean_interval, compare_seeds, describe, t_interval,
    summarize, t_quantile,
)


def test_identical_arms_settle_nothing():
    c = compare_seeds([0.7, 0.8, 0.75, 0.9], [0.7, 0.8, 0.75, 0.9])
    assert c.differences == (0.0, 0.0, 0.0, 0.0)
    assert c.mean_difference == 0.0 and c.n_agree == 0 and c.sign == 0
    assert c.interval == (0.0, 0.0)
    assert c.verdict == "不足以下结论"


@pytest.mark.parametrize("shift", [2.5, -0.25])
def test_a_constant_shift_is_consistent_in_its_direction(shift):
    a = [10.0, 12.0, 11.0, 13.0, 9.0]
    c = compare_seeds(a, [x + shift for x in a], seeds=[3, 1, 4, 5, 9])
    assert c.seeds == (3, 1, 4, 5, 9)
    assert c.mean_difference == pytest.approx(shift)
    assert c.bootstrap_interval == pytest.approx((shift, shift))
    assert c.t_interval == pytest.approx((shift, shift))
    assert c.n_agree == 5 and c.sign == (1 if shift > 0 else -1)
    assert c.verdict == "一致"


def test_one_seed_against_the_rest_is_a_majority():
    # seven seeds +2, one seed −1: the mean is clearly above 0, but not every seed agrees
    c = compare_seeds([0.0] * 8, [2.0] * 7 + [-1.0])
    assert c.n_agree == 7
    assert c.interval[0] > 0
    assert c.verdict == "多数"


def test_one_outlier_seed_in_the_same_direction_widens_the_interval():
    # every seed agrees, but one seed carries the mean: the t-interval includes 0
    c = compare_seeds([0.0] * 5, [0.1, 0.2, 0.1, 0.2, 20.0])
    assert c.n_agree == 5
    assert c.bootstrap_interval[0] > 0                  # the bootstrap alone would say 「一致」
    assert c.t_interval[0] < 0 < c.t_interval[1]
    assert c.verdict == "不足以下结论"


def test_two_agreeing_seeds_with_spread_settle_nothing():
    """The percentile bootstrap never reaches beyond the seeds' own range, so with two seeds of the
    same sign it would always exclude 0; the t-interval (df = 1) keeps the verdict honest."""
    c = compare_seeds([0.0, 0.0], [1.0, 3.0])
    assert c.bootstrap_interval == (1.0, 3.0)
    assert c.verdict == "不足以下结论"


def test_the_review_example_is_not_settled():
    """The review's label-smoothing example: four seeds, paired differences −0.2 … +8.9 points."""
    c = compare_seeds([0.0] * 4, [-0.2, 8.9, 3.1, 1.9])
    assert c.n_agree == 3
    assert c.verdict == "不足以下结论"


def test_a_single_seed_has_no_interval():
    c = compare_seeds([1.0], [5.0])
    assert c.interval == (-math.inf, math.inf) and c.t_interval is None
    assert c.verdict == "不足以下结论"
    assert "只有 1 个种子" in describe(c)


def test_a_difference_within_the_resolution_does_not_count():
    # accuracy over 6437 tokens: a one-token difference is not 「更高」
    one_token = 1 / 6437
    c = compare_seeds([0.5, 0.6], [0.5 + one_token, 0.6 + 0.05], resolution=one_token)
    assert c.n_agree == 1
    assert c.verdict != "一致"
    assert compare_seeds([0.5], [0.5 + one_token], resolution=one_token).n_agree == 0


def test_exact_bootstrap_equals_brute_force():
    values = [0.3, -1.2, 2.5, 0.8]
    means = sorted(sum(values[i] for i in idx) / 4 for idx in itertools.product(range(4), repeat=4))
    # the 2.5 % and 97.5 % points of the 256 equally likely resample means
    lo = means[math.ceil(0.025 * 256) - 1]
    hi = means[math.ceil(0.975 * 256) - 1]
    assert bootstrap_mean_interval(values) == pytest.approx((lo, hi))


def test_monte_carlo_bootstrap_is_seeded_and_close_to_the_normal_interval():
    values = [float(i % 7) - 2.0 for i in range(40)]
    first = bootstrap_mean_interval(values)
    assert bootstrap_mean_interval(values) == first      # deterministic
    mean = sum(values) / 40
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / 40)
    half = 1.96 * sd / math.sqrt(40)
    assert first[0] == pytest.approx(mean - half, abs=0.1)
    assert first[1] == pytest.approx(mean + half, abs=0.1)


@pytest.mark.parametrize("df, table", [(1, 12.706), (2, 4.303), (4, 2.776), (9, 2.262), (30, 2.042), (1000, 1.962)])
def test_t_quantile_matches_the_table(df, table):
    assert t_quantile(0.975, df) == pytest.approx(table, abs=1e-3)
    assert t_quantile(0.025, df) == pytest.approx(-table, abs=1e-3)


def test_t_interval_by_hand():
    # mean 2, s = 1, n = 4: 2 ± 3.182 · 1/2
    lo, hi = t_interval([1.0, 2.0, 3.0, 2.0 + 0.0])
    s = math.sqrt(2 / 3)
    assert (lo, hi) == pytest.approx((2 - 3.1824 * s / 2, 2 + 3.1824 * s / 2), abs=1e-3)


def test_describe_names_every_part():
    c = compare_seeds([0.0] * 4, [1.0, 1.2, 0.9, 1.1])
    text = describe(c, unit=" 个点")
    assert text.startswith("平均差 +1.1 个点")
    assert "4 个种子中 4 个同向" in text and text.endswith(c.verdict)
    assert c.verdict in VERDICTS


@pytest.mark.parametrize("kwargs, word", [
    (dict(a=[1, 2], b=[1]), "len(a)=2, len(b)=1"),
    (dict(a=[], b=[]), "at least one seed"),
    (dict(a=[1, float("nan")], b=[1, 2]), "finite"),
    (dict(a=[1, 2], b=[1, 2], seeds=[0, 0]), "distinct"),
    (dict(a=[1, 2], b=[1, 2], seeds=[0]), "len(seeds)=1"),
    (dict(a=[1, 2], b=[1, 2], resolution=-1), "resolution"),
])
def test_bad_input_names_the_argument(kwargs, word):
    with pytest.raises(ValueError, match=re.escape(word)):
        compare_seeds(**kwargs)


# BLEU: sentence-level paired bootstrap, as sacreBLEU runs it

REFS = [f"the cat number {i} sat on the mat near door {i % 5}" for i in range(60)]
WORSE = [f"the cat {i} sat on a mat near the door" for i in range(60)]
BETTER = [r if i % 3 else w for i, (r, w) in enumerate(zip(REFS, WORSE))]   # two in three sentences exact


def test_bleu_identical_systems_settle_nothing():
    c = bleu_paired_bootstrap(WORSE, WORSE, REFS, n_samples=200)
    assert c.difference == 0.0 and c.interval == (0.0, 0.0)
    assert c.verdict == "不足以下结论"


def test_bleu_a_clearly_better_system_is_significant():
    from sacrebleu.metrics import BLEU
    from sacrebleu.significance import PairedTest

    c = bleu_paired_bootstrap(WORSE, BETTER, REFS, n_samples=200)
    assert c.difference == pytest.approx(BLEU().corpus_score(BETTER, [REFS]).score - BLEU().corpus_score(WORSE, [REFS]).score)
    assert 0 < c.interval[0] < c.difference < c.interval[1]
    # the p-value is sacreBLEU's own
    _, scores = PairedTest([("a", WORSE), ("b", BETTER)], {"BLEU": BLEU()}, [REFS], test_type="bs", n_samples=200)()
    assert c.p_value == scores["BLEU"][1].p_value < 0.05
    assert c.verdict == "显著"


def test_bleu_bad_input():
    with pytest.raises(ValueError, match="align sentence by sentence"):
        bleu_paired_bootstrap(WORSE, WORSE[:-1], REFS)
    with pytest.raises(ValueError, match="n_samples"):
        bleu_paired_bootstrap(WORSE, WORSE, REFS, n_samples=0)





def test_summarize_reports_the_range_and_the_interval():
    s = summarize([1.0, 2.0, 3.0, 2.0])
    assert (s.n, s.mean, s.min, s.max) == (4, 2.0, 1.0, 3.0)
    assert s.interval == pytest.approx(t_interval([1.0, 2.0, 3.0, 2.0]))
    assert summarize([5.0]).interval is None
    with pytest.raises(ValueError, match="empty"):
        summarize([])
    with pytest.raises(ValueError, match="finite"):
        summarize([1.0, float("inf")])
