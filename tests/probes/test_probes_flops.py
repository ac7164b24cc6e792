"""FLOPs 探针：计数器的整数结果与闭式完全相等；交叉点由二分法在计数上求得。"""

import pytest

from snippets.probes.flops import (
    CROSSOVERS,
    bisect_crossover,
    closed_form,
    count_flops,
    crossover,
)

GRID = [(16, 64), (37, 8), pytest.param(512, 16, marks=pytest.mark.slow)]  # n 16–512，d 8–64；37 是奇数
MODES = ["fwd", "fwd+bwd"]


@pytest.mark.claim(
    "ch01-c11",
    paper="§4 表 1",
    title="多头自注意力的精确 FLOPs 4n²d + 8nd²",
    text="显式多头自注意力（无偏置的 W^Q、W^K、W^V、W^O）的 FLOPs 恰为 4n²d + 8nd²，与头数 h 无关；"
    "前向+反向恰为 12n²d + 24nd²，注意力核心恰为 4n²d（前向+反向 12n²d）",
)
@pytest.mark.parametrize("n, d, h", [(128, 64, 1), (256, 64, 8), (64, 256, 4), (16, 8, 2), (37, 64, 4)])
def test_attention_flops_are_exact_and_independent_of_heads(n, d, h):
    assert count_flops("attention", n, d, "fwd", heads=h) == 4 * n * n * d + 8 * n * d * d
    assert count_flops("attention", n, d, "fwd+bwd", heads=h) == 12 * n * n * d + 24 * n * d * d
    assert count_flops("attention_core", n, d, "fwd") == 4 * n * n * d
    assert count_flops("attention_core", n, d, "fwd+bwd") == 12 * n * n * d


def test_published_c11_values():
    assert count_flops("attention", 128, 64, heads=1) == 8_388_608
    assert count_flops("attention", 256, 64, heads=8) == 25_165_824
    assert count_flops("attention", 64, 256, heads=4) == 37_748_736


@pytest.mark.claim(
    "ch01-c12",
    paper="§4 表 1",
    title="各类层的 FLOPs 与闭式逐个相等",
    text="FlopCounterMode 数出的 FLOPs 与闭式逐个相等：Elman RNN 4nd²、LSTM 16nd²、GRU 12nd²、"
    "因果卷积 2knd²、受限注意力 8nd² + 4n(2w+1)d（半径 w；前向与前向+反向，n 16–512，d 8–64）",
)
@pytest.mark.parametrize("kind", ["rnn", "lstm", "gru", "conv", "restricted"])
@pytest.mark.parametrize("n, d", GRID)
def test_recurrent_conv_restricted_flops_equal_closed_form(kind, n, d):
    for mode in MODES:
        assert count_flops(kind, n, d, mode) == closed_form(kind, n, d, mode), (kind, n, d, mode)


def test_published_c12_values():
    n, d = 128, 64
    assert count_flops("rnn", n, d) == 4 * n * d * d == 2_097_152
    assert count_flops("lstm", n, d) == 16 * n * d * d == 8_388_608
    assert count_flops("conv", n, d, kernel=3) == 2 * 3 * n * d * d == 3_145_728
    # 受限注意力的混合项（核心）= 4n(2w+1)d，半径 w：整层减去 8nd² 的投影
    assert count_flops("restricted", n, d, radius=4) - 8 * n * d * d == 4 * n * 9 * d == 294_912


@pytest.mark.parametrize("kernel, radius", [(2, 1), (5, 3)])
def test_other_kernels_and_radii(kernel, radius):
    n, d = 40, 16
    for mode in MODES:
        assert count_flops("conv", n, d, mode, kernel=kernel) == closed_form("conv", n, d, mode, kernel=kernel)
        assert count_flops("restricted", n, d, mode, radius=radius) == closed_form(
            "restricted", n, d, mode, radius=radius)


def test_bisect_crossover_finds_first_nonnegative():
    assert bisect_crossover(lambda n: n - 37, 1, 100) == 37
    assert bisect_crossover(lambda n: 1, 1, 100) == 1
    assert bisect_crossover(lambda n: -1, 1, 100) is None


@pytest.mark.claim(
    "ch01-c13",
    paper="§4",
    title="「n < d 时自注意力更快」在哪个比较下成立",
    text="在计数器的计数上二分：注意力核心 4n²d 比整层 Elman RNN 便宜当且仅当 n < d；"
    "整层自注意力比 GRU 便宜当且仅当 n < d，比 LSTM 便宜当且仅当 n < 2d，而从不比 Elman RNN 便宜",
)
@pytest.mark.parametrize("d", [16, 24])
def test_crossovers_by_bisection_on_counts(d):
    for _name, a, b, theory in CROSSOVERS:
        r = crossover(a, b, d)
        if theory is None:  # 从不更便宜：n = 1 时已经不便宜
            assert r["n_star"] == 1
            assert r["count_a_at_n_star"] > r["count_b_at_n_star"]
        else:
            assert r["n_star"] == theory(d)
            assert r["count_a_below"] < r["count_b_below"]  # n* − 1 处注意力更便宜
            assert r["count_a_at_n_star"] == r["count_b_at_n_star"]  # 交叉点上恰好相等
    # 整层注意力从不比 Elman RNN 便宜：在一串 n 上直接比较计数
    for n in (1, 2, d // 2, d, 2 * d, 4 * d):
        assert count_flops("attention", n, d) > count_flops("rnn", n, d)
