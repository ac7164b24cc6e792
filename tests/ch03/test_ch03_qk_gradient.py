"""What removing 1/√d_k does to the gradient that reaches Q and K: the committed qk-gradient results
(thresholds stated on the page), the experiment's gradients against the reader's attention, a tiny smoke
run, the renderer; and the first-step scorer gradient recorded by the additive-vs-dot experiment.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from sitebuild.generate.render import ch03_additive, ch03_qk_gradient
from snippets.attention import scaled_dot_product_attention
from snippets.experiments import qk_gradient
from snippets.results import load_results
from snippets.softmax import softmax_vjp, stable_softmax
from snippets.stats import compare_seeds, describe
from tests.support.pages import assert_states, chapter
from tests.support.verdicts import assert_reading

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "results" / "qk-gradient.json"
ADDITIVE = ROOT / "results" / "additive-vs-dot.json"
F64 = torch.float64
PAGE = chapter("03") + "derivation-softmax.md"
CODE = chapter("03") + "code.md"
QUESTIONS = chapter("03") + "questions.md"


@pytest.fixture(scope="module")
def committed() -> dict:
    data = load_results(RESULTS)  # validates against results/schema/qk-gradient.schema.json
    assert data["kind"] == qk_gradient.KIND and data["preset"] == "full"
    assert data["config"]["d_k_values"] == [16, 64, 256, 1024] and len(data["config"]["seeds"]) >= 3
    return data


def runs_at(data: dict, d_k: int) -> list[dict]:
    mine = sorted((r for r in data["runs"] if r["d_k"] == d_k), key=lambda r: r["seed"])
    assert len(mine) == len(data["config"]["seeds"])
    return mine


def log_ratio(data: dict, d_k: int, grad: str):
    """ln(unscaled) − ln(scaled) of one gradient median, paired by seed: the pages compare ratios."""
    mine = runs_at(data, d_k)
    return compare_seeds([math.log(r[f"{grad}_median_scaled"]) for r in mine],
                         [math.log(r[f"{grad}_median_unscaled"]) for r in mine], [r["seed"] for r in mine])


def test_gradients_are_those_of_the_readers_attention_and_the_chain_rule():
    """The experiment's s → softmax → P·V equals the reader's sdpa (unscaled: q·√d_k passed in), and
    ∂L/∂q = c·(∂L/∂s)·K with ∂L/∂s = p ⊙ (∂L/∂p − ⟨p, ∂L/∂p⟩)."""
    g = torch.Generator().manual_seed(0)
    d_k = 64
    q, k = torch.randn(2, 8, d_k, generator=g, dtype=F64), torch.randn(2, 16, d_k, generator=g, dtype=F64)
    v, up = torch.randn(2, 16, 4, generator=g, dtype=F64), torch.randn(2, 8, 4, generator=g, dtype=F64)
    for scale, c in (("sqrt", 1 / math.sqrt(d_k)), ("none", 1.0)):
        got = qk_gradient.gradients(q, k, v, up, scale)
        qq = (q * (1.0 if scale == "sqrt" else math.sqrt(d_k))).requires_grad_()
        out, p = scaled_dot_product_attention(qq, k, v)
        (out * up).sum().backward()
        dq_ref = qq.grad * (1.0 if scale == "sqrt" else math.sqrt(d_k))  # 链式法则：q 乘过 √d_k
        assert (got["dq"] - dq_ref.norm(dim=-1).flatten()).abs().max().item() < 1e-10
        ds = softmax_vjp(p.detach(), up @ v.transpose(-2, -1))  # (2, 8, 16)
        assert (got["ds"] - ds.norm(dim=-1).flatten()).abs().max().item() < 1e-10
        assert (got["dq"] - (c * ds @ k).norm(dim=-1).flatten()).abs().max().item() < 1e-10
        assert torch.allclose(stable_softmax(c * q @ k.transpose(-2, -1)), p)


@pytest.mark.claim("ch03-qk-gradient", paper="§3.2.1", results="results/qk-gradient.json",
                   text="初始化时去掉 1/√d_k（16 个种子，倍数取对数后逐种子配对比较）：到分数的梯度中位数在 d_k ≥ 64 时都更小（「一致」，d_k = 1024 时不到 1/100）；到 q 的在 d_k = 16、64 时大 4 倍以上（「一致」），d_k = 256 时平均只大约 1.17 倍、16 个种子中 1 个反向（「多数」），只有 d_k = 1024 时不到 1/10；到 k 的在 d_k ≤ 256 时都更大（「一致」），d_k = 1024 时平均更大、1 个种子反向（「多数」）")
def test_unscaled_gradient_to_q_is_larger_until_dk_is_large(committed):
    for r in runs_at(committed, 16) + runs_at(committed, 64):
        assert r["dq_ratio"] > 4.0, r
    for d_k in (64, 256, 1024):
        for r in runs_at(committed, d_k):
            assert r["ds_ratio"] < 1.0, r
    for r in runs_at(committed, 1024):
        assert r["ds_ratio"] < 0.01 and r["dq_ratio"] < 0.1, r
    for d_k in (16, 64, 256):
        for r in runs_at(committed, d_k):
            assert r["dk_ratio"] >= 1.0, r
    # d_k = 256 到 q、d_k = 1024 到 k：平均更大，但各有 1 个种子反向（倍数 < 1）
    for d_k, key in ((256, "dq_ratio"), (1024, "dk_ratio")):
        ratios = sorted(r[key] for r in runs_at(committed, d_k))
        assert sum(x < 1.0 for x in ratios) == 1, (d_k, ratios)
        assert_states(PAGE, f"逐种子的倍数从{ratios[0]:.2f}到{ratios[-1]:.2f}")
    # 页面上的比较：ln 不缩放 − ln 缩放，逐种子配对
    verdicts = {(g, d): log_ratio(committed, d, g) for g in ("ds", "dq", "dk") for d in (16, 64, 256, 1024)}
    expected = {("ds", 64): -1, ("ds", 256): -1, ("ds", 1024): -1, ("dq", 16): 1, ("dq", 64): 1,
                ("dq", 1024): -1, ("dk", 16): 1, ("dk", 64): 1, ("dk", 256): 1}
    for key, sign in expected.items():
        assert (verdicts[key].n, verdicts[key].verdict, verdicts[key].sign) == (16, "一致", sign), key
    for key in (("dq", 256), ("dk", 1024)):
        c = verdicts[key]
        assert (c.n, c.verdict, c.sign, c.n - c.n_agree) == (16, "多数", 1, 1), key
    for d in (64, 256, 1024):
        c = verdicts[("ds", d)]
        assert_reading(PAGE, "16 个种子上不缩放的都更小，$d_k=1024$ 时不到 1/100", c, stated=describe(c, "", digits=2))
    for d in (16, 64):
        c = verdicts[("dq", d)]
        assert_reading(PAGE, "16 个种子上不缩放的都更大，大 4 倍以上", c, stated=describe(c, "", digits=2))
    c = verdicts[("dq", 256)]
    factor = f"只大约 {math.exp(c.mean_difference):.2f} 倍"
    assert_reading(PAGE, "$d_k=256$ 时不缩放的平均仍更大", c, stated=describe(c, "", digits=3))
    assert_reading(QUESTIONS, "$d_k=256$ 时平均仍更大", c, stated=describe(c, "", digits=3))
    for page in (PAGE, QUESTIONS):
        assert_states(page, factor, "16个种子中1个反向")
    c = verdicts[("dq", 1024)]
    assert_reading(PAGE, "只有 $d_k=1024$ 时才整体缩小到 1/10 以下", c, stated=describe(c, "", digits=2))
    assert_reading(QUESTIONS, "时 16 个种子上都更小，不到 1/10", c, stated=describe(c, "", digits=2))
    for d in (16, 64, 256):
        c = verdicts[("dk", d)]
        assert_reading(PAGE, "到 $k$ 的梯度是对所有查询求和", c, stated=describe(c, "", digits=2))
    c = verdicts[("dk", 1024)]
    assert_reading(PAGE, "$d_k=1024$ 时平均仍更大，16 个种子中 1 个反向", c, stated=describe(c, "", digits=2))
    c = verdicts[("dq", 64)]
    assert_reading(QUESTIONS, "到 $q$ 的梯度中位数在 $d_k=64$ 时 16 个种子上不缩放的都更大", c, stated=describe(c, "", digits=2))
    assert_states(PAGE, "d_k=1024时不到1/100", "大4倍以上", "d_k=1024时才整体缩小到1/10以下")


@pytest.mark.claim("ch03-qk-gradient-tail", paper="§3.2.1", results="results/qk-gradient.json",
                   text="不缩放时到 q 的梯度集中在少数没饱和的查询上：‖∂L/∂q‖² 最大的 10% 的查询所占份额在 d_k = 64、256、1024 时分别超过 55%、75%、90%（缩放时都低于 40%）；d_k = 256 时超过 15% 的查询收到的梯度不到缩放时中位数的 1%")
def test_unscaled_gradient_is_heavy_tailed(committed):
    floors = {64: 0.55, 256: 0.75, 1024: 0.90}
    for d_k, floor in floors.items():
        for r in runs_at(committed, d_k):
            assert r["dq_tail_share_unscaled"] > floor, r
    for r in committed["runs"]:
        assert r["dq_tail_share_scaled"] < 0.40, r
    for r in runs_at(committed, 256):
        assert r["dq_starved_unscaled"] > 0.15, r
    assert_states(PAGE, "分别占全部平方和的一半以上、四分之三以上、九成以上（缩放时不到40%）",
                  "d_k=256时超过15%的查询收到的梯度不到缩放时中位数的1%")


@pytest.mark.claim("ch03-init-scorer-grad", paper="§3.2.1", results="results/additive-vs-dot.json",
                   text="查表实验的第一步，不缩放点积的打分参数（W_q、W_k）梯度范数在 d_k ≥ 16 的每个种子上都是缩放点积的 3.5 倍以上，倍数取对数后逐种子配对比较，三个 d_k 都是「一致」：初始化时的饱和没有让到打分参数的梯度变小")
def test_first_step_scorer_gradient_is_larger_without_scaling():
    data = load_results(ADDITIVE)
    seeds = data["config"]["seeds"]
    grad = {(r["mechanism"], r["d_k"], r["seed"]): r["init"]["scorer_grad_norm"] for r in data["runs"]}
    for d_k in (16, 64, 256):
        for seed in seeds:
            assert grad[("dot-unscaled", d_k, seed)] > 3.5 * grad[("dot-scaled", d_k, seed)], (d_k, seed)
        c = compare_seeds([math.log(grad[("dot-scaled", d_k, s)]) for s in seeds],
                          [math.log(grad[("dot-unscaled", d_k, s)]) for s in seeds], seeds)
        assert (c.n, c.verdict, c.sign) == (3, "一致", 1)
        assert_reading(CODE, "3 个种子上不缩放的都更大，每个种子都是缩放时的 3.5 倍以上", c, stated=describe(c, "", digits=2))
        if d_k == 64:
            assert_reading(QUESTIONS, "打分参数的梯度范数在", c, stated=describe(c, "", digits=2))
    assert abs(ch03_additive.scorer_grad_norm_mean(data, "dot-unscaled", 64)
               - sum(grad[("dot-unscaled", 64, s)] for s in seeds) / len(seeds)) < 1e-12


def test_summary_is_the_mean_of_the_runs(committed):
    for s in committed["summary"]:
        vals = [r["dq_ratio"] for r in runs_at(committed, s["d_k"])]
        assert abs(s["dq_ratio_mean"] - sum(vals) / len(vals)) < 1e-12
        assert s["dq_ratio_min"] == min(vals) and s["dq_ratio_max"] == max(vals)


@pytest.mark.slow
def test_tiny_smoke_run_writes_a_valid_file_and_renders(tmp_path):
    out = tmp_path / "qk.json"
    assert qk_gradient.main(["--preset", "tiny", "--out", str(out)]) == 0
    data = load_results(out)
    assert data["preset"] == "tiny" and len(data["runs"]) == 2
    ch03_qk_gradient.render_table([dict(data, preset="quick")], tmp_path)
    table = (tmp_path / "qk-gradient.md").read_text(encoding="utf-8")
    assert "‖∂L/∂q‖ 之比" in table and "数据文件" in table


def test_renderer_writes_a_placeholder_without_results(tmp_path):
    ch03_qk_gradient.render_table([], tmp_path)
    assert "尚无测量结果" in (tmp_path / "qk-gradient.md").read_text(encoding="utf-8")
