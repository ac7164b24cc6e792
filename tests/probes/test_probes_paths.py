"""最大路径长度：使 ∂y_n/∂x₁ ≠ 0 的最小深度，在一个偶数 n 和一个奇数 n 上与理论完全相等。"""

import math

import pytest

from snippets.probes.paths import ceil_log, measure_depth, reached_offsets

NS = [16, 33]  # 偶数与奇数（奇数检验上取整）


def _check(r):
    assert r["depth"] == r["theory"], r
    assert r["grad_norm_at_depth"] > 0.0  # 深度 L：依赖存在
    assert r["grad_norm_below"] == 0.0  # 深度 L−1：精确为 0（不是"很小"）


@pytest.mark.claim(
    "ch01-c09",
    paper="§4 表 1",
    title="卷积与空洞卷积连通两端所需的层数",
    text="堆叠因果卷积时，让 y_n 依赖 x₁ 的最小层数：核宽 k 的普通卷积恰为 ⌈(n−1)/(k−1)⌉；"
    "第 ℓ 层空洞率 k^ℓ 的空洞卷积，ℓ = 0, …, N−1（第一层空洞率为 1）时恰为 ⌈log_k n⌉，"
    "（float64 雅可比，N 层非零、N−1 层精确为 0）；ℓ = 1, …, N（第一层空洞率为 k）时 N 层的感受野跨 "
    "k^{N+1}−k+1 个位置，但 y_n 只依赖偏移为 k 的倍数的输入，所以到不了每个 x₁",
)
@pytest.mark.parametrize("n", NS)
@pytest.mark.parametrize("k", [2, 3, 4])
def test_conv_depths(n, k):
    plain = measure_depth("conv", n, kernel=k)
    _check(plain)
    assert plain["depth"] == math.ceil((n - 1) / (k - 1))
    dilated = measure_depth("dilated_conv", n, kernel=k)
    _check(dilated)
    assert dilated["depth"] == ceil_log(n, k) == math.ceil(math.log(n, k) - 1e-12)
    for N in (1, 2, 3):
        span = k ** (N + 1) - k  # 最远的偏移：感受野 k^{N+1} − k + 1 个位置
        expected = [m for m in range(0, min(span, n - 1) + 1, k)]
        assert reached_offsets("dilated_conv_from_k", n, N, kernel=k) == expected, (N, k, n)


@pytest.mark.claim(
    "ch01-c10",
    paper="§4 表 1",
    title="受限自注意力连通两端所需的层数",
    text="只看半径 w 内 2w+1 个位置的受限自注意力，堆叠到 y_n 依赖 x₁ 的最小层数恰为 ⌈(n−1)/w⌉，即 O(n/r)（r ≈ 2w+1 是论文的邻域大小）",
)
@pytest.mark.parametrize("n", NS)
@pytest.mark.parametrize("r", [1, 4, 8])
def test_restricted_attention_depths(n, r):
    res = measure_depth("restricted", n, radius=r)
    _check(res)
    assert res["depth"] == math.ceil((n - 1) / r)


@pytest.mark.parametrize("n", NS)
def test_full_attention_reaches_in_one_layer(n):
    res = measure_depth("attention", n)
    _check(res)
    assert res["depth"] == 1


@pytest.mark.parametrize("n", NS)
@pytest.mark.parametrize("kind", ["rnn", "lstm"])
def test_recurrent_path_is_n_cell_applications(kind, n):
    res = measure_depth(kind, n)
    _check(res)
    assert res["depth"] == n  # 1 次读入 x₁ + (n − 1) 次循环跳
    # n 轮同步计算 = 顺序实现（一轮是一次批量为 n 的单元调用，矩阵乘的舍入可差 1 ulp）
    assert res["rounds_equal_sequential"] < 1e-14


def test_ceil_log_is_exact_integer_arithmetic():
    assert [ceil_log(n, 2) for n in (1, 2, 3, 4, 5, 64, 65)] == [0, 1, 2, 2, 3, 6, 7]
    assert ceil_log(27, 3) == 3 and ceil_log(28, 3) == 4
