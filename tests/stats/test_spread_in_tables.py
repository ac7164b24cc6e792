"""Every measured table of a multi-seed experiment shows the spread over seeds, not only the mean.

The rule, for each table a renderer writes from a results file with several seeds (``runs`` with a
``seed``, ``rows[*].per_seed``, or probe ``rows`` with a ``seed``):

- a table with a 「种子」 column lists every seed on its own row: the spread is the rows themselves;
- any other table aggregates over seeds, so every cell holding a number carries its range — 「均值（最小–最大）」
  from ``_style.mean_range`` (or a bare 「最小–最大」 range), written 「a–b」 or, for signed values, 「a 至 b」 —
  unless it sits in a column named in ``TABLES`` (labels and settings that are the same for every seed:
  d_k, 参数量, 层号, ...), is a count of seeds (「2 / 3」), is 「—」 or empty, or is followed by a column whose
  header says 「最小–最大」 and holds that range (ECE in training-recipe.md: its mean cell is read by ch08's test);
- rows named in ``EXEMPT_ROWS`` are computed, not measured (the uniform baseline).

Single-run kinds say so in the caption: 「单次运行」.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sitebuild.generate import figures
from sitebuild.generate.render import (_style, ch02_copy_task, ch03_additive, ch03_qk_gradient, ch04_heads,
                                       ch05_depth, ch06_tokens, ch07_positional, ch08_training, ch09_decoding,
                                       ch10_variations, ch11_attnres, ch12_inference, ch13_long_context, ch13_sinks,
                                       page_reading)
from snippets.results import RESULTS_DIR, load_all
from snippets.stats import summarize

# generated table → (the renderer that writes it, columns that are labels or settings, not seed aggregates)
TABLES = {
    "additive-vs-dot.md": (ch03_additive.render_table, {"d_k", "打分方式"}),
    "qk-gradient.md": (ch03_qk_gradient.render_table, {"d_k"}),
    "heads-sweep.md": (ch04_heads.render_sweep_table, {"h", "d_k", "参数量"}),
    "depth-gradients.md": (ch05_depth.render_depth_table, {"层号 l", "初始化", "层数"}),
    "postln-warmup.md": (ch05_depth.render_warmup_table, {"条件"}),
    "postln-warmup-sweep.md": (ch05_depth.render_warmup_sweep_table, {"初始化", "条件", "全部种子都学会的最大峰值"}),
    "embedding-scale.md": (ch06_tokens.render_scale_table, {"嵌入的初始化"}),
    "length-generalization.md": (ch07_positional.render_length_table, {"编码", "长度"}),
    "length-generalization-long.md": (ch07_positional.render_long_table, {"编码", "长度"}),
    "training-recipe.md": (ch08_training.render_recipe_table, {"变体"}),
    "training-recipe-long.md": (ch08_training.render_long_table, {"变体与步数"}),
    "toy-translation.md": (ch09_decoding.render_table, {"解码"}),
    "ch12-serving-loads.md": (ch12_inference.render_serving_loads, {"平均到达间隔"}),
    "toy-translation-budgets.md": (ch09_decoding.render_budget_table, {"解码"}),
    "ch10-variations.md": (ch10_variations.render_sweep_table, {"变体", "参数量"}),
    "ch10-variations-long.md": (ch10_variations.render_long_table, {"变体"}),
    "attention-residuals.md": (ch11_attnres.render_table, {"残差", "参数"}),
    "attention-residuals-long.md": (ch11_attnres.render_long_table, {"残差", "参数"}),
    "ch13-sinks.md": (ch13_sinks.render_mass, {"开头", "层"}),
    "ch13-sinks-cache.md": (ch13_sinks.render_cache, {"开头", "w"}),
    "ch13-sinks-long.md": (ch13_sinks.render_long, {"开头", "w"}),
    "ch13-recall.md": (ch13_long_context.render_recall, {"N 对"}),
}
# tables that list each seed on its own row
PER_SEED = {
    "heads-ablation.md": ch04_heads.render_ablation_table,
    "heads-long.md": ch04_heads.render_long_table,
    "attention-residuals-stream.md": ch11_attnres.render_stream_table,
    "toy-translation-averaging.md": ch09_decoding.render_averaging_table,
    "ch12-kv-quant.md": ch12_inference.render_kv_quant,
    "ch12-serving.md": ch12_inference.render_serving,
    "reading-example.md": page_reading.render_example,
}
# tables with one column per seed (「种子 0」「种子 1」…)
PER_SEED_COLUMNS = {"toy-translation-paired.md": ch09_decoding.render_paired_table}
# tables from a multi-seed results file that aggregate no seeds: the probe's other parts (timings, memory,
# block sizes: one measurement per point) and the batching of seed 0's training set
NO_SEEDS = {"ch12-attention.md", "ch12-decode.md", "ch12-flash-blocks.md", "ch13-decode-step.md", "ch13-scaling.md",
            "training-batching.md"}
EXEMPT_ROWS = {"均匀基线"}
SINGLE_RUN = {  # single-run kinds: their table's caption says so
    "copy-task.md": lambda results, out: (out / "copy-task.md").write_text(
        ch02_copy_task.copy_task_table(ch02_copy_task.find_copy_task(results)), encoding="utf-8"),
    "lr-schedule.md": ch08_training.render_schedule_table,
    "rope-wavelengths.md": ch07_positional.render_wavelength_table,
    "vocab-sweep.md": ch06_tokens.render_sweep_table,
    "bpe-agreement.md": ch06_tokens.render_agreement_table,
}

NUMBER = r"[-−+]?\d[\d,.]*%?"
SPREAD = re.compile(rf"{NUMBER}\s*(?:–| 至 ){NUMBER}")          # 「0.12–0.34」「-0.1 至 +0.2」
SEED_COUNT = re.compile(r"^\d+ / \d+")                            # 「2 / 3」「0 / 3（没学会 3）」


@pytest.fixture(scope="module")
def results():
    return load_all(RESULTS_DIR)


@pytest.fixture(scope="module")
def rendered(results, tmp_path_factory):
    out = tmp_path_factory.mktemp("tables")
    for render in ({r for r, _ in TABLES.values()} | set(PER_SEED.values()) | set(PER_SEED_COLUMNS.values())
                   | set(SINGLE_RUN.values())):
        render(results, out)
    return out


def md_tables(text: str) -> list[tuple[list[str], list[list[str]]]]:
    """Markdown 表格 → [(表头, 各行)]；每格去掉两端空白。"""
    tables, block = [], []
    for line in text.splitlines() + [""]:
        if line.startswith("|"):
            block.append([c.strip() for c in line.strip().strip("|").split("|")])
        elif block:
            tables.append((block[0], block[2:]))
            block = []
    return tables


def cells_without_spread(text: str, labels: set[str]) -> list[str]:
    """按上面的规则，没有写出范围的格子：「表头 = 格子」。"""
    bad = []
    for head, rows in md_tables(text):
        if "种子" in head:
            continue
        for row in rows:
            if row[0] in EXEMPT_ROWS or (len(row) > 1 and row[1] in EXEMPT_ROWS):
                continue
            for i, (name, cell) in enumerate(zip(head, row)):
                if name in labels or cell in ("", "—") or not re.search(r"\d", cell):
                    continue
                if SPREAD.search(cell) or SEED_COUNT.match(cell):
                    continue
                beside = i + 1 < len(head) and "最小–最大" in head[i + 1] and SPREAD.search(row[i + 1])
                if not beside:
                    bad.append(f"{name} = {cell}")
    return bad


def seeds(r: dict) -> set:
    """The seeds a results file ran: runs[*].seed, rows[*].per_seed[*].seed, probes.*.rows[*].seed."""
    found = {x["seed"] for x in r.get("runs", []) if "seed" in x}
    found |= {p["seed"] for row in r.get("rows", []) for p in row.get("per_seed", [])}
    found |= {x["seed"] for p in r.get("probes", {}).values() if isinstance(p, dict)
              for x in p.get("rows", []) if isinstance(x, dict) and "seed" in x}
    return found


def test_the_registered_tables_come_from_multi_seed_results(results):
    """The rule is not vacuous: the kinds named in the task run several seeds; the single-run ones one."""
    multi = {r["_file"] for r in results if len(seeds(r)) > 1}
    assert {"results/additive-vs-dot.json", "results/depth-gradients.json", "results/attention-sinks.json",
            "results/long-context-cpu-amd-epyc.json", "results/inference-cpu-amd-epyc.json"} <= multi
    single = {"results/copy-task.json", "results/lr-schedule.json", "results/rope-scaling.json",
              "results/vocab-sweep.json"}
    assert not single & multi


@pytest.mark.slow  # renders every figure and table: seconds of matplotlib
def test_every_table_from_a_multi_seed_file_is_checked(results, tmp_path):
    """A new table written from a multi-seed results file must be registered above (and so checked)."""
    figures.render_all(RESULTS_DIR, tmp_path)
    multi = {r["_file"] for r in results if len(seeds(r)) > 1}
    unchecked = []
    for path in sorted(tmp_path.glob("*.md")):
        cited = set(re.findall(r"数据文件 `([^`]+)`", path.read_text(encoding="utf-8")))
        if cited & multi and md_tables(path.read_text(encoding="utf-8")) and path.name not in (
                set(TABLES) | set(PER_SEED) | set(PER_SEED_COLUMNS) | NO_SEEDS):
            unchecked.append(path.name)
    assert unchecked == []
    assert (set(TABLES) | set(PER_SEED) | set(PER_SEED_COLUMNS) | NO_SEEDS) <= {p.name for p in tmp_path.glob("*.md")}


@pytest.mark.parametrize("name", sorted(TABLES))
def test_every_seed_aggregate_shows_its_range(rendered, name):
    text = (rendered / name).read_text(encoding="utf-8")
    tables = md_tables(text)
    assert tables, f"{name}: no table (no results?)"
    assert sum(len(rows) for _, rows in tables) >= 3
    assert cells_without_spread(text, TABLES[name][1]) == [], name


@pytest.mark.parametrize("name", sorted(PER_SEED))
def test_per_seed_tables_list_every_seed(rendered, name):
    tables = md_tables((rendered / name).read_text(encoding="utf-8"))
    assert tables and all("种子" in head for head, _ in tables), name
    seeds = {row[head.index("种子")] for head, rows in tables for row in rows}
    assert len(seeds) >= 2, (name, seeds)


@pytest.mark.parametrize("name", sorted(PER_SEED_COLUMNS))
def test_per_seed_column_tables_list_every_seed(rendered, name):
    tables = md_tables((rendered / name).read_text(encoding="utf-8"))
    assert tables, name
    for head, _ in tables:
        assert len([h for h in head if re.fullmatch(r"种子 \d+", h)]) >= 2, (name, head)


@pytest.mark.parametrize("name", sorted(SINGLE_RUN))
def test_single_run_tables_say_so(rendered, name):
    assert "单次运行" in (rendered / name).read_text(encoding="utf-8"), name


def test_the_rule_catches_a_bare_mean():
    """The checker itself: a mean alone fails, a range (in the cell or beside it) or a label passes."""
    text = ("| 变体 | 准确率：均值 | ECE | ECE 最小–最大 | 次数 |\n|---|---|---|---|---|\n"
            "| a | 79.9% | 0.109 | 0.016–0.170 | 2 / 3 |\n| b | 75.8%（71.9–80.4） | 0.039 | 0.029–0.057 | — |\n")
    assert cells_without_spread(text, {"变体"}) == ["准确率：均值 = 79.9%"]
    assert cells_without_spread(text.replace("| 0.016–0.170 |", "| 0.016 |"), {"变体"}) == [
        "准确率：均值 = 79.9%", "ECE = 0.109", "ECE 最小–最大 = 0.016"]
    assert cells_without_spread("| 种子 | x |\n|---|---|\n| 0 | 0.5 |\n", set()) == []
    assert cells_without_spread("| w | d |\n|---|---|\n| 4 | +0.1（-0.2 至 +0.3） |\n", {"w"}) == []


def test_mean_range_is_summarize_written_out():
    values = [0.717, 0.865, 0.799, 0.815]
    s = summarize(values)
    assert _style.mean_range(values, ".3f") == f"{s.mean:.3f}（{s.min:.3f}–{s.max:.3f}）" == "0.799（0.717–0.865）"
    pct = lambda x: f"{100 * x:.1f}%"                                          # noqa: E731
    assert _style.mean_range(values, pct, lambda x: f"{100 * x:.1f}") == "79.9%（71.7–86.5）"
    assert _style.mean_range([0.5], ".2f") == "0.50"                           # one seed: no range to show
    assert _style.mean_range([-0.1, 0.3], "+.2f") == "+0.10（-0.10 至 +0.30）"  # signed ends: 「至」, not 「-0.10–+0.30」
    assert _style.value_range([3, 1, 2], ".0f") == "1–3"
    mean, err = _style.seed_errorbars([[1.0, 2.0, 6.0], [4.0]])
    assert mean == [3.0, 4.0] and err == [[2.0, 0.0], [3.0, 0.0]]
    with pytest.raises(ValueError, match="values is empty"):
        _style.mean_range([], ".2f")


def test_tables_are_byte_identical_when_rendered_twice(results, rendered, tmp_path):
    for name, (render, _) in TABLES.items():
        render(results, tmp_path)
        assert (tmp_path / name).read_bytes() == (rendered / name).read_bytes(), name
