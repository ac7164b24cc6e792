"""Chapter 13's probe: the committed CPU and GPU results files against what the page states, a tiny smoke run
into tmp_path (slow), and the renderer with and without a GPU file."""

from __future__ import annotations

from pathlib import Path

import pytest

from sitebuild.generate.render import ch13_long_context
from snippets.probes import long_context
from snippets.results import load_results
from snippets.stats import compare_seeds, describe
from tests.support.committed import check_device_files, one_file
from tests.support.pages import assert_states, chapter
from tests.support.verdicts import assert_reading

CODE = chapter("13") + "experiments.md"  # the measurements' page (split off code.md)
ROOT = Path(__file__).resolve().parents[2]
FILES = sorted((ROOT / "results").glob("long-context-cpu-*.json"))
GPU_FILES = sorted((ROOT / "results").glob("long-context-cuda-*.json"))
BLOCK = 512  # the CUDA caching allocator rounds every allocation up to a multiple of 512 bytes


def rounded(nbytes: int) -> int:
    return -(-nbytes // BLOCK) * BLOCK


@pytest.fixture(scope="module")
def cpu() -> dict:
    data = one_file(FILES, long_context.KIND)  # validates against results/schema/long-context-probes.schema.json
    assert data["provenance"]["threads"] == 1
    assert data["probes"]["recall"]["config"] == long_context.PRESETS["full"]["recall"]
    return data


@pytest.fixture(scope="module")
def gpu() -> dict:
    data = one_file(GPU_FILES, long_context.KIND)
    full = {k: v for k, v in long_context.PRESETS["full"]["recall"].items() if k != "fit_steps"}
    assert data["probes"]["recall"]["config"] == full  # the GPU file predates the fitted state
    return data


def test_gpu_numbers_come_from_a_gpu():
    """A results file is named after the device that wrote it; a CUDA file names its GPU, driver and CUDA
    version and was timed with CUDA events: a GPU number exists only if a GPU produced it."""
    check_device_files("long-context", lambda data: data["probes"]["scaling"]["timer"])


@pytest.mark.claim("ch13-scaling", paper="§4 表 1", results="results/long-context-cpu-amd-epyc.json",
                   title="实测：内存随 n 的增长",
                   text="CPU、float32、d = 64、n = 256 到 4096：n 每翻一倍，因果全注意力的峰值内存增长 ≥ 3.9 倍（∝ n²），"
                        "滑动窗口、线性（递推、分块）与增量规则（分块）≤ 2.1 倍（∝ n）；n = 4096 时全注意力的峰值是"
                        "分块线性注意力的 50 倍以上，分块线性注意力与滑动窗口也更快")
def test_scaling(cpu):
    s = cpu["probes"]["scaling"]
    by = {(r["method"], r["n"]): r for r in s["rows"]}
    ns = sorted({r["n"] for r in s["rows"]})
    assert ns == [256, 512, 1024, 2048, 4096]
    for a, b in zip(ns, ns[1:]):
        assert by[("full", b)]["peak_bytes"] >= 3.9 * by[("full", a)]["peak_bytes"]
        for m in ("window", "linear_recurrent", "linear_chunked", "delta_chunked"):
            assert by[(m, b)]["peak_bytes"] <= 2.1 * by[(m, a)]["peak_bytes"], m
    assert by[("full", 4096)]["peak_bytes"] > 50 * by[("linear_chunked", 4096)]["peak_bytes"]
    for m in ("linear_chunked", "window"):
        assert by[(m, 4096)]["time_s"] < by[("full", 4096)]["time_s"]
    assert_states(CODE, "3.9", "50")


@pytest.mark.claim("ch13-decode-constant", paper="Katharopoulos et al. 2020 §3.4",
                   results="results/long-context-cpu-amd-epyc.json",
                   title="实测：线性注意力解码一步的内存与 n 无关",
                   text="d = 64、float32：读过 n = 512 到 32768 个词元后再解码一个词元，线性注意力一步的峰值额外内存逐字节相同；"
                        "全注意力一步的峰值随 n 增长（32768 时是 512 时的 50 倍以上），它要存的 KV 缓存 2nd 个数也是")
def test_decode_constant(cpu):
    rows = cpu["probes"]["decode_step"]
    assert [r["n"] for r in rows] == [512, 2048, 8192, 32768]
    assert len({r["linear_step_bytes"] for r in rows}) == 1
    assert rows[-1]["full_step_bytes"] > 50 * rows[0]["full_step_bytes"]
    for r in rows:
        assert r["kv_cache_bytes"] == 4 * long_context.decode_state_elems(r["n"], r["d"], "full")
        assert r["state_bytes"] == 4 * long_context.decode_state_elems(r["n"], r["d"], "linear")


@pytest.mark.claim("ch13-recall", paper="Schlag et al. 2021; Arora et al. 2023",
                   results="results/long-context-cpu-amd-epyc.json",
                   title="实测：联想回忆",
                   text="d_k = 16、5 个种子、不训练、按最近的码本项判对：softmax 注意力在 N = 4 到 128 对上全部回忆正确；"
                        "最小二乘状态（均方误差最小）在 N ≤ 32 时平均回忆率 1.000，N = 64 时降到 0.9 以下、N = 128 时 0.5 以下；"
                        "朴素的 Σvkᵀ 在 N = 128 时 0.4 以下；同样大小（64×16）的状态 S = C⁺K 在 N ≤ 64 时每个种子都是 1.000，"
                        "从它出发拟合回忆率的状态在 N = 128 时每个种子也是 1.000：这种判对下的回忆率超过 d_k，量的不是精确存储；"
                        "读一遍的增量规则 N ≥ 32 时比朴素累加更低（「一致」），N = 16 时平均更低（「多数」）")
def test_recall(cpu):
    means = ch13_long_context.recall_means(cpu)
    assert sorted(means) == [4, 8, 16, 32, 64, 128]
    assert all(v["softmax"] == 1.0 for v in means.values())
    assert all(means[n]["best_linear"] == 1.0 for n in (4, 8, 16, 32))
    assert means[64]["best_linear"] < 0.9 and means[128]["best_linear"] < 0.5
    assert means[128]["linear"] < 0.4
    for n in means:
        assert means[n]["best_linear"] >= means[n]["linear"] - 1e-9
    rows = cpu["probes"]["recall"]["rows"]
    assert all(r["codebook_linear"] == 1.0 for r in rows if r["n_pairs"] <= 64)   # C⁺K：码本打分 = KKᵀ
    assert all(r["fitted_linear"] == 1.0 for r in rows)                          # N = 128 = 8·d_k 也全对
    assert means[128]["codebook_linear"] < 1.0                                   # N > d_v 时 C⁺K 不再够
    assert_states(CODE, "最小二乘状态", "均方误差", "C^+K", "1.000")
    assert_states(CODE, "0.9", "0.5", "0.4")

    def delta_vs_linear(n):
        mine = [r for r in rows if r["n_pairs"] == n]
        return compare_seeds([r["linear"] for r in mine], [r["delta"] for r in mine], seeds=[r["seed"] for r in mine],
                             resolution=1 / n)                                   # 回忆率是 n 对里数出来的

    verdicts = {n: delta_vs_linear(n) for n in (16, 32, 64, 128)}
    assert all((verdicts[n].verdict, verdicts[n].sign) == ("一致", -1) for n in (32, 64, 128))
    assert (verdicts[16].verdict, verdicts[16].n_agree, verdicts[16].n) == ("多数", 4, 5)
    assert_reading(CODE, "个种子上都比朴素累加更低", verdicts[128], stated=describe(verdicts[128], "", digits=3))
    assert_reading(CODE, "时它平均更低，1 个种子上两者都是", verdicts[16], stated=describe(verdicts[16], "", digits=3))


@pytest.mark.claim("ch13-gpu-memory", paper="§4 表 1", results="results/long-context-cuda-nvidia-h200.json",
                   title="实测：GPU 上的内存与 CPU 相同，只差分配器的取整",
                   text="NVIDIA H200、float32、d = 64、n = 256 到 4096，与 CPU 同一个探针、同样的网格：因果全注意力、"
                        "分块线性注意力与分块增量规则的峰值与 CPU 逐字节相同；滑动窗口多出不到一个 512 字节的块；"
                        "逐步递推的线性注意力恰好多 n·(512 − 4d) 字节（n 个 4d 字节的输出各占一个 512 字节的块）；"
                        "所以 n 每翻一倍，全注意力仍增长 ≥ 3.9 倍、其余 ≤ 2.1 倍。解码一步：线性一步、KV 缓存与状态逐字节相同，"
                        "全注意力一步多 512 − 4d 字节（一行输出）；"
                        "联想回忆的每一行与 CPU 相同")
def test_gpu_memory(gpu, cpu):
    assert gpu["provenance"]["device"]["type"] == "cuda" and "H200" in gpu["provenance"]["device"]["name"]
    g, c = gpu["probes"]["scaling"], cpu["probes"]["scaling"]
    assert {k: g[k] for k in ("d", "window", "chunk", "repeats")} == {k: c[k] for k in ("d", "window", "chunk", "repeats")}
    d = g["d"]
    assert d == 64 and g["repeats"] == 3
    gby, cby = ({(r["method"], r["n"]): r["peak_bytes"] for r in s["rows"]} for s in (g, c))
    assert gby.keys() == cby.keys()
    ns = sorted({n for _, n in gby})
    assert ns == [256, 512, 1024, 2048, 4096]
    for n in ns:
        for m in ("full", "linear_chunked", "delta_chunked"):  # every tensor they allocate is a multiple of 512 B
            assert gby[(m, n)] == cby[(m, n)], (m, n)
        assert 0 < gby[("window", n)] - cby[("window", n)] < BLOCK, n  # block masks of w(2w-1) booleans round up
        # one (d,) output per token, 4d bytes, each in its own 512-byte block until torch.stack
        assert gby[("linear_recurrent", n)] - cby[("linear_recurrent", n)] == n * (rounded(4 * d) - 4 * d), n
    for a, b in zip(ns, ns[1:]):  # chapter 13's memory reading holds on the GPU as well
        assert gby[("full", b)] >= 3.9 * gby[("full", a)]
        for m in ("window", "linear_recurrent", "linear_chunked", "delta_chunked"):
            assert gby[(m, b)] <= 2.1 * gby[(m, a)], m
    gd, cd = gpu["probes"]["decode_step"], cpu["probes"]["decode_step"]
    assert [r["n"] for r in gd] == [r["n"] for r in cd]
    for a, b in zip(gd, cd):
        for key in ("linear_step_bytes", "kv_cache_bytes", "state_bytes"):
            assert a[key] == b[key], key
        # scores and weights are n·4 bytes (a multiple of 512); the one output row, 4d bytes, fills a block
        assert a["full_step_bytes"] - b["full_step_bytes"] == rounded(4 * d) - 4 * d
    shared = ch13_long_context.same_recall(gpu, cpu)  # every row equal on the columns both files measured
    assert shared == ["softmax", "linear", "delta", "best_linear"]
    assert_states(CODE, "H200", "512字节", f"{4 * d}字节的输出", "逐字节相同", f"{g['repeats']}次调用", f"d={d}",
                  "n\\le4096")


def test_gpu_peaks_are_the_cpu_allocations_rounded_to_512_bytes(gpu, monkeypatch):
    """The page's explanation of the GPU-CPU differences, checked: run the probe's own code on the CPU, replay
    its allocator's events with every allocation rounded up to 512 bytes, and get the GPU file's peaks exactly.
    (Not the decode step: there the CPU also allocates the 1/√d scalar, which a GPU run keeps on the host.)"""
    from torch.profiler import ProfilerActivity, profile

    from snippets.probes import memory

    def rounded_peak(fn, device="cpu"):
        with memory.one_thread(), profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
            out = fn()
            del out
        running = peak = 0
        for _, nbytes in sorted(memory._kineto_memory_events(prof), key=lambda e: e[0]):
            running += rounded(abs(nbytes)) * (1 if nbytes > 0 else -1)
            peak = max(peak, running)
        return {"peak_bytes": peak}

    monkeypatch.setattr(long_context, "peak_allocated_bytes", rounded_peak)
    s = gpu["probes"]["scaling"]
    ns = [256, 512]  # the probe's inputs are seeded per run: the first n's are the GPU file's first inputs
    rows = long_context.scaling_rows(ns, s["d"], s["window"], s["chunk"], 1, "cpu", long_context.Timer("cpu"))
    want = {(r["method"], r["n"]): r["peak_bytes"] for r in s["rows"] if r["n"] in ns}
    assert {(r["method"], r["n"]): r["peak_bytes"] for r in rows} == want


@pytest.mark.claim("ch13-gpu-time", paper="§4 表 1", results="results/long-context-cuda-nvidia-h200.json",
                   title="实测：GPU 上全注意力在这组规模上最快",
                   text="NVIDIA H200、float32、d = 64、batch 1、3 次调用的中位数（CUDA 事件计时）：n = 256 到 4096 的每个 n 上，"
                        "因果全注意力比滑动窗口、线性（递推、分块）与增量规则（分块）都快，逐步递推最慢；n 长 16 倍，全注意力的时间不到原来的 2 倍。"
                        "CPU 上 n = 4096 时次序相反：分块线性注意力与滑动窗口比全注意力快")
def test_gpu_time_order(gpu, cpu):
    ns, by = ch13_long_context._scaling_grid(gpu)
    assert ns == [256, 512, 1024, 2048, 4096]
    others = ("window", "linear_recurrent", "linear_chunked", "delta_chunked")
    for n in ns:
        t = {m: by[(m, n)]["time_s"] for m in long_context.METHODS}
        assert all(t["full"] < t[m] for m in others), n
        assert max(t, key=t.get) == "linear_recurrent", n
    assert ns[-1] // ns[0] == 16 and by[("full", ns[-1])]["time_s"] < 2 * by[("full", ns[0])]["time_s"]
    _, cby = ch13_long_context._scaling_grid(cpu)
    for m in ("linear_chunked", "window"):  # the opposite order on the CPU at the longest n
        assert cby[(m, 4096)]["time_s"] < cby[("full", 4096)]["time_s"]
    assert_states(CODE, "n从256到4096", "长了16倍", "不到原来的2倍", "逐步递推都最慢",
                  "n=4096时它慢于分块线性注意力与滑动窗口")


@pytest.mark.slow
def test_tiny_smoke(tmp_path):
    out = tmp_path / "lc.json"
    assert long_context.main(["--preset", "tiny", "--out", str(out), "--no-progress"]) == 0
    data = load_results(out)
    assert data["preset"] == "tiny" and data["probes"]["recall"]["rows"]


def test_renderer(tmp_path, cpu, gpu):
    results = [{**cpu, "_file": FILES[0].name}]
    for render in ch13_long_context.RENDERERS:
        render(results, tmp_path)
    assert "1.000" in (tmp_path / "ch13-recall.md").read_text(encoding="utf-8")
    empty = tmp_path / "empty"
    for render in ch13_long_context.RENDERERS:
        render([], empty)
    assert (empty / "ch13-scaling.svg").exists()


def test_renderer_gpu_section_only_from_a_gpu_file(tmp_path, cpu, gpu):
    """With the committed CUDA file: a GPU section whose numbers and provenance are that file's; without it,
    the pending note and no GPU number."""
    from snippets.results import load_all
    results = load_all()
    for render in ch13_long_context.RENDERERS:
        render(results, tmp_path)
    text = (tmp_path / "ch13-scaling.md").read_text(encoding="utf-8")
    gpu_part = text.split("**GPU。**", 1)[1]
    assert GPU_FILES[0].name in gpu_part and "GPU 的结果文件还没有" not in text
    assert "| 因果全注意力 | 0 | 0 | 0 | 0 | 0 |" in gpu_part  # the byte differences from the CPU file
    assert "+65,536" in gpu_part  # linear_recurrent at n = 256: 256·(512 − 256)
    t_full = f"{1e3 * ch13_long_context._scaling_grid(gpu)[1][('full', 256)]['time_s']:.3g}"
    assert f"| 因果全注意力 | {t_full} |" in gpu_part
    for name in ("ch13-decode-step.md", "ch13-recall.md"):
        assert "**GPU。** NVIDIA H200" in (tmp_path / name).read_text(encoding="utf-8"), name
    assert "全注意力一步每行都多 256 B" in (tmp_path / "ch13-decode-step.md").read_text(encoding="utf-8")
    assert "逐项相同" in (tmp_path / "ch13-recall.md").read_text(encoding="utf-8")

    cpu_only = [r for r in results if r["provenance"]["device"]["type"] == "cpu"]
    for render in ch13_long_context.RENDERERS:
        render(cpu_only, tmp_path)
    for name in ("ch13-scaling.md", "ch13-decode-step.md", "ch13-recall.md"):
        text = (tmp_path / name).read_text(encoding="utf-8")
        assert "**GPU。**" not in text and "H200" not in text and "cuda" not in text.split("GPU 的结果文件")[0], name
    assert "GPU 的结果文件还没有" in (tmp_path / "ch13-scaling.md").read_text(encoding="utf-8")
