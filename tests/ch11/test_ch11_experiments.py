"""Chapter 11's experiment: the committed toy AttnRes results against the thresholds stated on the page,
a tiny smoke run into tmp_path, the task's entropy floor, and the renderer."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest
import torch

from sitebuild.generate.render import ch11_attnres
from snippets.experiments import attention_residuals as exp
from snippets.results import load_results
from tests.support.committed import committed_results
from tests.support.pages import assert_states, chapter

CODE = chapter("11") + "code.md"
ROOT = Path(__file__).resolve().parents[2]
FULL = ROOT / "results" / "attention-residuals.json"
LONG = ROOT / "results" / exp.LONG_OUT


def committed(path: Path, preset: str) -> dict:
    return committed_results(path, exp, preset, free=("optimizer",))


@pytest.fixture(scope="module")
def full() -> dict:
    return committed(FULL, "full")


def runs(data: dict, variant: str) -> list[dict]:
    return [r for r in data["runs"] if r["variant"] == variant]


def summary(data: dict, variant: str) -> dict:
    (row,) = [s for s in data["summary"] if s["variant"] == variant]
    return row


def test_file_covers_every_seed_and_variant(full):
    assert len(full["config"]["seeds"]) >= 3
    for v in exp.VARIANTS:
        mine = runs(full, v)
        assert [r["seed"] for r in mine] == full["config"]["seeds"]
        losses = [r["val_loss"] for r in mine]
        s = summary(full, v)
        assert s["val_loss_min"] == min(losses) and abs(s["val_loss_mean"] - statistics.fmean(losses)) < 1e-12
        assert abs(s["excess_mean"] - (s["val_loss_mean"] - full["task"]["entropy_floor"])) < 1e-12


@pytest.mark.claim("ch11-toy-loss", paper="AttnRes §5", results="results/attention-residuals.json",
                   title="玩具损失：400 步时三种残差分不出高下",
                   text="400 步、3 个种子、8 个子层：三种残差的超额损失都 < 0.05 nats；三者的验证损失均值相差 < 0.01，"
                        "普通残差与 Full AttnRes 的种子范围重叠，Block AttnRes 的均值最高；AttnRes 多出的参数约占 1%")
def test_toy_loss(full):
    assert full["config"]["steps"] == 400 and len(full["config"]["seeds"]) == 3
    means = {v: summary(full, v)["val_loss_mean"] for v in exp.VARIANTS}
    assert all(summary(full, v)["excess_mean"] < 0.05 for v in exp.VARIANTS)
    assert max(means.values()) - min(means.values()) < 0.01
    base, fullres = summary(full, "baseline"), summary(full, "full")
    assert base["val_loss_min"] <= fullres["val_loss_max"] and fullres["val_loss_min"] <= base["val_loss_max"]
    assert max(means, key=means.get) == "block"
    assert round(100 * (fullres["params"] - base["params"]) / base["params"]) == 1
    assert_states(CODE, "离熵下界只差约0.03nats", "均值相差不到0.01", "约1%")


@pytest.mark.claim("ch11-toy-magnitude", paper="AttnRes 图 5", results="results/attention-residuals.json",
                   title="玩具模型：普通残差的输入随深度变大，AttnRes 的有界",
                   text="400 步、3 个种子：普通残差送往输出层的输入的均方根在每个种子上都至少是第一个子层输入的 2 倍；"
                        "Full 与 Block AttnRes 每个子层的输入都不超过嵌入本身的均方根")
def test_toy_magnitude(full):
    for r in runs(full, "baseline"):
        assert r["input_rms"][-1] >= 2 * r["input_rms"][0]
    for v in ("full", "block"):
        for r in runs(full, v):
            assert max(r["input_rms"][1:]) <= r["input_rms"][0]
    assert_states(CODE, "至少是第一个的2倍", "都不超过嵌入本身的大小")


@pytest.mark.claim("ch11-toy-grad", paper="AttnRes 图 5", results="results/attention-residuals.json",
                   title="玩具模型：逐层梯度读不出差别",
                   text="400 步、3 个种子、8 个子层：三种残差在每个种子里逐层梯度的最大与最小之比都小于 4")
def test_toy_gradients(full):
    for r in full["runs"]:
        assert max(r["grad_norm"]) / min(r["grad_norm"]) < 4
    assert_states(CODE, "最大与最小之比都小于4")


@pytest.mark.claim("ch11-toy-alpha", paper="AttnRes 图 8", results="results/attention-residuals.json",
                   title="玩具模型：嵌入保有高于均匀的权重",
                   text="400 步、3 个种子平均：Full AttnRes 在第 3–8 个子层之前给嵌入（来源 0）的权重都高于均匀的 1/l，"
                        "并且是所有来源里最大的；第 2 个子层之前（只有两个来源）与送往输出层的那一次不是")
def test_toy_alpha(full):
    mine = runs(full, "full")
    mean_rows = [[statistics.fmean(vals) for vals in zip(*rows)] for rows in zip(*(r["alpha"] for r in mine))]
    n = 2 * full["config"]["model"]["n_layers"]
    assert len(mean_rows) == n + 1 and all(len(row) == l + 1 for l, row in enumerate(mean_rows))
    for row in mean_rows:
        assert abs(sum(row) - 1) < 1e-6
    for row in mean_rows[2:n]:                      # 子层 3 … n 之前
        assert row[0] > 1 / len(row) and row[0] == max(row)
    for row in (mean_rows[1], mean_rows[n]):        # 子层 2 之前、输出层之前：不是
        assert row[0] < 1 / len(row)
    assert_states(CODE, "第3–8个子层之前", "第2个子层之前（只有两个来源）与送往输出层的那一次不是")


@pytest.mark.claim("ch11-toy-stream", paper="AttnRes §7", results="results/attention-residuals.json",
                   title="读者模型上 ‖h_L‖：初始化按 √L，训练后更快",
                   text="初始化时 32 个子层、3 个种子：各输出的平均余弦绝对值 < 0.01，‖h_L‖ 与不相关的预测相差 < 15%；"
                        "训练 400 步后（8 个子层）每个种子的平均余弦 > 0.03，‖h_L‖ 比预测大 10% 以上；训练前两者相差 < 5%")
def test_toy_stream(full):
    probe = full["depth_probe"]
    assert probe["n_layers"] == 16 and len(probe["runs"]) == 3
    for p in probe["runs"]:
        assert abs(p["mean_cosine"]) < 0.01 and abs(p["ratio_last"] - 1) < 0.15
        assert len(p["stream_rms"]) == 2 * probe["n_layers"] + 1
    for r in runs(full, "baseline"):
        assert abs(r["stream_init"]["ratio_last"] - 1) < 0.05
        assert r["stream_final"]["mean_cosine"] > 0.03 and r["stream_final"]["ratio_last"] > 1.1
    assert_states(CODE, "平均余弦的绝对值<0.01", "相差不到15%", "平均余弦>0.03", "大10%以上")


@pytest.mark.claim("ch11-toy-long", paper="AttnRes §5", results="results/attention-residuals-long.json",
                   title="玩具损失：900 步",
                   text="900 步、3 个种子：每种残差的超额损失都比 400 步时低，都在 0.008–0.010 nats 之间；"
                        "三者的验证损失均值相差 < 0.002，种子范围两两重叠：读法不变")
def test_toy_long(full):
    long = committed(LONG, "long")
    assert long["config"]["steps"] == 900 and long["config"]["seeds"] == full["config"]["seeds"]
    means = {v: summary(long, v)["val_loss_mean"] for v in exp.VARIANTS}
    assert max(means.values()) - min(means.values()) < 0.002
    for v in exp.VARIANTS:
        s = summary(long, v)
        assert s["excess_mean"] < summary(full, v)["excess_mean"] and 0.008 < s["excess_mean"] < 0.010
        for w in exp.VARIANTS:
            t = summary(long, w)
            assert s["val_loss_min"] <= t["val_loss_max"] and t["val_loss_min"] <= s["val_loss_max"]
    assert_states(CODE, "都降到0.008–0.010nats之间", "均值相差不到0.002", "两两重叠")


def test_entropy_floor_is_the_true_cross_entropy():
    table = exp.transition_table()
    assert torch.allclose(table.sum(-1), torch.ones(exp.VOCAB, exp.VOCAB, dtype=torch.float64))
    assert ((table > 0).sum(-1) == exp.SUCCESSORS).all()
    x = exp.sample(table, 8, 16, torch.Generator().manual_seed(0))
    assert (table[x[:, :-2], x[:, 1:-1], x[:, 2:]] > 0).all()               # 每一步都是允许的后继
    logits = torch.log(table[x[:, :-2], x[:, 1:-1]]).float()                 # 真实分布当作模型
    padded = torch.cat([torch.zeros(8, 1, exp.VOCAB), logits, torch.zeros(8, 1, exp.VOCAB)], dim=1)
    assert abs(exp.loss_fn(padded, x).item() - exp.entropy_floor(table, x)) < 1e-5


@pytest.mark.slow  # trains three tiny models
def test_tiny_smoke_run(tmp_path):
    out = tmp_path / "ar.json"
    assert exp.main(["--preset", "tiny", "--out", str(out)]) == 0
    data = load_results(out)
    assert data["preset"] == "tiny" and len(data["runs"]) == 3


def test_renderer_writes_every_file(tmp_path, full):
    data = [{**full, "_file": "results/attention-residuals.json"}]
    for render in ch11_attnres.RENDERERS:
        render(data, tmp_path)
    table = (tmp_path / "attention-residuals.md").read_text(encoding="utf-8")
    base = summary(full, "baseline")
    assert f"| 普通残差 | {base['params']:,} | {base['val_loss_mean']:.4f}（" in table
    assert "400 步" in table
    assert (tmp_path / "attention-residuals-alpha.svg").stat().st_size > 1000
    assert "尚无测量结果" in (tmp_path / "attention-residuals-long.md").read_text(encoding="utf-8")
    ch11_attnres.render_table([], tmp_path)
    assert "尚无测量结果" in (tmp_path / "attention-residuals.md").read_text(encoding="utf-8")
