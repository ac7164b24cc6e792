"""Chapter 06's experiments: the committed results files against the thresholds stated on the page,
each comparison of arms the pages make read with snippets.stats on the seeds (paired), tiny smoke runs
into tmp_path, and the renderers."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from sitebuild.generate.render import ch06_tokens
from snippets.bpe import bpe_encode, bpe_train
from snippets.experiments import embedding_scale, vocab_sweep
from snippets.results import load_results
from snippets.stats import compare_seeds, describe
from tests.support.pages import assert_states, chapter
from tests.support.verdicts import assert_reading

CH06 = chapter("06")

ROOT = Path(__file__).resolve().parents[2]
SCALE = ROOT / "results" / embedding_scale.LONG_OUT
SWEEP = ROOT / "results" / "vocab-sweep.json"


@pytest.fixture(scope="module")
def scale() -> dict:
    data = load_results(SCALE)  # validates against results/schema/embedding-scale.schema.json
    assert data["kind"] == embedding_scale.KIND and data["preset"] == "long"
    return data


@pytest.fixture(scope="module")
def sweep() -> dict:
    data = load_results(SWEEP)
    assert data["kind"] == vocab_sweep.KIND and data["preset"] == "full"
    return data


def by_init(data: dict) -> dict[str, dict]:
    return {s["init"]: s for s in data["summary"]}


def compare_arms(data: dict, a: str, b: str, metric: str = "accuracy"):
    """Arm b − arm a, paired by seed (the same training data); token accuracy resolves one token."""
    seeds = data["config"]["seeds"]
    runs = {(r["init"], r["seed"]): r for r in data["runs"]}
    value = (lambda r: r["accuracy"]) if metric == "accuracy" else (lambda r: r["init_stats"][metric])
    tokens = data["config"]["eval_sequences"] * data["task"]["seq_len"]
    return compare_seeds([value(runs[(a, s)]) for s in seeds], [value(runs[(b, s)]) for s in seeds], seeds,
                         resolution=1 / tokens if metric == "accuracy" else 0.0)


def points(c) -> str:
    return describe(c, " 个点", scale=100)


def test_scale_file_covers_every_init_and_seed(scale):
    cfg = scale["config"]
    assert cfg["inits"] == list(embedding_scale.INITS) and len(cfg["seeds"]) >= 6
    assert {(r["init"], r["seed"]) for r in scale["runs"]} == {(i, s) for i in cfg["inits"] for s in cfg["seeds"]}
    for init, arm in scale["arms"].items():
        assert tuple(arm.values()) == embedding_scale.INITS[init]
    for s in scale["summary"]:
        mine = [r for r in scale["runs"] if r["init"] == s["init"]]
        acc = [r["accuracy"] for r in mine]
        assert s["accuracy_min"] == min(acc) and abs(s["accuracy_mean"] - sum(acc) / len(acc)) < 1e-12
        assert s["init_argmax_is_input_min"] == min(r["init_stats"]["argmax_is_input"] for r in mine)


TIED, UNTIED = ("t2t", "unit", "unit-noscale"), ("unit-untied", "t2t-untied")


@pytest.mark.claim("ch06-init-scale-measured", paper="§3.4", results="results/embedding-scale-long.json",
                   text="实验初始化时：输入 N(0, 1) 乘 √d 的嵌入范数是位置编码的 10 倍以上，其余在 1.2–1.7 倍；三种共享配置每个种子、每个位置的 argmax 都是当前输入词元，这一列的 logit 均值 > 5 倍其余 logits 的标准差，两种不共享配置 argmax = 当前输入词元平均 < 10%；其余 logits 的标准差：N(0, 1/d) 输出约 1，共享 N(0, 1) 约 √d；共享 N(0, 1/d) 的初始损失 > 2 ln 12，6 个种子上都比不共享的对照更高（「一致」），不共享的 < 1.25 ln 12")
def test_init_scale_measured(scale):
    s = by_init(scale)
    d, vocab = scale["task"]["d_model"], scale["task"]["vocab_size"]
    for init in ("unit", "unit-untied"):
        assert s[init]["emb_pe_ratio_mean"] > 10 and abs(s[init]["emb_pe_ratio_mean"] / math.sqrt(2 * d) - 1) < 0.1
    for init in ("t2t", "unit-noscale", "t2t-untied"):
        assert 1.2 < s[init]["emb_pe_ratio_mean"] < 1.7
    for init in TIED:
        assert s[init]["init_argmax_is_input_min"] == 1.0
        assert s[init]["init_self_logit_mean_mean"] > 5 * s[init]["init_other_logit_std_mean"]
    for init in UNTIED:
        assert s[init]["init_argmax_is_input_mean"] < 0.10
        assert abs(s[init]["init_self_logit_mean_mean"]) < 0.5
    for init in ("t2t", *UNTIED):
        assert abs(s[init]["init_other_logit_std_mean"] - 1) < 0.1
    for init in ("unit", "unit-noscale"):
        assert abs(s[init]["init_other_logit_std_mean"] / math.sqrt(d) - 1) < 0.1
    ln_v = math.log(vocab)
    assert s["t2t"]["init_loss_mean"] > 2 * ln_v
    assert all(s[init]["init_loss_mean"] < 1.25 * ln_v for init in UNTIED)
    assert_states(CH06 + "code.md", rf"\ln {vocab}\approx{ln_v:.2f}", rf"\sqrt d={math.isqrt(d)}")
    assert_states(CH06 + "derivation.md", rf"\ln {vocab}\approx{ln_v:.2f}")
    c = compare_arms(scale, "t2t-untied", "t2t", "loss")
    assert (c.n, c.verdict, c.sign) == (6, "一致", 1)
    assert_reading(CH06 + "code.md", "都是 $\\mathcal N(0,1/d)$ 的不共享对照更高", c, stated=describe(c, "", digits=2))


@pytest.mark.claim("ch06-init-scale-result", paper="§3.4", results="results/embedding-scale-long.json",
                   text="倒序任务 400 步、每种 6 个种子的贪心逐词准确率：不共享、两处 N(0, 1/d) 每个种子 100%；共享 N(0, 1/d) 乘 √d 有 5 个种子 ≥ 99%，最低的一个 74%；不共享、输入 N(0, 1) 乘 √d 每个种子在 80%–99%；两种共享 N(0, 1) 每个种子 < 40%。逐种子配对：两种共享 N(0, 1) 都比共享 N(0, 1/d) 低、只让输入淹没位置编码的比它的对照低、只有 logits 太大的比只让输入淹没的低，都是「一致」；两种共享 N(0, 1) 之间、共享与不共享的 N(0, 1/d) 之间「不足以下结论」")
def test_init_scale_result(scale):
    s = by_init(scale)
    acc = {init: sorted(r["accuracy"] for r in scale["runs"] if r["init"] == init) for init in s}
    assert all(len(a) == 6 for a in acc.values())
    assert acc["t2t-untied"][0] == 1.0
    assert sum(a >= 0.99 for a in acc["t2t"]) == 5
    assert_states(CH06 + "code.md", f"另一个只有{100 * acc['t2t'][0]:.0f}%")
    assert 0.80 < acc["unit-untied"][0] and acc["unit-untied"][-1] < 0.99
    assert acc["unit"][-1] < 0.40 and acc["unit-noscale"][-1] < 0.40
    code, questions = CH06 + "code.md", CH06 + "questions.md"
    # 逐种子配对的比较：页面上的每句读法
    unit, noscale = compare_arms(scale, "t2t", "unit"), compare_arms(scale, "t2t", "unit-noscale")
    swamped = compare_arms(scale, "t2t-untied", "unit-untied")
    logits_only = compare_arms(scale, "unit-untied", "unit-noscale")
    for c in (unit, noscale, swamped, logits_only):
        assert (c.n, c.verdict, c.sign) == (6, "一致", -1)
    same_failure = compare_arms(scale, "unit", "unit-noscale")
    tying = compare_arms(scale, "t2t-untied", "t2t")
    assert same_failure.verdict == tying.verdict == "不足以下结论"
    for c in (unit, noscale):
        assert_reading(code, "两者在 6 个种子上都更低", c, stated=points(c))
    assert_reading(code, "6 个种子上它都更低", swamped, stated=points(swamped))
    assert round(-100 * swamped.mean_difference) == 8
    assert_states(code, "代价约8个点")
    assert_reading(code, "6 个种子分不出两者的高低", same_failure, stated=points(same_failure))
    assert 0.28 <= min(same_failure.a + same_failure.b) and max(same_failure.a + same_failure.b) < 0.30
    assert_reading(code, "只有 logits 太大的配置在 6 个种子上都比", logits_only, stated=points(logits_only))
    assert_reading(code, "6 个种子分不出共享与不共享", tying, stated=points(tying))
    assert_reading(questions, "6 个种子上这种配置都更低", unit, stated=points(unit))
    rescued = compare_arms(scale, "unit", "unit-untied")
    assert_reading(questions, "6 个种子上都比共享的这种配置更高", rescued, stated=points(rescued))
    assert_reading(CH06 + "derivation.md", "这里用到的比较都是「一致」", logits_only)


def test_sweep_agreement_in_the_committed_file(sweep):
    agree = {a["corpus"]: a for a in sweep["agreement"]}
    for a in agree.values():
        assert a["first_difference"] is None and a["ours"] == a["library"]
        assert a["same_tokens"] == a["round_trip"] == a["sentences"]
        assert a["vocab_size"] == a["base_size"] + a["ours"]
    assert agree["tiefree"]["tie_steps"] == 0 and agree["tiefree"]["ours"] == vocab_sweep.TIEFREE_MERGES
    assert agree["en"]["first_tie"] == 0 and agree["zh"]["tie_steps"] > 0


@pytest.mark.claim("ch06-vocab-tradeoff", paper="§5.1", results="results/vocab-sweep.json",
                   text="合并在 60 句上学、词元在留出的 21 句上数：中英文、字符起步与字节级 BPE，留出句子的每句词元数在网格的每一步都严格下降，但从 200 到 800 条合并，留出句子的降幅小于训练句子（样本内）的降幅；多学一条合并不会让任何一句的词元变多")
def test_tokens_fall_as_vocabulary_grows(sweep):
    assert sweep["config"]["heldout_every"] == vocab_sweep.HELDOUT_EVERY
    drops = {}
    for s in sweep["sweeps"]:
        assert (s["train_sentences"], s["heldout_sentences"]) == (60, 21)
        pts = sorted(s["points"], key=lambda p: p["merges"])
        for key, size in (("tokens_mean", "vocab_size"), ("byte_level_tokens_mean", "byte_level_vocab_size")):
            assert all(a[size] < b[size] and a[key] > b[key] for a, b in zip(pts, pts[1:]))
        at = {p["merges"]: p for p in pts}
        for key in ("tokens_mean", "train_tokens_mean"):
            drops[s["lang"], key] = 1 - at[800][key] / at[200][key]
        assert drops[s["lang"], "tokens_mean"] < drops[s["lang"], "train_tokens_mean"]
    assert_states(CH06 + "code.md", *(f"{100 * drops[lang, key]:.1f}%" for lang in ("zh", "en")
                                      for key in ("tokens_mean", "train_tokens_mean")))
    # 按学到的先后编码：多学一条合并，留出句子里任何一句的词元数都不会变多（本章的 bpe_encode 重算）
    train, held = vocab_sweep.split(vocab_sweep.sentences(vocab_sweep.read_corpus("en")))
    assert not set(train) & set(held)
    merges = bpe_train("\n".join(train), 100)
    lengths = [[len(bpe_encode(x, merges[:k])) for x in held] for k in range(0, 101, 10)]
    assert all(b <= a for row_a, row_b in zip(lengths, lengths[1:]) for a, b in zip(row_a, row_b))
    en = {p["merges"]: p for s in sweep["sweeps"] if s["lang"] == "en" for p in s["points"]}
    assert sum(lengths[-1]) / len(held) == pytest.approx(en[100]["tokens_mean"], abs=1e-12)  # 与结果文件一致


@pytest.mark.claim("ch06-heldout-unseen", paper="§5.1", results="results/vocab-sweep.json", title="留出句子里没见过的字",
                   text="留出的 21 句中文里有 100 种以上的字符在训练的 60 句里没出现过，英文不到 10 种")
def test_heldout_sentences_hold_unseen_characters(sweep):
    unseen = {s["lang"]: s["heldout_unseen_chars"] for s in sweep["sweeps"]}
    assert unseen["zh"] >= 100 and unseen["en"] < 10
    train, held = vocab_sweep.split(vocab_sweep.sentences(vocab_sweep.read_corpus("zh")))
    seen = set("".join(train))
    assert len({ch for ch in "".join(held) if ch not in seen and not ch.isspace()}) == unseen["zh"]


@pytest.mark.claim("ch06-zh-bytes", paper="§5.1", results="results/vocab-sweep.json",
                   text="没有合并时，中文每句的字节级词元数是按字切的 2.5–3 倍，英文两者相同；平行句子里英文按字符切的词元数是中文的 3 倍以上")
def test_chinese_bytes_and_characters(sweep):
    first = {s["lang"]: min(s["points"], key=lambda p: p["merges"]) for s in sweep["sweeps"]}
    zh, en = first["zh"], first["en"]
    assert zh["merges"] == en["merges"] == 0
    assert 2.5 < zh["byte_level_tokens_mean"] / zh["tokens_mean"] < 3.0
    assert en["byte_level_tokens_mean"] == en["tokens_mean"]
    assert en["tokens_mean"] > 3 * zh["tokens_mean"]
    text = vocab_sweep.read_corpus("zh")
    assert all(len(ch.encode("utf-8")) == 3 for ch in text if "\u4e00" <= ch <= "\u9fff")


@pytest.mark.slow
@pytest.mark.parametrize("module", [embedding_scale, vocab_sweep])
def test_tiny_smoke_run_writes_a_valid_file_and_renders(module, tmp_path):
    out = tmp_path / f"{module.KIND}.json"
    assert module.main(["--preset", "tiny", "--out", str(out)]) == 0
    data = load_results(out)
    assert data["preset"] == "tiny"
    shown = dict(data, preset="quick", _file=out.name)  # the renderers skip tiny files: present it as quick
    for fn in ch06_tokens.RENDERERS:
        fn([shown], tmp_path / "gen")
    assert len(list((tmp_path / "gen").iterdir())) >= 3


def test_renderers_write_placeholders_without_results(tmp_path):
    for fn in ch06_tokens.RENDERERS:
        fn([], tmp_path)
    assert "尚无测量结果" in (tmp_path / "vocab-sweep.md").read_text(encoding="utf-8")
    assert (tmp_path / "embedding-scale.svg").exists()
