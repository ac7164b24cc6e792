"""顺序操作数：make_fx 前向图的关键路径。注意力与卷积与 n 无关；手写 RNN/LSTM 单元每步加固定节点数。"""

import pytest

from snippets.probes.sequential import per_step, trace_fused_lstm, trace_layer


@pytest.mark.claim(
    "ch01-c08",
    paper="§4 表 1",
    title="顺序操作数：关键路径的长度",
    text="用 make_fx 追踪前向图、数关键路径：自注意力、SDPA、受限注意力和卷积在 n = 16 与 n = 64 时"
    "节点数相同（O(1) 顺序操作），手写 RNN/LSTM 单元每多一个时间步就多固定个节点（O(n)）",
)
def test_critical_path_constant_for_attention_and_conv_linear_for_recurrent():
    for kind in ("attention", "sdpa", "restricted", "conv"):
        a, b = trace_layer(kind, 16), trace_layer(kind, 64)
        assert a["critical_path"] == b["critical_path"], kind
        assert a["critical_path_compute"] == b["critical_path_compute"], kind
    # the page's cells: RNN h_prev @ W_hhᵀ → + x_t W_xhᵀ → + b → tanh is 4 nodes per step;
    # LSTM: mm → + → + b → chunk → σ(f) → f ⊙ c → + i ⊙ g → tanh(c) → o ⊙ … is 10
    for kind, expect in (("rnn", 4), ("lstm", 10)):
        rows = [trace_layer(kind, n) for n in (4, 8, 12)]
        rule = per_step(rows)
        assert rule["linear"], (kind, rule)
        assert rule["per_step"] == expect, (kind, rule)
        assert [r["critical_path"] for r in rows] == [expect * n + rule["intercept"] for n in (4, 8, 12)]


def test_gru_cell_grows_by_a_fixed_count_per_step():
    rule = per_step([trace_layer("gru", n) for n in (4, 8)])
    assert rule["linear"] and rule["per_step"] > 0


def test_fused_lstm_hides_its_loop_in_one_node():
    a, b = trace_fused_lstm(4), trace_fused_lstm(32)
    assert a["critical_path"] == b["critical_path"]  # 看起来是常数：算子粒度的假象
