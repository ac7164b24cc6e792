"""The additive-vs-dot experiment: the committed results file (thresholds stated on the page, and each
comparison the pages make read with snippets.stats on the seeds, paired), a tiny smoke run into tmp_path,
and the renderer.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sitebuild.generate.render import ch03_additive
from snippets.experiments import additive_vs_dot
from snippets.results import ResultsError, load_results, write_results
from snippets.stats import compare_seeds, describe
from tests.support.pages import assert_states, chapter
from tests.support.verdicts import assert_reading

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "results" / "additive-vs-dot.json"
LONG = ROOT / "results" / additive_vs_dot.LONG_OUT
CODE = chapter("03") + "code.md"
QUESTIONS = chapter("03") + "questions.md"
DERIVATION = chapter("03") + "derivation.md"


@pytest.fixture(scope="module")
def committed() -> dict:
    data = load_results(RESULTS)  # validates against results/schema/additive-vs-dot.schema.json
    assert data["kind"] == additive_vs_dot.KIND and data["preset"] == "full"
    return data


@pytest.fixture(scope="module")
def long_run() -> dict:
    data = load_results(LONG)  # the same schema, preset "long": full's settings with 8 seeds
    assert data["kind"] == additive_vs_dot.KIND and data["preset"] == "long"
    assert data["config"] == {**additive_vs_dot.PRESETS["long"], "mechanisms": list(additive_vs_dot.MECHANISMS),
                              "optimizer": "Adam", "threads": 1}
    assert not data["provenance"]["git"]["dirty"]
    return data


def summary(data: dict) -> dict[tuple[str, int], dict]:
    return {(s["mechanism"], s["d_k"]): s for s in data["summary"]}


def final_accuracy(run: dict) -> float:
    return run["final"]["accuracy"]


def early_accuracy(run: dict, data: dict) -> float:
    return next(p["accuracy"] for p in run["curve"] if p["step"] == data["config"]["early_step"])


def compare(data: dict, a: str, b: str, d_k: int, metric=final_accuracy):
    """b − a on the same seeds; accuracy on eval_size samples, so one sample is the resolution."""
    seeds = data["config"]["seeds"]
    runs = {(r["mechanism"], r["d_k"], r["seed"]): r for r in data["runs"]}
    value = (lambda r: metric(r)) if metric is final_accuracy else (lambda r: metric(r, data))
    return compare_seeds([value(runs[(a, d_k, s)]) for s in seeds], [value(runs[(b, d_k, s)]) for s in seeds],
                         seeds, resolution=1 / data["config"]["eval_size"])


def points(c, digits=1) -> str:
    return describe(c, " 个点", digits=digits, scale=100)


def test_committed_file_covers_every_mechanism_dk_and_seed(committed):
    cfg = committed["config"]
    assert cfg["d_k_values"] == [4, 16, 64, 256] and len(cfg["seeds"]) >= 3
    keys = {(r["mechanism"], r["d_k"], r["seed"]) for r in committed["runs"]}
    assert keys == {(m, d, s) for m in cfg["mechanisms"] for d in cfg["d_k_values"] for s in cfg["seeds"]}
    for s in committed["summary"]:  # the summary is the mean of the runs it names
        acc = [r["final"]["accuracy"] for r in committed["runs"]
               if (r["mechanism"], r["d_k"]) == (s["mechanism"], s["d_k"])]
        assert abs(s["accuracy_mean"] - sum(acc) / len(acc)) < 1e-12


@pytest.mark.claim("ch03-init-saturation-measured", paper="§3.2.1", results="results/additive-vs-dot.json",
                   text="实验里初始化时，不缩放点积的 logits 标准差随 d_k 增长（d_k = 256 时 > 10），初始最大注意力权重 > 0.8；缩放后标准差在 0.8–1.2 之间，最大权重 < 0.4")
def test_init_logit_std_grows_without_scaling(committed):
    s = summary(committed)
    stds = [s[("dot-unscaled", d)]["init_logit_std_mean"] for d in (4, 16, 64, 256)]
    assert stds == sorted(stds) and stds[-1] > 10
    assert s[("dot-unscaled", 256)]["init_max_weight_mean"] > 0.8
    for d in (4, 16, 64, 256):
        assert 0.8 < s[("dot-scaled", d)]["init_logit_std_mean"] < 1.2
        assert s[("dot-scaled", d)]["init_max_weight_mean"] < 0.4


@pytest.mark.claim("ch03-additive-vs-dot-result", paper="§3.2.1", results="results/additive-vs-dot.json",
                   text="d_k ≥ 64 时训练结束的准确率：加性注意力每个种子都 ≥ 99.9%；3 个种子逐种子配对，不缩放点积与加性的差只在 d_k = 256 上是「一致」（不缩放更低，约 0.2 个百分点），d_k = 64 上「不足以下结论」；缩放点积与不缩放在这两个 d_k 上都「不足以下结论」")
def test_committed_result_additive_vs_dot(committed):
    s = summary(committed)
    for d in (64, 256):
        assert s[("additive", d)]["accuracy_min"] >= 0.999
    raw64, raw256 = (compare(committed, "additive", "dot-unscaled", d) for d in (64, 256))
    assert (raw256.n, raw256.verdict, raw256.sign) == (3, "一致", -1) and abs(raw256.mean_difference) < 0.003
    assert raw64.verdict == "不足以下结论"
    scaled = [compare(committed, "dot-unscaled", "dot-scaled", d) for d in (64, 256)]
    assert all((c.verdict, c.sign) == ("不足以下结论", 1) for c in scaled)
    assert_reading(CODE, "3 个种子上不缩放点积的准确率都更低", raw256, stated=points(raw256, 2))
    assert_reading(CODE, "3 个种子分不出两者的高低", raw64, stated=points(raw64, 2))
    for c in scaled:
        assert_reading(CODE, "但 3 个种子在两个 $d_k$ 上都分不出", c, stated=points(c, 2))
    assert all(compare(committed, "additive", "dot-scaled", d).verdict == "不足以下结论" for d in (64, 256))
    # the conclusion and the questions read the 8-seed file (test_eight_seeds_settle_what_three_left_open)
    samples = {round(abs(d) * committed["config"]["eval_size"]) for c in (raw64, raw256) for d in c.differences}
    assert (min(samples), max(samples)) == (0, 6)
    assert_states(CODE, "2048个测试样本里的0到6个")


@pytest.mark.claim("ch03-small-dk-not-similar", paper="§3.2.1", results="results/additive-vs-dot.json",
                   text="「d_k 小时两者表现相近」在查表任务上 3 个种子定不下：d_k = 4 时加性注意力与两种点积的最终准确率之差「不足以下结论」（三个种子的差都是正的，但一个种子只差 11 个点）；两种点积每个种子都在 60%–63%，与内积检索的估计相符")
def test_small_dk_comparison_is_not_settled(committed):
    runs = {(r["mechanism"], r["d_k"], r["seed"]): r for r in committed["runs"]}
    seeds = committed["config"]["seeds"]
    for mech in ("dot-unscaled", "dot-scaled"):
        assert all(0.60 <= runs[(mech, 4, seed)]["final"]["accuracy"] < 0.63 for seed in seeds)
    additive = [runs[("additive", 4, seed)]["final"]["accuracy"] for seed in seeds]
    assert_states(CODE, "、".join(f"{100 * a:.1f}%" for a in additive))
    scaled, unscaled = (compare(committed, mech, "additive", 4) for mech in ("dot-scaled", "dot-unscaled"))
    for c in (scaled, unscaled):
        assert (c.n, c.verdict, c.n_agree) == (3, "不足以下结论", 3) and c.interval[0] < 0 < c.interval[1]
        assert_reading(CODE, "3 个种子分不出加性与缩放点积的高低", c, stated=points(c))
    assert min(scaled.differences) < 0.12 < 0.33 < max(scaled.differences)


@pytest.mark.claim("ch03-early-training", paper="§3.2.1", results="results/additive-vs-dot.json",
                   text="训练早期：第 200 步，d_k = 4 和 16 时 3 个种子上两种点积的准确率都比带偏置的加性注意力更高（「一致」）；d_k = 64 时 3 个种子分不出（「不足以下结论」：缩放点积都 ≥ 99.9%，加性的三个种子是 96.0%、92.1%、66.3%）")
def test_dot_product_learns_faster_early(committed):
    for mech in ("dot-unscaled", "dot-scaled"):
        for d in (4, 16):
            c = compare(committed, "additive", mech, d, early_accuracy)
            assert (c.n, c.verdict, c.sign) == (3, "一致", 1)
            if mech == "dot-scaled":
                assert_reading(CODE, "3 个种子上缩放点积的准确率都更高", c, stated=points(c))
        c64 = compare(committed, "additive", mech, 64, early_accuracy)
        assert c64.verdict == "不足以下结论"
        assert min(c64.a) < 0.70 < 0.90 < sorted(c64.a)[1] and min(c64.b) >= (0.999 if mech == "dot-scaled" else 0.99)
    c4, c16, c64 = (compare(committed, "additive", "dot-scaled", d, early_accuracy) for d in (4, 16, 64))
    assert_reading(CODE, "$d_k=64$ 时，3 个种子分不出（缩放点积", c64, stated=points(c64))
    assert_states(CODE, "、".join(f"{100 * a:.1f}%" for a in c64.a))


@pytest.mark.claim("ch03-additive-nobias", paper="§3.2.1", results="results/additive-vs-dot.json",
                   text="隐藏层不带偏置（Bahdanau 原式）的加性注意力在每个 d_k 上的最终准确率都低于 60%；带偏置时 d_k ≥ 16 就 ≥ 95%；四个 d_k 上 3 个种子都是无偏置的更低（「一致」）")
def test_additive_without_bias_cannot_match(committed):
    s = summary(committed)
    for d in (4, 16, 64, 256):
        assert s[("additive-nobias", d)]["accuracy_mean"] < 0.60
    for d in (16, 64, 256):
        assert s[("additive", d)]["accuracy_mean"] >= 0.95
    for d in (4, 16, 64, 256):
        c = compare(committed, "additive", "additive-nobias", d)
        assert (c.n, c.verdict, c.sign) == (3, "一致", -1)
        assert_reading(CODE, "3 个种子都是无偏置的更低", c, stated=points(c))


@pytest.mark.claim("ch03-after-training-std", paper="§3.2.1", results="results/additive-vs-dot.json",
                   text="「除以 √d_k 能让方差在训练后仍保持 1」不成立：训练后缩放点积的 logits 标准差在 d_k ≥ 16 时都大于 2，3 个种子上都比初始化时更大（「一致」），每个种子都是初始化时的 1.5 倍以上")
def test_scaled_logit_std_is_not_one_after_training(committed):
    s = summary(committed)
    for d in (16, 64, 256):
        assert s[("dot-scaled", d)]["final_logit_std_mean"] > 2.0
        assert s[("dot-scaled", d)]["final_logit_std_mean"] > 1.5 * s[("dot-scaled", d)]["init_logit_std_mean"]
        c = compare_seeds([r["init"]["logit_std"] for r in scaled_runs(committed, d)],
                          [r["final"]["logit_std"] for r in scaled_runs(committed, d)], committed["config"]["seeds"])
        assert (c.verdict, c.sign) == ("一致", 1)
        assert all(f > 1.5 * i for i, f in zip(c.a, c.b))
        if d == 64:
            for page in (DERIVATION, QUESTIONS):
                assert_reading(page, "3 个种子上都比初始化时更大", c, stated=describe(c, "", digits=2))


@pytest.mark.claim("ch03-additive-vs-dot-long", paper="§3.2.1", results="results/additive-vs-dot-long.json",
                   title="加性与点积：8 个种子",
                   text="同一设置、种子 0–7（种子 0–2 就是 full 的文件里的运行，逐位相同）："
                        "训练结束时不缩放点积比带偏置的加性注意力低，d_k = 256 上「一致」（每个种子差 3–8 个测试样本），"
                        "d_k = 64 上「多数」；缩放点积比不缩放平均更高（两个 d_k 上都是「多数」），与加性「不足以下结论」；"
                        "d_k = 4 时 8 个种子上加性都比两种点积高（「一致」）；第 200 步 d_k ≤ 64 上两种点积都比加性高（「一致」）")
def test_eight_seeds_settle_what_three_left_open(long_run, committed):
    eval_size = committed["config"]["eval_size"]
    old = {(r["mechanism"], r["d_k"], r["seed"]): r for r in committed["runs"]}
    for r in long_run["runs"]:                  # seeds 0–2: the same runs as full's, bit for bit
        if r["seed"] in committed["config"]["seeds"]:
            assert r == old[(r["mechanism"], r["d_k"], r["seed"])]
    assert_states(CODE, "种子0、1、2就是上表的运行，逐位相同")
    raw256, raw64 = (compare(long_run, "additive", "dot-unscaled", d) for d in (256, 64))
    assert (raw256.n, raw256.verdict, raw256.sign) == (8, "一致", -1)
    assert {round(-d * eval_size) for d in raw256.differences} <= set(range(3, 9))
    assert (raw64.verdict, raw64.sign, raw64.n_agree) == ("多数", -1, 4)
    sc64, sc256 = (compare(long_run, "dot-unscaled", "dot-scaled", d) for d in (64, 256))
    assert (sc64.verdict, sc64.sign, sc64.n_agree, sc256.verdict, sc256.sign, sc256.n_agree) == ("多数", 1, 3, "多数", 1, 7)
    as64, as256 = (compare(long_run, "additive", "dot-scaled", d) for d in (64, 256))
    assert as64.verdict == as256.verdict == "不足以下结论"
    assert [round(abs(c.mean_difference) * eval_size) for c in (as64, as256)] == [0, 1]   # 测量的分辨率：一个样本
    assert_states(CODE, "平均差在2048个测试样本里不到一个到约一个，已经是测量的分辨率（一个测试样本）")
    small = [compare(long_run, mech, "additive", 4) for mech in ("dot-scaled", "dot-unscaled")]
    early = [compare(long_run, "additive", mech, d, early_accuracy) for mech in ("dot-scaled", "dot-unscaled")
             for d in (4, 16, 64)]
    assert all((c.n, c.verdict, c.sign) == (8, "一致", 1) for c in small + early)
    runs = {(r["mechanism"], r["d_k"], r["seed"]): r for r in long_run["runs"]}
    seeds = long_run["config"]["seeds"]
    for mech in ("dot-unscaled", "dot-scaled"):
        assert all(0.60 <= runs[(mech, 4, s)]["final"]["accuracy"] < 0.64 for s in seeds)
    assert_states(CODE, "两种点积都在60%到64%之间")
    additive4 = sorted(runs[("additive", 4, s)]["final"]["accuracy"] for s in seeds)
    additive64 = sorted(early_accuracy(runs[("additive", 64, s)], long_run) for s in seeds)
    dots64 = min(early_accuracy(runs[(m, 64, s)], long_run) for m in ("dot-scaled", "dot-unscaled") for s in seeds)
    assert_states(CODE, f"加性的8个种子从{100 * additive4[0]:.1f}%到{100 * additive4[-1]:.1f}%",
                  f"加性的8个种子从{100 * additive64[0]:.1f}%到{100 * additive64[-1]:.1f}%，两种点积都≥{100 * dots64:.1f}%",
                  "每个种子差3到8个测试样本")
    # 「加到 8 个种子」一段
    assert_reading(CODE, "8 个种子上不缩放点积的准确率都比带偏置的加性注意力更低", raw256, stated=points(raw256, 2))
    assert_reading(CODE, "不缩放点积平均更低（不缩放点积 − 加性", raw64, stated=points(raw64, 2))
    assert_states(CODE, "8个种子中4个更低，另外4个的差在一个测试样本以内")
    for c in (sc64, sc256):
        assert_reading(CODE, "缩放点积平均更高，8 个种子中分别有", c, stated=points(c, 2))
    for c in (as64, as256):
        assert_reading(CODE, "训练结束时 8 个种子仍分不出两者的高低", c, stated=points(c, 2))
    for c in small:
        assert_reading(CODE, "8 个种子上加性注意力都比两种点积更高", c, stated=points(c))
    for c in early[2], early[5]:
        assert_reading(CODE, "8 个种子上两种点积都比加性注意力更高", c, stated=points(c))
    # 结论
    for c in (raw256, raw64):
        assert_reading(CODE, "训练结束时加性注意力与不缩放点积的差在 $d_k=256$ 上是「一致」", c)
    for c in (sc64, sc256):
        assert_reading(CODE, "缩放点积平均比不缩放的更高（8 个种子", c)
    assert_reading(CODE, "缩放点积与加性注意力，8 个种子分不出高低", as256)
    assert_reading(CODE, "$d_k=4$ 时加性注意力在 8 个种子上都比点积更高", small[0])
    for c in early:
        assert_reading(CODE, "上点积领先在 8 个种子上都是「一致」", c)
    # 问答
    assert_reading(QUESTIONS, "$d_k=256$ 上 8 个种子的不缩放点积都更低", raw256, stated=points(raw256, 2))
    assert_reading(QUESTIONS, "$d_k=64$ 上平均更低，8 个种子中 4 个更低、其余", raw64, stated=points(raw64, 2))
    assert_reading(QUESTIONS, "$d_k=4$ 时 8 个种子上加性都比点积更高", small[0], stated=points(small[0]))
    assert_reading(QUESTIONS, "不缩放的点积在 $d_k=256$ 上都更低，差不到 0.3 个百分点", raw256, stated=points(raw256, 2))
    assert_reading(QUESTIONS, "在 $d_k=64$ 上平均更低，8 个种子中 4 个更低（", raw64, stated=points(raw64, 2))
    assert_reading(QUESTIONS, "上 8 个种子的不缩放点积都略低于带偏置的加性注意力", raw256, stated=points(raw256, 2))
    assert_reading(QUESTIONS, "上平均略低，8 个种子中 4 个更低", raw64, stated=points(raw64, 2))
    assert_reading(QUESTIONS, "缩放点积平均比不缩放的更高，但两个", sc256, stated=points(sc256, 2))
    assert_reading(QUESTIONS, "缩放点积与加性注意力 8 个种子分不出高低", as256, stated=points(as256, 2))
    assert_reading(QUESTIONS, "$d_k=4$ 时 8 个种子上加性注意力都比点积更高", small[0], stated=points(small[0]))
    for c in early:
        assert_reading(QUESTIONS, "上 8 个种子的点积都比加性更高", c)
    assert_states(QUESTIONS, f"缩放点积−加性：{points(early[2])}")


def scaled_runs(data: dict, d_k: int) -> list[dict]:
    return sorted((r for r in data["runs"] if (r["mechanism"], r["d_k"]) == ("dot-scaled", d_k)), key=lambda r: r["seed"])


@pytest.mark.slow
def test_tiny_smoke_run_writes_a_valid_file_and_renders(tmp_path):
    out = tmp_path / "avd.json"
    assert additive_vs_dot.main(["--preset", "tiny", "--out", str(out)]) == 0
    data = load_results(out)
    assert data["preset"] == "tiny" and len(data["runs"]) == 2 * len(additive_vs_dot.MECHANISMS)
    assert data["provenance"]["command"].startswith("python -m snippets.experiments.additive_vs_dot")
    full = dict(data, preset="quick")  # the renderer skips tiny files: present it as quick
    ch03_additive.render_figure([full], tmp_path)
    ch03_additive.render_table([full], tmp_path)
    assert (tmp_path / "additive-vs-dot.svg").read_text().startswith("<?xml")
    table = (tmp_path / "additive-vs-dot.md").read_text()
    assert "点积，除以 √d_k" in table and "数据文件" in table


def test_invalid_results_are_not_written(tmp_path):
    data = json.loads(RESULTS.read_text(encoding="utf-8"))
    data["summary"][0]["accuracy_mean"] = 1.5
    with pytest.raises(ResultsError, match="accuracy_mean"):
        write_results(data, tmp_path / "bad.json")
    assert not (tmp_path / "bad.json").exists()


def test_renderer_writes_placeholders_without_results(tmp_path):
    ch03_additive.render_figure([], tmp_path)
    ch03_additive.render_table([], tmp_path)
    assert "尚无测量结果" in (tmp_path / "additive-vs-dot.md").read_text(encoding="utf-8")
    assert "尚无测量结果" in (tmp_path / "additive-vs-dot.svg").read_text(encoding="utf-8")
