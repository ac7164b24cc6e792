"""Chapter 10, 模型变体、句法分析与结论: Table 3 as data and its parameter count against the reader model,
the (B) rank bound, Table 4 and the parsing settings, the paper map, and a copy-run of the shown sections."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
import torch

from sitebuild.generate.render import ch10_paper_map, ch10_variations
from snippets.attention import MultiHeadAttention
from snippets.training import noam_lr
from snippets.transformer import transformer_param_count
from snippets.variations import (PARSING_SETTINGS, TABLE4, build_reader_model, linearize_tree, row_param_count,
                                 rounds_to, table3, table3_param_count)
from tests.support.copyrun import run_fresh
from tests.support.pages import assert_states, chapter, plain
from tests.support.sections import DOCS, ROOT, parse_sections

CH10 = chapter("10")
INDEX, DERIVATION, PARSING, CODE, INTERVIEW = (CH10 + p for p in
                                               ("index.md", "derivation.md", "parsing.md", "code.md", "interview.md"))


def row(group: str, **changed) -> dict:
    """The one Table 3 row of ``group`` whose values include ``changed``."""
    (found,) = [r for r in table3() if r["group"] == group and all(r[k] == v for k, v in changed.items())]
    return found


BASE = row("base")


# ---------------------------------------------------------------------------- Table 3 as data
@pytest.mark.claim("ch10-table3-data", paper="§6.2 表 3", title="表 3 的数据只有一份",
                   text="table3() 抄录表 3 的 20 行（base、(A) 4 行、(B) 2 行、(C) 7 行、(D) 4 行、(E)、big），空格按表注取 base 的值；"
                        "(A) 行与 (C) 的 d 两行保持 h·d_k = h·d_v = d_model，(B) 两行不保持；页面生成的表 3 与数据逐行一致")
def test_table3_rows(tmp_path):
    rows = table3()
    assert [r["group"] for r in rows].count("A") == 4 and len(rows) == 20
    assert {g: [r["group"] for r in rows].count(g) for g in "BCDE"} == {"B": 2, "C": 7, "D": 4, "E": 1}
    for r in rows:
        if r["group"] == "A" or (r["group"] == "C" and "d_model" in r["changed"]):
            assert r["h"] * r["d_k"] == r["h"] * r["d_v"] == r["d_model"], r
        if r["group"] == "B":
            assert r["h"] * r["d_k"] < r["d_model"] and r["d_v"] == 64
        for key, value in BASE.items():
            if key not in r["changed"] and key not in ("group", "changed", "ppl", "bleu", "params_m"):
                assert r[key] == value, (r, key)          # blank cells are the base row's values
    assert (BASE["ppl"], BASE["bleu"], BASE["params_m"]) == (4.92, 25.8, 65)
    assert (row("big")["ppl"], row("big")["bleu"], row("big")["params_m"]) == (4.33, 26.4, 213)
    ch10_variations.render_table3([], tmp_path)
    table = (tmp_path / "ch10-table3.md").read_text(encoding="utf-8")
    body = [ln for ln in table.splitlines() if ln.startswith("| ") and not ln.startswith("| 行")]
    assert len(body) == 20
    for line, r in zip(body, rows):
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert float(cells[1]) == r["ppl"] and float(cells[2]) == r["bleu"]
        assert cells[3] == ("—" if r["params_m"] is None else str(r["params_m"]))
    assert "| (B) d_k = 16 | 5.16 | 25.1 | 58 |" in table


# ---------------------------------------------------------------------------- parameter counts
@pytest.mark.claim("ch10-params-base", paper="§6.2 表 3", title="base 的参数量：63,082,496",
                   text="table3_param_count(6, 512, 2048, 8, 64, 64, 37000) = 63,082,496，与第 02 章的 transformer_param_count 相同")
def test_base_count():
    n = table3_param_count(6, 512, 2048, 8, 64, 64, 37000)
    assert n == 63_082_496 == transformer_param_count(37000, 512, 6, 2048)
    assert table3_param_count(6, 512, 2048, 8, 64, 64, 37000, tied=False) - n == 2 * 37000 * 512
    assert_states(DERIVATION, "63,082,496")


@pytest.mark.claim("ch10-params-every-row", paper="§6.2 表 3", title="每一行都与读者的模型相等",
                   text="表 3 的 20 行（(E) 行带 512 行的可学习位置表）按配置在 meta 设备上搭出读者的 Transformer，"
                        "parameters() 的个数与 table3_param_count 逐个相等")
def test_every_row_matches_the_reader_model():
    with torch.device("meta"):
        for r in table3():
            positions = 512 if r["positions"] == "learned" else 0
            model = build_reader_model(r, 37000, positions)
            assert next(model.parameters()).device.type == "meta"
            assert sum(p.numel() for p in model.parameters()) == row_param_count(r, 37000, positions), r
            attn = model.encoder_layers[0].self_attn
            assert attn.w_q.out_features == r["h"] * r["d_k"] and attn.w_v.out_features == r["h"] * r["d_v"]


def test_a_rows_positions_and_learned_positions_agree():
    """Row (E) says positions='learned': counting or building it without a table is refused, not a sinusoid."""
    e = next(r for r in table3() if r["positions"] == "learned")
    base = next(r for r in table3() if r["positions"] == "sinusoid")
    for call in (row_param_count, build_reader_model):
        with pytest.raises(ValueError, match="learned_positions=0"):
            with torch.device("meta"):
                call(e, 37000)
        with pytest.raises(ValueError, match="learned_positions=512"):
            with torch.device("meta"):
                call(base, 37000, 512)


@pytest.mark.claim("ch10-params-vocab", paper="§5.1、表 3", title="表 3 参数量的隐含词表：base 族约 41K，big 约 36K",
                   text="|V| = 37000 时有参数量的 11 行没有一行四舍五入到论文的值；|V| = 41000 时 base 族的 10 行全部对上，"
                        "big 是 218.34M；|V| = 36000 时 big 对上（213.22M）；逐行取交，base 族 10 行要求 |V| 在 40,932 到 41,160 之间"
                        "（d_ff = 1024 行给下界、N = 4 行给上界），big 要求 35,296 到 36,272，两者不相交")
def test_implied_vocabulary(tmp_path):
    reported = [r for r in table3() if r["params_m"] is not None]
    assert len(reported) == 11
    assert not any(rounds_to(row_param_count(r, 37000), r["params_m"]) for r in reported)
    family = [r for r in reported if r["group"] != "big"]
    assert len(family) == 10 and all(rounds_to(row_param_count(r, 41000), r["params_m"]) for r in family)
    big = row("big")
    assert round(row_param_count(big, 41000) / 1e6, 2) == 218.34 and not rounds_to(row_param_count(big, 41000), 213)
    assert rounds_to(row_param_count(big, 36000), 213) and round(row_param_count(big, 36000) / 1e6, 2) == 213.22
    assert_states(DERIVATION, "**没有一行**", "**全部**对上", "218.34M")
    # the interval each row allows, intersected over the 10 base-family rows, and the big row's own interval
    def allowed(r):                                        # each row allows one run of consecutive sizes
        sizes = [v for v in range(30_000, 50_000) if rounds_to(row_param_count(r, v), r["params_m"])]
        assert sizes == list(range(sizes[0], sizes[-1] + 1)), r
        return sizes[0], sizes[-1]
    low, high = max(allowed(r)[0] for r in family), min(allowed(r)[1] for r in family)
    assert (low, high) == (40_932, 41_160)
    assert allowed(row("C", d_ff=1024))[0] == low and allowed(row("C", N=4))[1] == high
    assert allowed(big) == (35_296, 36_272) and allowed(big)[1] < low
    assert_states(DERIVATION, "40,932到41,160之间", "d_{ff}=1024", "N=4", "35,296到36,272")
    ch10_variations.render_param_count([], tmp_path)
    table = (tmp_path / "ch10-param-count.md").read_text(encoding="utf-8")
    assert "| base | 65 | 63.08 | 65.13 ✔ | 62.57 |" in table and "| big | 213 | 214.25 | 218.34 | 213.22 ✔ |" in table


@pytest.mark.claim("ch10-params-a-invariant", paper="§6.2 表 3 (A)", title="(A) 行的参数量不变",
                   text="(A) 行的 4 种 h 都保持 h·d_k = h·d_v = 512，参数量与 base 逐个相同；(D) 行也与 base 相同")
def test_row_a_keeps_the_count():
    base = row_param_count(BASE, 37000)
    for r in table3():
        if r["group"] in ("A", "D"):
            assert row_param_count(r, 37000) == base, r
    assert table3_param_count(6, 512, 2048, 8, 32, 64, 37000) != base       # the count does see d_k


@pytest.mark.claim("ch10-params-dk", paper="§6.2 表 3 (B)", title="(B) 行：d_k 64→16 少 7,091,712 个参数",
                   text="d_k 从 64 降到 16 少 7,091,712 个参数（每个注意力子层 393,984 个，共 18 个），与词表无关；"
                        "论文是 65 − 58 = 7（M）")
def test_dk_saving():
    for vocab in (1, 37000, 41000):
        base = row_param_count(BASE, vocab)
        assert base - row_param_count(row("B", d_k=16), vocab) == 7_091_712
    per_layer = 2 * (512 * 8 * 48 + 8 * 48)
    assert per_layer == 393_984 and 3 * 6 * per_layer == 7_091_712
    assert BASE["params_m"] - row("B", d_k=16)["params_m"] == 7
    assert_states(DERIVATION, "393,984", "7,091,712", "65-58=7")


def test_bad_sizes_name_the_argument():
    with pytest.raises(ValueError, match=r"d_k must be an int >= 1, got d_k=0 \(n_layers=6"):
        table3_param_count(6, 512, 2048, 8, 0, 64, 37000)
    with pytest.raises(ValueError, match="vocab must be an int"):
        table3_param_count(6, 512, 2048, 8, 64, 64, 37000.0)
    with pytest.raises(ValueError, match="learned_positions must be an int >= 0"):
        table3_param_count(6, 512, 2048, 8, 64, 64, 37000, learned_positions=-1)
    assert table3_param_count(6, 512, 2048, 8, 64, 64, 37000, learned_positions=0) == 63_082_496
    with pytest.raises(ValueError, match="d_k must be a positive int"):
        MultiHeadAttention(32, 4, d_k=0)
    with pytest.raises(ValueError, match="h·d_v = d_model"):
        build_reader_model({**BASE, "d_v": 32}, 100)


# ---------------------------------------------------------------------------- reading Table 3
@pytest.mark.claim("ch10-dk-rank", paper="§6.2 表 3 (B)", title="d_k 限制了分数矩阵的秩",
                   text="MultiHeadAttention(32, 4, d_k=4) 在 16 个位置上，每个头的分数矩阵 QKᵀ 的秩都是 4（≤ d_k），"
                        "d_k = 8 时是 8；值的宽度仍是 d_model/h，输出形状不变")
def test_rank_bound():
    torch.manual_seed(0)
    x = torch.randn(2, 16, 32, dtype=torch.float64)
    for d_k in (4, 8):
        mha = MultiHeadAttention(32, 4, d_k=d_k).double()
        q, k = mha._split_heads(mha.w_q(x)), mha._split_heads(mha.w_k(x))
        assert q.shape == (2, 4, 16, d_k)
        assert (torch.linalg.matrix_rank(q @ k.transpose(-2, -1)) == d_k).all()
        out, weights = mha(x, x, x)
        assert out.shape == (2, 16, 32) and weights.shape == (2, 4, 16, 16)
    assert MultiHeadAttention(32, 4).d_k == 8
    assert_states(CODE, "assertranks==[[4444]]")


@pytest.mark.claim("ch10-heads-peak", paper="§6.2 表 3 (A)", title="头数的峰在中间",
                   text="表 3 (A)：h = 1、4、8、16、32 的 BLEU 是 24.9、25.5、25.8、25.8、25.4；最好的是 h = 8 与 16，"
                        "单头低 0.9，h = 32 低 0.4")
def test_heads_peak():
    by_h = {r["h"]: r["bleu"] for r in table3() if r["group"] in ("A", "base")}
    assert [by_h[h] for h in (1, 4, 8, 16, 32)] == [24.9, 25.5, 25.8, 25.8, 25.4]
    best = max(by_h.values())
    assert sorted(h for h, b in by_h.items() if b == best) == [8, 16]
    assert round(best - by_h[1], 1) == 0.9 and round(best - by_h[32], 1) == 0.4
    assert_states(DERIVATION, "24.9、25.5、25.8、25.8、25.4", "单头低0.9", "h=32又降了0.4")


@pytest.mark.claim("ch10-ppl-bleu-disagree", paper="§6.2 表 3", title="困惑度与 BLEU 不一致",
                   text="表 3 里困惑度比 base 好（< 4.92）而 BLEU 比 base 差（< 25.8）的恰好是两行：ε_ls = 0（4.67 / 25.3）与 N = 8（4.88 / 25.5）")
def test_ppl_and_bleu_disagree():
    worse_bleu = [r for r in table3() if r["ppl"] < BASE["ppl"] and r["bleu"] < BASE["bleu"]]
    assert [(r["ppl"], r["bleu"]) for r in worse_bleu] == [(4.88, 25.5), (4.67, 25.3)]
    assert worse_bleu[0]["changed"] == ["N"] and worse_bleu[1]["changed"] == ["eps_ls"]
    assert_states(DERIVATION, "困惑度4.67比base的4.92好，BLEU25.3却比25.8差")


@pytest.mark.claim("ch10-ppl-per-word", paper="§6.2 表 3 表注", title="每词困惑度是每词元困惑度的 T_wp/T_w 次方",
                   text="同一个测试集的总对数概率下，PPL_w = PPL_wp^(T_wp/T_w)；每词 1.3 个词元时 4.92 对应每词 7.94")
def test_per_word_perplexity():
    gen = torch.Generator().manual_seed(0)
    logp = -torch.rand(130, generator=gen, dtype=torch.float64) * 3      # 130 个 word-piece 的 log p
    t_wp, t_w = 130, 100
    ppl_wp, ppl_w = math.exp(-logp.sum().item() / t_wp), math.exp(-logp.sum().item() / t_w)
    assert ppl_w == pytest.approx(ppl_wp ** (t_wp / t_w), rel=1e-12) and ppl_w > ppl_wp
    assert round(4.92 ** 1.3, 2) == 7.94
    assert_states(DERIVATION, "4.92^{1.3}\\approx7.94")


@pytest.mark.claim("ch10-big-width", paper="§6.2 表 3 (C)、big", title="big 与 base 同为 6 层，差在宽度",
                   text="big 与 base 的 N 都是 6，big 改的是 d_model、d_ff、h、P_drop 与训练步数；(C) 行里 N = 8 的 BLEU 25.5 "
                        "低于 d_model = 1024 的 26.0 与 d_ff = 4096 的 26.2")
def test_big_is_wider_not_deeper():
    big = row("big")
    assert big["N"] == BASE["N"] == 6
    assert big["changed"] == ["d_ff", "d_model", "h", "p_drop", "steps"]
    assert (row("C", N=8)["bleu"], row("C", d_model=1024)["bleu"], row("C", d_ff=4096)["bleu"]) == (25.5, 26.0, 26.2)
    assert_states(DERIVATION, "加深到N=8的BLEU是25.5，加宽到d=1024是26.0，d_{ff}=4096是26.2")


@pytest.mark.claim("ch10-no-dropout", paper="§6.2 表 3 (D)", title="去掉 dropout 的困惑度在表 3 里倒数第二",
                   text="P_drop = 0 的困惑度 5.77 在表 3 的 20 行里仅次于 N = 2 的 6.11，比 d_model = 256 的 5.75 还差；BLEU 24.6")
def test_no_dropout_rank():
    by_ppl = sorted(table3(), key=lambda r: -r["ppl"])
    assert (by_ppl[0]["changed"], by_ppl[0]["ppl"]) == (["N"], 6.11)
    assert (by_ppl[1]["p_drop"], by_ppl[1]["ppl"], by_ppl[1]["bleu"]) == (0.0, 5.77, 24.6)
    assert by_ppl[2]["d_model"] == 256 and by_ppl[2]["ppl"] == 5.75
    assert_states(DERIVATION, "仅次于N=2的6.11，比把d减半（5.75）还差")


@pytest.mark.claim("ch10-scaling-caveats", paper="§6.2 表 3 (C)、big; Kaplan 2020; Ghorbani 2021",
                   title="用缩放定律读 (C) 行的三个前提",
                   text="(C) 行并不单调：28M 的 d = 256 困惑度 5.75，比 36M 的 N = 2（6.11）好；Kaplan 的参数量不含嵌入，"
                        "base 的 |V|·d = 37000 × 512 约占 63,082,496 个参数的 30%；big 多练的 200K 步是在同一份数据上重复")
def test_scaling_law_caveats():
    narrow, shallow = row("C", d_model=256), row("C", N=2)
    assert (narrow["params_m"], narrow["ppl"], shallow["params_m"], shallow["ppl"]) == (28, 5.75, 36, 6.11)
    assert narrow["params_m"] < shallow["params_m"] and narrow["ppl"] < shallow["ppl"]
    total = table3_param_count(6, 512, 2048, 8, 64, 64, 37000)
    assert total == 63_082_496 and round(100 * 37000 * 512 / total) == 30
    assert row("big")["steps"] - BASE["steps"] == 200_000
    assert_states(DERIVATION, "28M的d=256困惑度5.75，比36M的N=2（6.11）还好", r"37000\times512\approx1.89\times10^7",
                  "约占它6300万参数的30%", "big多练的200K步是在同一份450万句对上重复")


@pytest.mark.claim("ch10-lr-width", paper="§5.3 公式 (3)", title="公式 (3) 的 d^(−1/2)：加宽同时降低学习率",
                   text="noam_lr 含 d_model^(−1/2)：同一步上 d_model = 128 的学习率是 d_model = 64 的 1/√2 ≈ 0.707 倍")
def test_width_changes_the_learning_rate():
    for step in (1, 50, 100, 300):
        assert noam_lr(step, 128, 100) / noam_lr(step, 64, 100) == pytest.approx(1 / math.sqrt(2))
    assert_states(DERIVATION, "1/\\sqrt2\\approx0.707")


# ---------------------------------------------------------------------------- §6.3 and Table 4
@pytest.mark.claim("ch10-linearize", paper="§6.3", title="线性化的树比句子长",
                   text="linearize_tree 深度优先地把树写成括号串：n 个词、k 个成分输出 n + 2k 个符号，示例 7 个词、5 个成分输出 17 个，括号配对")
def test_linearized_tree():
    tree = ("S", [("NP", ["the", "cat"]), ("VP", ["sat", ("PP", ["on", ("NP", ["the", "mat"])])]), "."])
    out = linearize_tree(tree)
    assert " ".join(out) == "(S (NP the cat )NP (VP sat (PP on (NP the mat )NP )PP )VP . )S"
    assert len(out) == 17
    depth = 0
    for tok in out:
        depth += tok.startswith("(") - tok.startswith(")")
        assert depth >= 0
    assert depth == 0
    assert_states(PARSING, "7个词的句子输出17个")


@pytest.mark.claim("ch10-parsing-settings", paper="§6.3", title="句法分析的设置",
                   text="论文写明的设置：4 层、d_model = 1024、WSJ 约 40K 句（词表 16K）、半监督约 17M 句（词表 32K）、"
                        "最大输出长度 = 输入 + 300、束宽 21、α = 0.3；页面的设置表与 PARSING_SETTINGS 一致")
def test_parsing_settings():
    s = PARSING_SETTINGS
    assert (s["layers"], s["d_model"], s["beam"], s["alpha"], s["max_extra_output"]) == (4, 1024, 21, 0.3, 300)
    assert (s["wsj_sentences"], s["semi_supervised_sentences"], s["vocab_wsj"], s["vocab_semi"]) == \
        (40_000, 17_000_000, 16_000, 32_000)
    assert_states(PARSING, "4层Transformer，d_{model}=1024", "约40K句，词表16K", "约17M句", "词表32K",
                  "输入长度+300", "束宽21，\\alpha=0.3")


@pytest.mark.claim("ch10-table4", paper="§6.3 表 4", title="表 4 逐格",
                   text="页面上表 4 的 12 行 F1 与 TABLE4 逐格相同、顺序相同；两行 Transformer 是 91.3（仅 WSJ）与 92.7（半监督）")
def test_table4_on_the_page():
    text = (DOCS / PARSING).read_text(encoding="utf-8")
    section = text.split("## 表 4", 1)[1].split("\n## ", 1)[0]
    rows = [ln for ln in section.splitlines() if ln.startswith("| ") and not ln.startswith("| 解析器")]
    assert len(rows) == len(TABLE4) == 12
    kinds = {"WSJ only, discriminative": "仅 WSJ，判别式", "semi-supervised": "半监督", "multi-task": "多任务",
             "generative": "生成式"}
    for line, (_, kind, f1) in zip(rows, TABLE4):
        cells = [c.strip().strip("*") for c in line.strip("|").split("|")]
        assert cells[1] == kinds[kind] and float(cells[2]) == f1, line
    ours = [(k, f1) for name, k, f1 in TABLE4 if name.startswith("Transformer")]
    assert ours == [("WSJ only, discriminative", 91.3), ("semi-supervised", 92.7)]


@pytest.mark.claim("ch10-parsing-exception", paper="§6.3 表 4", title="表 4：「除了 RNNG 都更好」只在组内成立",
                   text="表 4 中高于 Transformer 最好成绩 92.7 的有 RNNG（93.3）与多任务的 Luong 等（93.0）；仅 WSJ 组内只有判别式 RNNG（91.7）"
                        "高于 91.3；仅 WSJ 的 91.3 高于 BerkeleyParser（Petrov 等）的 90.4")
def test_parsing_claim_boundary():
    best = max(f1 for name, _, f1 in TABLE4 if name.startswith("Transformer"))
    above = sorted((f1, name) for name, _, f1 in TABLE4 if f1 > best)
    assert above == [(93.0, "Luong et al. (2015)"), (93.3, "Dyer et al. (2016)")]
    wsj = [(name, f1) for name, k, f1 in TABLE4 if k.startswith("WSJ only")]
    ours = dict(wsj)["Transformer (4 layers)"]
    assert [n for n, f1 in wsj if f1 > ours] == ["Dyer et al. (2016)"]
    assert ours > dict(wsj)["Petrov et al. (2006)"] == 90.4
    assert_states(PARSING, "Luong等的多任务模型（93.0）", "判别式RNNG的91.7", "高于BerkeleyParser（Petrov等2006）的90.4")


# ---------------------------------------------------------------------------- the paper map
PAPER = ["§1", "§2", "§3", "§3.1", "§3.2", "§3.2.1", "§3.2.2", "§3.2.3", "§3.3", "§3.4", "§3.5", "§4", "§5",
         "§5.1", "§5.2", "§5.3", "§5.4", "§6", "§6.1", "§6.2", "§6.3", "§7", "附录", "表 1", "表 2", "表 3", "表 4"]


@pytest.mark.claim("ch10-paper-map", paper="全文", title="论文地图覆盖全文",
                   text="论文已发表版本的 22 个节（§1–§7 及各小节）、附录与 4 张表，每一处都至少有一个页面在 front matter 里声明讲解它；"
                        "每个声明的锚点都在那个页面上；生成的地图没有「（尚无）」")
def test_paper_map_covers_the_paper(tmp_path):
    assert sorted(p for p, _ in ch10_paper_map.PAPER_PARTS) == sorted(PAPER)
    found = ch10_paper_map.paper_map()
    assert set(found) <= set(PAPER), set(found) - set(PAPER)
    assert [p for p in PAPER if not found.get(p)] == []
    for part, pages in found.items():
        for page, anchor in pages:
            text = (DOCS / "chapters" / page).read_text(encoding="utf-8")
            assert not anchor or "{#" + anchor + "}" in text, (part, page, anchor)
    ch10_paper_map.render_paper_map([], tmp_path)
    out = (tmp_path / "ch10-paper-map.md").read_text(encoding="utf-8")
    assert "（尚无）" not in out and out.count("\n| §") == 22
    assert "[第 10 章 · 句法分析：§6.3 与表 4](../10-variations/parsing.md#table4)" in out


def test_paper_map_reports_a_gap(tmp_path):
    (tmp_path / "01-x").mkdir()
    (tmp_path / "01-x" / "a.md").write_text('---\ntitle: t\npaper:\n  "§1": "top"\n---\n# a {#top}\n', encoding="utf-8")
    assert ch10_paper_map.paper_map(tmp_path) == {"§1": [("01-x/a.md", "top")]}


# ---------------------------------------------------------------------------- the shown code runs by itself
def test_sections_run_in_a_fresh_interpreter(tmp_path):
    parts = parse_sections(ROOT / "snippets" / "variations.py")
    assert [name for name, _ in parts] == ["imports", "table3", "param-count", "parsing", "checks"]
    for name, code in parts[1:]:
        assert not re.search(r"^\s*(import|from)\s+\w", code, re.M), f"section {name} imports"
    smoke = """
rows = table3()
assert len(rows) == 20
assert table3_param_count(6, 512, 2048, 8, 64, 64, 37000) == 63082496
assert len(linearize_tree(("S", [("NP", ["a"])]))) == 5
print("ok")
"""
    assert run_fresh("\n\n".join(code for _, code in parts) + "\n" + smoke, tmp_path).strip() == "ok"
    assert "63082496" in plain(DERIVATION)
