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
from snippets.stats import compare_seeds, describe
from tests.support.committed import committed_results
from tests.support.pages import assert_states, chapter
from tests.support.verdicts import assert_reading

CH11 = chapter("11")
CODE = CH11 + "code.md"
QUESTIONS = CH11 + "questions.md"
INTERVIEW = CH11 + "interview.md"
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


def paired(data: dict, variant_a: str, variant_b: str, value) -> "SeedComparison":  # noqa: F821
    """value(run of variant_b) − value(run of variant_a), paired by seed."""
    a, b = runs(data, variant_a), runs(data, variant_b)
    assert [r["seed"] for r in a] == [r["seed"] for r in b] == data["config"]["seeds"]
    return compare_seeds([value(r) for r in a], [value(r) for r in b], seeds=data["config"]["seeds"])


def within(data: dict, variant: str, before, after):
    """after(run) − before(run) for one variant's runs, paired by seed."""
    mine = runs(data, variant)
    return compare_seeds([before(r) for r in mine], [after(r) for r in mine], seeds=[r["seed"] for r in mine])


def val_loss(r: dict) -> float:
    return r["val_loss"]


def nats(c) -> str:
    return describe(c, " nats", digits=4)


def plain(c, digits=2) -> str:
    return describe(c, "", digits=digits)


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
                   text="400 步、5 个种子、8 个子层：三种残差的超额损失都 < 0.05 nats，均值相差 < 0.01；"
                        "Full、Block AttnRes 与普通残差逐种子配对都「不足以下结论」；任务接近饱和，"
                        "而普通残差送往输出层的输入是第一个的 2.1–3.0 倍（稀释有发生的空间）；AttnRes 多出的参数约占 1%")
def test_toy_loss(full):
    assert full["config"]["steps"] == 400 and len(full["config"]["seeds"]) == 5
    means = {v: summary(full, v)["val_loss_mean"] for v in exp.VARIANTS}
    assert all(summary(full, v)["excess_mean"] < 0.05 for v in exp.VARIANTS)
    assert max(means.values()) - min(means.values()) < 0.01
    base, fullres = summary(full, "baseline"), summary(full, "full")
    assert base["val_loss_min"] <= fullres["val_loss_max"] and fullres["val_loss_min"] <= base["val_loss_max"]
    assert max(means, key=means.get) == "block"
    assert round(100 * (fullres["params"] - base["params"]) / base["params"]) == 1
    assert_states(CODE, "离熵下界只差约0.03nats", "均值相差不到0.01", "约1%")
    full_vs_base = paired(full, "baseline", "full", val_loss)
    block_vs_base = paired(full, "baseline", "block", val_loss)
    assert (full_vs_base.verdict, block_vs_base.verdict, block_vs_base.n_agree) == ("不足以下结论", "不足以下结论", 4)
    assert_reading(CODE, "看不出 Full AttnRes 与普通残差的验证损失谁高谁低", full_vs_base, stated=nats(full_vs_base))
    assert_reading(CODE, "Block AttnRes 与普通残差也分不出高低（平均差 +0.0029", block_vs_base, stated=nats(block_vs_base))
    # the reason the page gives instead of dilution: saturation; dilution had room to happen
    growth = [r["input_rms"][-1] / r["input_rms"][0] for r in runs(full, "baseline")]
    assert (round(min(growth), 1), round(max(growth), 1)) == (2.1, 3.0)
    assert_states(CODE, "第一个子层输入的2.1–3.0倍", "24–34个子层")
    assert_states(QUESTIONS, "这个玩具任务接近饱和")
    assert_states(INTERVIEW, "任务接近饱和", "至少24个子层")


@pytest.mark.claim("ch11-toy-magnitude", paper="AttnRes 图 5", results="results/attention-residuals.json",
                   title="玩具模型：输入的大小说明不了稀释，输出的大小分不出",
                   text="400 步、5 个种子：普通残差送往输出层的输入的均方根在 5 个种子上都至少是第一个子层输入的 2 倍（「一致」）；"
                        "Full 与 Block AttnRes 嵌入之后每个子层的输入都比嵌入本身的均方根小（「一致」），Full 是凸组合加上"
                        "各子层输出都比嵌入小的结果（Block 有 1 个种子的最后一个子层输出略大于嵌入）；Full AttnRes 输出最大的子层"
                        "是第 6、8、1、1、3 个；Full 与 Block AttnRes 最后一个子层的输出都比普通残差的小（「一致」）")
def test_toy_magnitude(full):
    for r in runs(full, "baseline"):
        assert r["input_rms"][-1] >= 2 * r["input_rms"][0]
    for v in ("full", "block"):
        for r in runs(full, v):
            assert max(r["input_rms"][1:]) <= r["input_rms"][0]
    assert_states(CODE, "至少是第一个的2倍")
    grows = within(full, "baseline", lambda r: r["input_rms"][0], lambda r: r["input_rms"][-1])
    assert (grows.verdict, grows.sign) == ("一致", 1)
    assert_reading(CODE, "送往输出层的那一个都比第一个更大", grows, stated=plain(grows))
    for variant, fragment in (("full", "都比嵌入本身更小"), ("block", "Block AttnRes 也是这样")):
        bounded = within(full, variant, lambda r: r["input_rms"][0], lambda r: max(r["input_rms"][1:]))
        assert (bounded.verdict, bounded.sign) == ("一致", -1)
        assert_reading(CODE, fragment, bounded, stated=plain(bounded))
    # 输入小于嵌入的经验原因：Full AttnRes 每个子层的输出都比嵌入小（逐词元的凸组合界只管到来源）；
    # Block 的来源是块内输出之和，有一个种子的最后一个子层输出超过嵌入
    for r in runs(full, "full"):
        assert max(r["output_rms"]) < r["input_rms"][0]
    over = [(r["seed"], r["output_rms"].index(max(r["output_rms"])) + 1)
            for r in runs(full, "block") if max(r["output_rms"]) >= r["input_rms"][0]]
    assert over == [(1, 8)]
    assert_states(CODE, "它有1个种子的最后一个子层输出略大于嵌入，输入仍都比嵌入小")
    # 论文图 5(b) 的量：输出的大小
    argmax = [r["output_rms"].index(max(r["output_rms"])) + 1 for r in runs(full, "full")]
    assert argmax == [6, 8, 1, 1, 3]
    assert_states(CODE, "是第6、8、1、1、3个")
    last = lambda r: r["output_rms"][-1]                                            # noqa: E731
    for variant, fragment in (("full", "个种子上，Full AttnRes 最后一个子层的输出都比普通残差的更小"),
                              ("block", "Block AttnRes 的也都更小（")):
        c = paired(full, "baseline", variant, last)
        assert (c.verdict, c.sign) == ("一致", -1)
        assert_reading(CODE, fragment, c, stated=plain(c))
        assert_reading(INTERVIEW, "AttnRes 最后一个子层的输出都比普通残差的更小", c)


@pytest.mark.claim("ch11-toy-grad", paper="AttnRes 图 5", results="results/attention-residuals.json",
                   title="玩具模型：逐层梯度读不出差别",
                   text="400 步、5 个种子、8 个子层：三种残差在每个种子里逐层梯度的最大与最小之比都小于 5；"
                        "第 1 个子层的梯度与各层平均之比，Full AttnRes 与普通残差「不足以下结论」")
def test_toy_gradients(full):
    for r in full["runs"]:
        assert max(r["grad_norm"]) / min(r["grad_norm"]) < 5
    assert_states(CODE, "最大与最小之比都小于5")
    first_share = lambda r: r["grad_norm"][0] / statistics.fmean(r["grad_norm"])  # noqa: E731
    c = paired(full, "baseline", "full", first_share)
    assert c.verdict == "不足以下结论"
    assert_reading(CODE, "看不出普通残差第 1 个子层的梯度相对更大", c, stated=plain(c))


@pytest.mark.claim("ch11-toy-alpha", paper="AttnRes 图 8", results="results/attention-residuals.json",
                   title="玩具模型：嵌入的权重最大，对角线占优没有出现",
                   text="Full AttnRes 第 3–8 个子层之前的 30 个种子-行里，嵌入 28 行最大、直接前驱 0 行最大（9 行超过 1/l）；"
                        "嵌入的权重（6 个子层平均）高于 1/l：400 步（5 个种子）与 900 步（10 个种子）都「一致」；"
                        "直接前驱低于 1/l：400 步与 900 步都「一致」")
def test_toy_alpha(full):
    long = committed(LONG, "long")
    n = 2 * full["config"]["model"]["n_layers"]
    rows = [r["alpha"][l] for r in runs(full, "full") for l in range(2, n)]       # 子层 3 … n 之前，逐种子
    assert len(rows) == 30 and all(abs(sum(row) - 1) < 1e-6 for row in rows)
    assert sum(row[0] == max(row) for row in rows) == 28
    assert sum(row[-1] == max(row) for row in rows) == 0                          # 直接前驱
    assert sum(row[-1] > 1 / len(row) for row in rows) == 9
    assert_states(CODE, "共30行（5个种子×6个子层）", "在28行里是所有来源中权重最大的", "一次也不是最大的，只有9行超过")

    def over_uniform(data, source):
        uniform = lambda r: statistics.fmean(1 / (l + 1) for l in range(2, n))            # noqa: E731
        weight = lambda r: statistics.fmean(r["alpha"][l][source(l)] for l in range(2, n))  # noqa: E731
        return within(data, "full", uniform, weight)

    emb_400, emb_900 = over_uniform(full, lambda l: 0), over_uniform(long, lambda l: 0)
    pred_400, pred_900 = over_uniform(full, lambda l: l), over_uniform(long, lambda l: l)
    assert (emb_400.verdict, emb_400.sign, emb_900.verdict, emb_900.sign) == ("一致", 1, "一致", 1)
    assert (pred_400.verdict, pred_400.sign, pred_900.verdict, pred_900.sign) == ("一致", -1, "一致", -1)
    three = lambda c: plain(c, digits=3)                                               # noqa: E731
    assert_reading(CODE, "个种子上嵌入的权重都高于均匀的", emb_400, stated=three(emb_400))
    assert_reading(CODE, "步时嵌入的权重更高（", emb_900, stated=three(emb_900))
    assert_reading(CODE, "步时 5 个种子上它的权重都低于", pred_400, stated=three(pred_400))
    assert_reading(CODE, "步时它的权重更低（", pred_900, stated=three(pred_900))
    assert_states(INTERVIEW, "论文图8的对角线占优没有出现")


@pytest.mark.claim("ch11-toy-stream", paper="AttnRes §7", results="results/attention-residuals.json",
                   title="读者模型上 ‖h_L‖：初始化按 √L；8 个子层分不出 √L 与 L",
                   text="初始化时 32 个子层、3 个种子：各输出的平均余弦绝对值 < 0.01，‖h_L‖ 与不相关的预测相差 < 15%；"
                        "训练 400 步后（8 个子层、5 个种子）平均余弦更高（「一致」，0.04–0.09），‖h_L‖ 与预测之比 1.12–1.34，"
                        "比初始化时更大（400 步 5 个种子、900 步 10 个种子都「一致」）；超出集中在最后一个子层，它的输出也最大（「一致」）")
def test_toy_stream(full):
    probe = full["depth_probe"]
    assert probe["n_layers"] == 16 and len(probe["runs"]) == 3
    for p in probe["runs"]:
        assert abs(p["mean_cosine"]) < 0.01 and abs(p["ratio_last"] - 1) < 0.15
        assert len(p["stream_rms"]) == 2 * probe["n_layers"] + 1
    for r in runs(full, "baseline"):
        assert abs(r["stream_init"]["ratio_last"] - 1) < 0.1
        assert r["stream_final"]["mean_cosine"] > 0.03 and r["stream_final"]["ratio_last"] > 1.1
    assert_states(CODE, "平均余弦的绝对值<0.01", "相差不到15%")
    base = runs(full, "baseline")
    final = lambda r: r["stream_final"]["ratio_last"]                                                 # noqa: E731
    before_last = lambda r: r["stream_final"]["stream_rms"][-2] / r["stream_final"]["uncorrelated_rms"][-2]  # noqa: E731
    cosines = [r["stream_final"]["mean_cosine"] for r in base]
    assert (round(min(cosines), 2), round(max(cosines), 2)) == (0.04, 0.09)
    assert [round(final(r), 2) for r in base] == [1.12, 1.34, 1.18, 1.22, 1.25]
    assert [round(before_last(r), 2) for r in base] == [0.94, 1.15, 1.01, 1.04, 1.11]
    assert_states(CODE, "在0.04–0.09之间", "1.12、1.34、1.18、1.22、1.25", "0.94、1.15、1.01、1.04、1.11", "11–24个子层以上")
    assert_states(QUESTIONS, "是不相关预测的1.12–1.34倍")
    assert (round(1 / max(cosines)), round(1 / min(cosines))) == (11, 24)
    cos = within(full, "baseline", lambda r: r["stream_init"]["mean_cosine"], lambda r: r["stream_final"]["mean_cosine"])
    ratio_400 = within(full, "baseline", lambda r: r["stream_init"]["ratio_last"], final)
    ratio_900 = within(committed(LONG, "long"), "baseline", lambda r: r["stream_init"]["ratio_last"], final)
    last = within(full, "baseline", before_last, final)
    biggest = within(full, "baseline", lambda r: max(r["output_rms"][:-1]), lambda r: r["output_rms"][-1])
    assert (cos.verdict, ratio_400.verdict, ratio_900.verdict, last.verdict, biggest.verdict) == (
        "一致", "一致", "一致", "一致", "一致")
    assert_reading(CODE, "各输出两两的平均余弦比初始化时更高", cos, stated=plain(cos, digits=3))
    assert (ratio_400.sign, ratio_900.sign) == (1, 1)
    assert_reading(CODE, "个种子上这个比值都更大", ratio_400, stated=plain(ratio_400))
    assert_reading(CODE, "步时它比初始化时更大", ratio_900, stated=plain(ratio_900))
    assert_reading(CODE, "加上最后一个子层的输出后更大", last, stated=plain(last))
    assert_reading(CODE, "个种子上都比其余 7 个子层的输出更大", biggest, stated=plain(biggest))
    assert_reading(QUESTIONS, "各输出两两的平均余弦更高", cos, stated=plain(cos, digits=3))


@pytest.mark.claim("ch11-toy-long", paper="AttnRes §5", results="results/attention-residuals-long.json",
                   title="玩具损失：900 步",
                   text="900 步、10 个种子：每种残差的超额损失都比 400 步时低，都在 0.006–0.009 nats 之间；"
                        "三者的验证损失均值相差 < 0.002，种子范围两两重叠；Full AttnRes 与普通残差逐种子配对「不足以下结论」，"
                        "Block AttnRes 平均更高约 0.001 nats（「多数」，2 个种子反向）")
def test_toy_long(full):
    long = committed(LONG, "long")
    assert long["config"]["steps"] == 900 and long["config"]["seeds"][:5] == full["config"]["seeds"] and len(long["config"]["seeds"]) == 10
    means = {v: summary(long, v)["val_loss_mean"] for v in exp.VARIANTS}
    assert max(means.values()) - min(means.values()) < 0.002
    for v in exp.VARIANTS:
        s = summary(long, v)
        assert s["excess_mean"] < summary(full, v)["excess_mean"] and 0.006 < s["excess_mean"] < 0.009
        for w in exp.VARIANTS:
            t = summary(long, w)
            assert s["val_loss_min"] <= t["val_loss_max"] and t["val_loss_min"] <= s["val_loss_max"]
    assert_states(CODE, "都降到0.006–0.009nats之间", "均值相差不到0.002", "两两重叠")
    full_vs_base, block_vs_base = paired(long, "baseline", "full", val_loss), paired(long, "baseline", "block", val_loss)
    assert full_vs_base.verdict == "不足以下结论"
    assert (block_vs_base.verdict, block_vs_base.sign, round(block_vs_base.mean_difference, 3)) == ("多数", 1, 0.001)
    assert sum(d < 0 for d in block_vs_base.differences) == 2
    assert_reading(CODE, "看不出 Full AttnRes 与普通残差的高低", full_vs_base, stated=nats(full_vs_base))
    assert_reading(CODE, "Block AttnRes 的验证损失平均比普通残差更高", block_vs_base, stated=nats(block_vs_base))
    assert_reading(INTERVIEW, "Block AttnRes 的验证损失平均反而比普通残差更高", block_vs_base)
    assert_reading(QUESTIONS, "Block AttnRes 的损失平均反而更高", block_vs_base)
    assert_states(CODE, "有2个种子反向[✔900步]", "多出的约0.001nats")
    assert_states(INTERVIEW, "只高约0.001nats（「多数」，2个种子反向）")


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
    depth = (tmp_path / "attention-residuals.svg").read_text(encoding="utf-8")
    for title in ("每个子层的输入有多大", "每个子层写出的输出有多大（论文图 5(b) 看的是输出）", "每个子层的梯度"):
        assert title in depth, title

    assert "尚无测量结果" in (tmp_path / "attention-residuals-long.md").read_text(encoding="utf-8")
    ch11_attnres.render_table([], tmp_path)
    assert "尚无测量结果" in (tmp_path / "attention-residuals.md").read_text(encoding="utf-8")
