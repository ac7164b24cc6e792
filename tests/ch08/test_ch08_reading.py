"""The worked example of docs/reading-experiments.md: chapter 08's label-smoothing comparison read with
the statistics helper (snippets/stats.py) on the committed files, and the page's words held to it."""

from __future__ import annotations

import pytest

from sitebuild.generate.render.page_reading import comparison
from snippets.results import load_results
from tests.support.verdicts import assert_reading, problems

PAGE = "reading-experiments.md"


@pytest.fixture(scope="module")
def comparisons():
    full = {**load_results("results/training-recipe.json"), "_file": "results/training-recipe.json"}
    long = {**load_results("results/training-recipe-long.json"), "_file": "results/training-recipe-long.json"}
    return comparison(full, "accuracy")[0], comparison(long, "ece")[0]


@pytest.mark.claim("ch08-reading-example", paper="§5.4", results="results/training-recipe.json",
                   title="怎样读本书的实验：标签平滑的例子",
                   text="400 步、4 个种子，标签平滑对准确率的差「不足以下结论」（有种子反向，区间含 0）；"
                        "1600 步时 4 个种子上平滑的 ECE 都更高（「一致」）")
def test_the_example_reads_each_comparison_as_its_verdict(comparisons):
    accuracy, ece = comparisons
    assert (accuracy.n, accuracy.verdict) == (4, "不足以下结论")
    assert accuracy.n_agree < accuracy.n and accuracy.interval[0] < 0 < accuracy.interval[1]
    assert (ece.n, ece.verdict, ece.sign) == (4, "一致", 1)
    assert_reading(PAGE, "4 个种子，看不出平滑对准确率的影响", accuracy)
    assert_reading(PAGE, "平滑组的 ECE 都更高", ece)


def test_the_reading_rules_catch_an_overread(comparisons):
    """The rule the claim relies on fails the wrong page: 「更高」 on 「不足以下结论」, 「都更高」 on a split."""
    accuracy, ece = comparisons
    assert problems("400 步、4 个种子上平滑的准确率更高", accuracy)
    assert problems("4 个种子上平滑的准确率都更高", accuracy)
    assert problems("1600 步、4 个种子上平滑的 ECE 更低", ece)
    assert problems("平滑的 ECE 都更高", ece)                     # no seed count
    assert problems("4 个种子上两者没有差别", accuracy)
    assert problems("400 步、4 个种子，平滑后准确率更高，看不出差别有多大", accuracy)
    assert not problems("400 步、4 个种子，看不出平滑对准确率的影响", accuracy)
