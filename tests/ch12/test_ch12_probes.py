"""Chapter 12's probes: the committed CPU and GPU results files against what the page states, a tiny smoke
run into tmp_path (slow), and the renderer."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from sitebuild.generate.render import ch12_inference
from snippets.probes import inference
from snippets.probes.memory import naive_peak_closed_form
from snippets.results import load_results
from snippets.serving import dequantize_int8, quantize_int8
from snippets.stats import compare_seeds, describe
from tests.support.committed import check_device_files, one_file
from tests.support.pages import assert_states, chapter
from tests.support.verdicts import assert_reading

CH12 = chapter("12")
CODE = CH12 + "experiments.md"  # the measurements' page (split off code.md)
CACHE = CH12 + "derivation-cache.md"
QUESTIONS = CH12 + "questions.md"


def seeds_of(rows: list[dict]) -> list[int]:
    return [r["seed"] for r in rows]


def points(c, digits: int = 1) -> str:
    """A comparison of two proportions, in percentage points."""
    return describe(c, " 个百分点", digits=digits, scale=100)
ROOT = Path(__file__).resolve().parents[2]
FILES = sorted((ROOT / "results").glob("inference-cpu-*.json"))
GPU_FILES = sorted((ROOT / "results").glob("inference-cuda-*.json"))


@pytest.fixture(scope="module")
def cpu() -> dict:
    data = one_file(FILES, inference.KIND)  # validates against results/schema/inference-probes.schema.json
    assert data["provenance"]["threads"] == 1
    assert data["probes"]["serving"]["config"]["requests"] == inference.PRESETS["full"]["serving"]["requests"]
    return data


@pytest.fixture(scope="module")
def gpu() -> dict:
    data = one_file(GPU_FILES, inference.KIND)
    return data


def test_gpu_numbers_come_from_a_gpu():
    """A results file is named after the device that wrote it; a CUDA file names its GPU, driver and CUDA
    version and was timed with CUDA events: a GPU number exists only if a GPU produced it."""
    check_device_files("inference", lambda data: data["probes"]["attention"]["timer"])


@pytest.mark.claim("ch12-flash-memory", paper="Dao et al. 2022 §3", results="results/inference-cpu-amd-epyc.json",
                   title="实测：flash_attention 的额外内存",
                   text="CPU、float32、d = 64：朴素实现的峰值等于闭式 (2n² + nd)·4 字节；flash_attention 的峰值在最长的 n（4096）上"
                        "不到一个 n×n 矩阵的 2%；减去输出与 lse 后的额外内存在 n = 1024 与 2048 上逐字节相同，随块大小单调增长")
def test_flash_memory(cpu):
    rows = cpu["probes"]["attention"]["rows"]
    for r in rows:
        if r["method"] == "naive":
            assert r["peak_bytes"] == naive_peak_closed_form(r["n"], r["d"])
        assert r["max_abs_diff_vs_naive"] < 1e-5
    n_max = max(r["n"] for r in rows)
    assert n_max == 4096
    (flash,) = [r for r in rows if r["method"] == "flash" and r["n"] == n_max]
    assert flash["peak_bytes"] < 0.02 * flash["one_nxn_bytes"]
    blocks = cpu["probes"]["flash_blocks"]
    ns = sorted({r["n"] for r in blocks})
    assert ns == [1024, 2048]
    extra = {n: [r["extra_bytes"] for r in sorted(blocks, key=lambda r: r["block"]) if r["n"] == n] for n in ns}
    assert extra[1024] == extra[2048]
    assert all(a < b for a, b in zip(extra[1024], extra[1024][1:]))
    assert_states(CODE, "129MiB", "2%")


@pytest.mark.claim("ch12-gpu-memory", paper="Dao et al. 2022 §3", results="results/inference-cuda-nvidia-h200.json",
                   title="实测：GPU 上四种注意力的额外内存",
                   text="NVIDIA H200、float32、d = 64、n = 256–4096：朴素实现的峰值等于闭式 (2n² + nd)·4 字节；PyTorch 的 SDPA "
                        "在每个 n 上只分配它的输出，恰好 n·d·4 字节；flash_attention 在最长的 n 上不到一个 n×n 矩阵的 2%；"
                        "四种实现的输出与朴素实现相差不到 1e-5")
def test_gpu_memory(gpu):
    assert "H200" in gpu["provenance"]["device"]["name"]
    rows = gpu["probes"]["attention"]["rows"]
    assert sorted({r["n"] for r in rows}) == [256, 512, 1024, 2048, 4096] and {r["d"] for r in rows} == {64}
    for r in rows:
        assert r["max_abs_diff_vs_naive"] < 1e-5
        if r["method"] == "naive":
            assert r["peak_bytes"] == naive_peak_closed_form(r["n"], r["d"])
        if r["method"] == "sdpa":
            assert r["peak_bytes"] == r["n"] * r["d"] * 4
    (flash,) = [r for r in rows if r["method"] == "flash" and r["n"] == 4096]
    assert flash["peak_bytes"] < 0.02 * flash["one_nxn_bytes"]
    assert_states(CODE, "H200", "只分配自己的输出", "2%")


def test_time_reading_names_the_runs_budget(cpu, gpu):
    """The page's reading of the times names how many calls each median is: both files' count."""
    assert cpu["probes"]["attention"]["repeats"] == gpu["probes"]["attention"]["repeats"] == 5
    assert_states(CODE, "一次运行里5次调用的中位数")


@pytest.mark.claim("ch12-kv-decode-speedup", paper="§3", results="results/inference-cpu-amd-epyc.json",
                   title="实测：KV 缓存解码的加速",
                   text="读者的 Transformer（d_model 256、3 层）在单线程 CPU 上贪心解码 32–256 个词：带 KV 缓存的 greedy_decode "
                        "在每个长度上都比每步整段重算快 1.5 倍以上（2.3–8.2 倍，随生成长度增长），两种做法生成的词逐个相同")
def test_decode_speedup(cpu):
    rows = cpu["probes"]["decode"]["rows"]
    assert [r["m"] for r in rows] == [32, 64, 128, 256]
    for r in rows:
        assert r["same_tokens"] is True
        assert r["speedup"] > 1.5
    speedups = [r["speedup"] for r in rows]
    assert f"{min(speedups):.1f}–{max(speedups):.1f}" == "2.3–8.2"
    assert speedups == sorted(speedups)                     # 「随 m 增长」
    assert_states(CODE, "2.3–8.2倍之间", "加速只有2.3倍")
    assert_states(QUESTIONS, "2.3–8.2倍")


@pytest.mark.claim("ch12-kv-quant-error", paper="KV 缓存量化", results="results/inference-cpu-amd-epyc.json",
                   title="实测：量化 KV 缓存的误差",
                   text="读者的 MultiHeadAttention（d_model 512、8 头、n = 1024，随机初始化）上，5 个种子：K、V 按词元 int8 量化后"
                        "注意力输出的相对误差都 < 1%，fp8 e4m3 都 < 3%，int8 的误差更低（5 个种子「一致」）；逐元素误差上界处处成立")
def test_kv_quant_error(cpu):
    rows = cpu["probes"]["kv_quant"]["rows"]
    assert len(rows) == 5
    for r in rows:
        assert r["int8"]["rel_error"] < 0.01 and r["fp8_e4m3"]["rel_error"] < 0.03
        assert r["int8"]["elementwise_bound_holds"] is True
    assert_states(CODE, "1%以内", "3%以内")
    c = compare_seeds([r["fp8_e4m3"]["rel_error"] for r in rows], [r["int8"]["rel_error"] for r in rows],
                      seeds=seeds_of(rows))
    assert (c.verdict, c.sign) == ("一致", -1)
    assert_reading(CODE, "在这组随机的 K、V 上", c, stated=points(c, digits=2))


def per_token_fp8(t: torch.Tensor) -> torch.Tensor:
    """The probe's fp8: per token, scale max|x| to e4m3's largest finite value 448, round, scale back."""
    s = t.abs().amax(-1, keepdim=True) / 448.0
    return (t / s).to(torch.float8_e4m3fn).to(t.dtype) * s


def outlier_quant_errors(seed: int, outlier: float, n: int = 512, d: int = 64) -> dict:
    """Single-head causal attention on Gaussian q, k, v, with key channels 0 and 1 scaled by `outlier` and the
    same query channels divided by it (the scores do not change); relative output error of int8 and fp8 K/V."""
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(n, d, generator=g) for _ in range(3))
    k[:, :2] *= outlier
    q[:, :2] /= outlier
    causal = torch.ones(n, n, dtype=torch.bool).tril()

    def attend(keys, values):
        scores = (q @ keys.T / math.sqrt(d)).masked_fill(~causal, float("-inf"))
        return scores.softmax(-1) @ values

    ref = attend(k, v)
    int8 = lambda t: dequantize_int8(*quantize_int8(t))  # noqa: E731
    return {name: ((attend(f(k), f(v)) - ref).norm() / ref.norm()).item()
            for name, f in (("int8", int8), ("fp8", per_token_fp8))}


@pytest.mark.claim("ch12-kv-quant-outliers", paper="KV 缓存量化；KIVI (arXiv 2402.02750)",
                   title="键有离群通道时，按词元的 int8 不如 fp8",
                   text="单头因果注意力（n = 512、d = 64、高斯 q、k、v），把键的 2 个通道放大 30 倍、查询同两通道缩小 30 倍："
                        "5 个种子上按词元 int8 的输出误差都高于按词元 fp8 e4m3（「一致」）；不放大时 int8 更低（「一致」）")
def test_kv_quant_with_outlier_channels():
    seeds = [0, 1, 2, 3, 4]
    plain = [outlier_quant_errors(s, 1.0) for s in seeds]
    spiky = [outlier_quant_errors(s, 30.0) for s in seeds]
    gaussian = compare_seeds([r["fp8"] for r in plain], [r["int8"] for r in plain], seeds=seeds)
    outliers = compare_seeds([r["fp8"] for r in spiky], [r["int8"] for r in spiky], seeds=seeds)
    assert (gaussian.verdict, gaussian.sign) == ("一致", -1)   # the committed probe's ranking, reproduced
    assert (outliers.verdict, outliers.sign) == ("一致", 1)    # and flipped by two outlier channels
    assert_reading(CODE, "个通道缩小 30 倍（分数不变），5 个种子上 int8 的误差都反而更高", outliers, stated=points(outliers))
    assert_reading(QUESTIONS, "个通道放大 30 倍后，5 个种子上 int8 的误差都反而更高", outliers, stated=points(outliers))


@pytest.mark.claim("ch12-fragmentation", paper="Kwon et al. 2023", results="results/inference-cpu-amd-epyc.json",
                   title="模拟：连续预留与分页的浪费",
                   text="5 个种子、各 1000 个请求（长度 16–512 对数均匀，上限 1024）：连续预留在两种调度下都浪费 > 70% 的缓存位置，"
                        "分页（16 个词元一块）都 < 4%；两种调度下分页的浪费都更低（5 个种子「一致」）")
def test_fragmentation(cpu):
    rows = cpu["probes"]["serving"]["rows"]
    assert len(rows) == 5 and cpu["probes"]["serving"]["config"]["block_size"] == 16
    for r in rows:
        for policy in ("static", "continuous"):
            assert r[policy]["contiguous_waste"] > 0.70 and r[policy]["paged_waste"] < 0.04
    assert_states(CODE, "七成以上", "不到4%")
    assert_states(CACHE, "七成以上", "不到4%")
    waste = {policy: compare_seeds([r[policy]["contiguous_waste"] for r in rows], [r[policy]["paged_waste"] for r in rows],
                                   seeds=seeds_of(rows)) for policy in ("static", "continuous")}
    assert all((c.verdict, c.sign) == ("一致", -1) for c in waste.values())
    assert_reading(CODE, "静态批处理下，分页的浪费在 5 个种子上都更低", waste["static"], stated=points(waste["static"]))
    assert_reading(CODE, "连续批处理下也都更低", waste["continuous"], stated=points(waste["continuous"]))
    for page in (CACHE, QUESTIONS):
        assert_reading(page, "个种子上分页的浪费都更低", waste["continuous"], stated=points(waste["continuous"]))


@pytest.fixture(scope="module")
def loads(cpu) -> list[dict]:
    """The load sweep the page reads: the CPU file's (a deterministic simulation, full preset)."""
    return cpu["probes"]["serving"]["loads"]


def test_the_committed_load_sweep_is_what_the_code_computes(cpu, loads):
    """The file's sweep is the simulation of the committed code: a stale file (code changed, not rerun) fails here."""
    assert loads == inference.serving_load_rows(cpu["probes"]["serving"]["config"])


@pytest.mark.claim("ch12-continuous-batching", paper="Yu et al. 2022 (Orca)", results="results/inference-cpu-amd-epyc.json",
                   title="模拟：连续批处理 vs 静态批处理，过载与撑得住的负载",
                   text="同一条请求序列（5 个种子、各 1000 个请求、批上限 16）。到达间隔平均 8 步时两种调度都过载：请求数从 500 "
                        "加到 1000，两者的平均延迟都增长 40% 以上；这时每步词数之比 2.8–3.0 倍是两者的饱和吞吐之比（静态约 5.2、"
                        "连续约 15 个词/步），延迟随序列长度增长，不是稳态的量。两者都撑得住（所有种子上延迟增长 < 10%）的最密"
                        "间隔是 32 步：那里两者每步的词数都约等于到达的负载（约 4.3），连续批处理的平均延迟低 2.5–2.8 倍"
                        "（log10 差 5 个种子「一致」）；静态批处理从 32 步起撑得住，连续批处理从 16 步起")
def test_continuous_batching(cpu, loads):
    rows = cpu["probes"]["serving"]["rows"]
    assert cpu["probes"]["serving"]["config"]["mean_gap"] == 8.0
    for r in rows:
        s, c = r["static"], r["continuous"]
        assert s["tokens"] == c["tokens"]
        assert 2.8 <= c["tokens_per_step"] / s["tokens_per_step"] <= 3.0
    assert 5.1 < min(r["static"]["tokens_per_step"] for r in rows) < max(r["static"]["tokens_per_step"] for r in rows) < 5.5
    assert 14.5 < min(r["continuous"]["tokens_per_step"] for r in rows) < 15.5
    assert_states(CODE, "2.8–3.0倍")
    seeds = seeds_of(rows)
    throughput = compare_seeds([r["static"]["tokens_per_step"] for r in rows],
                               [r["continuous"]["tokens_per_step"] for r in rows], seeds=seeds)
    assert (throughput.verdict, throughput.sign) == ("一致", 1)
    words = describe(throughput, " 个词", digits=2)
    for page in (CODE, CACHE, QUESTIONS):
        assert_reading(page, "每步产出的词数都更多" if page != QUESTIONS else "每步的词数都更多", throughput, stated=words)

    # 负载扫描：过载 = 请求数加倍时延迟也跟着涨；撑得住 = 每个种子上涨不到 10%
    gaps = sorted({x["mean_gap"] for x in loads})
    assert gaps == [8.0, 16.0, 24.0, 32.0, 48.0, 64.0]
    held = {p: [g for g in gaps if ch12_inference.sustained(loads, p, g)] for p in ("static", "continuous")}
    assert held == {"static": [32.0, 48.0, 64.0], "continuous": [16.0, 24.0, 32.0, 48.0, 64.0]}
    at8 = {(x["seed"], x["requests"]): x for x in loads if x["mean_gap"] == 8.0}
    for policy in ("static", "continuous"):
        assert all(at8[(s, 1000)][policy]["mean_latency"] > 1.4 * at8[(s, 500)][policy]["mean_latency"] for s in seeds)
    at8_full = [x for x in loads if x["mean_gap"] == 8.0 and x["requests"] == 1000]
    assert [x["static"]["mean_latency"] for x in at8_full] == [r["static"]["mean_latency"] for r in rows]  # same run as the file
    at32 = [x for x in loads if x["mean_gap"] == 32.0 and x["requests"] == 1000]
    assert [x["seed"] for x in at32] == seeds
    for x in at32:
        assert abs(x["static"]["tokens_per_step"] - x["offered_tokens_per_step"]) < 0.25
        assert abs(x["continuous"]["tokens_per_step"] - x["offered_tokens_per_step"]) < 0.25
    ratios = [x["static"]["mean_latency"] / x["continuous"]["mean_latency"] for x in at32]
    assert f"{min(ratios):.1f}–{max(ratios):.1f}" == "2.5–2.8"
    latency = compare_seeds([math.log10(x["static"]["mean_latency"]) for x in at32],
                            [math.log10(x["continuous"]["mean_latency"]) for x in at32], seeds=seeds)
    assert (latency.verdict, latency.sign) == ("一致", -1)
    decades = describe(latency, " 个数量级", digits=2)
    assert_states(CODE, "2.5–2.8倍", "过载", "撑得住")
    for page in (CODE, CACHE, QUESTIONS):
        assert_reading(page, "平均延迟都更低", latency, stated=decades)


@pytest.mark.slow
def test_renderer_writes_every_output(tmp_path):
    from snippets.results import load_all
    results = load_all()
    for render in ch12_inference.RENDERERS:
        render(results, tmp_path)
    names = {p.name for p in tmp_path.iterdir()}
    assert {"ch12-roofline.svg", "ch12-attention-memory.svg", "ch12-attention.md", "ch12-hbm.md",
            "ch12-kv-configs.md", "ch12-flash-blocks.md", "ch12-decode.md", "ch12-kv-quant.md",
            "ch12-serving.md", "ch12-serving-loads.md"} <= names
    text = (tmp_path / "ch12-attention.md").read_text(encoding="utf-8")
    assert "**GPU。**" in text and GPU_FILES[0].name in text  # the committed GPU file, with its provenance
    cpu_only = [r for r in results if r["provenance"]["device"]["type"] == "cpu"]
    ch12_inference.render_attention(cpu_only, tmp_path)
    text = (tmp_path / "ch12-attention.md").read_text(encoding="utf-8")
    assert "GPU 的结果文件还没有" in text and "**GPU。**" not in text  # no GPU file: no GPU number, and the page says so
    configs = (tmp_path / "ch12-kv-configs.md").read_text(encoding="utf-8")
    assert "| Llama-3.1-8B | 128 KiB | 512 MiB | 16 GiB | 128 GiB |" in configs


@pytest.mark.slow
def test_tiny_probe_run(tmp_path):
    out = tmp_path / "inference-tiny.json"
    assert inference.main(["--preset", "tiny", "--out", str(out), "--no-progress"]) == 0
    data = load_results(out)
    assert data["preset"] == "tiny" and all(r["same_tokens"] for r in data["probes"]["decode"]["rows"])


def test_roofline_points_show_on_the_dark_page(tmp_path):
    """The marked intensities (解码 b=1 …) are drawn in the text colour, which the dark copy swaps for a
    light grey; a fixed dark grey vanished on the dark page."""
    from sitebuild.generate.render._style import dark_variant  # what sitebuild.generate.figures writes as -dark.svg

    ch12_inference.render_roofline([], tmp_path)
    dark = dark_variant((tmp_path / "ch12-roofline.svg").read_text(encoding="utf-8")).lower()
    assert "#333333" not in dark
