"""内存探针：朴素注意力的峰值分配与闭式逐字节相等；SDPA 与在线 softmax 不到一个 n×n 矩阵。"""

import pytest
import torch

from snippets.probes.memory import (
    attention_matrix_bytes,
    measure,
    naive_peak_closed_form,
)


@pytest.mark.parametrize("n", [256, 257, 1024])
def test_naive_attention_peak_equals_closed_form(n):
    rows = {r["method"]: r for r in measure(n, 64)}
    naive = rows["naive"]
    # 分数与 softmax 两个 n×n 同时存活，再加输出 n×d：(2n² + nd)·4 字节
    assert naive["peak_bytes"] == naive_peak_closed_form(n, 64, 4) == 8 * n * n + 4 * n * 64
    assert naive["net_bytes"] == 0  # 输出释放后回到基线


@pytest.mark.parametrize("n", [1024, 2048])
def test_sdpa_and_online_softmax_stay_below_one_nxn_matrix(n):
    rows = {r["method"]: r for r in measure(n, 64, block=256)}
    one = n * n * 4
    assert "online" in rows, "snippets.attention.online_softmax_attention 不可用"
    assert rows["sdpa"]["peak_bytes"] < one
    assert rows["online"]["peak_bytes"] < one
    assert rows["naive"]["peak_bytes"] > 2 * one


@pytest.mark.claim(
    "ch01-c14",
    paper="§4 Table 1",
    text="一个 n×n 注意力矩阵占 n²·b 字节：n = 512、fp32 为 1,048,576 B（1 MiB）；"
    "n = 131072（128K）时 fp32 为 64 GiB、2 字节类型为 32 GiB",
)
def test_attention_matrix_bytes():
    assert attention_matrix_bytes(512, 4) == torch.empty(512, 512, dtype=torch.float32).nbytes == 1_048_576
    assert attention_matrix_bytes(512, 2) == torch.empty(512, 512, dtype=torch.float16).nbytes == 524_288
    assert attention_matrix_bytes(1024, 4) == torch.empty(1024, 1024, dtype=torch.float32).nbytes == 4_194_304
    assert attention_matrix_bytes(1024, 2) == torch.empty(1024, 1024, dtype=torch.bfloat16).nbytes == 2_097_152
    assert attention_matrix_bytes(131072, 4) == 64 * 2**30
    assert attention_matrix_bytes(131072, 2) == 32 * 2**30
    assert round(attention_matrix_bytes(128000, 4) / 2**30, 2) == 61.04
    assert round(attention_matrix_bytes(128000, 2) / 2**30, 2) == 30.52


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_peak_is_at_least_the_closed_form():
    n, d = 2048, 64
    rows = {r["method"]: r for r in measure(n, d, device="cuda")}
    closed = naive_peak_closed_form(n, d, 4)
    # 缓存分配器按 512 B 取整：不少于闭式，多出的不超过每次分配 512 B
    assert closed <= rows["naive"]["peak_bytes"] <= closed + 8 * 512
    assert rows["sdpa"]["peak_bytes"] < n * n * 4
