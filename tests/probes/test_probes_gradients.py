"""梯度衰减：线性 RNN 的斜率恰为 log₁₀ρ；tanh 饱和与 LSTM 遗忘门偏置的定性规律。"""

import math

import pytest

from snippets.probes.fit import semilog10_fit as fit_slope
from snippets.probes.gradients import grad_norms, run


@pytest.mark.parametrize("rho", [0.9, 1.0, 1.1])
def test_linear_rnn_slope_is_log10_rho(rho):
    T = 200
    norms = grad_norms("linear_rnn", T, 32, rho=rho)
    ks = list(range(1, 151))
    fit = fit_slope(ks, [norms[k] for k in ks])
    assert abs(fit["slope"] - math.log10(rho)) < 1e-9
    for k in (0, 10, 100):  # ‖(W^k)ᵀ u‖ = ρ^k（Q 正交，u 为单位向量）
        assert norms[k] == pytest.approx(rho**k, rel=1e-9)


def test_decay_orderings():
    res = {r["label"]: r["slope"] for r in run(T=120, d=16, k_max=100)["rows"]}
    assert res["tanh RNN ρ=1.1"] < 0  # tanh 饱和：ρ = 1.1 也衰减
    assert res["LSTM b_f=0"] < res["LSTM b_f=1"] < res["LSTM b_f=5"]  # 遗忘门越接近 1 衰减越慢
    assert abs(res["attention"]) < 0.01  # 单层注意力：与距离基本无关


def test_fit_slope_skips_zeros():
    assert fit_slope([1, 2, 3], [10.0, 0.0, 1000.0])["slope"] == pytest.approx(1.0)
