"""顺序操作数（sequential operations）：前向计算图的关键路径（critical path）。

做法：用 ``torch.fx.experimental.proxy_tensor.make_fx`` 把一层的前向追踪成 aten 级的
FX 图，按拓扑序求最长路径（每个 ``call_function`` 节点算 1；输入 ``placeholder`` 和
权重常量 ``get_attr`` 算 0）。关键路径上的节点必须一个接一个执行，其余节点原则上可以并行，
所以它就是"顺序操作数"的一个可数的定义。

报告两个数：

- ``critical_path``：所有 aten 节点；
- ``critical_path_compute``：去掉只改元数据的视图节点（``view``、``transpose``、``expand``、
  ``select`` ……）后的节点数。

结果：注意力、SDPA、受限注意力、卷积的关键路径与 n 无关（常数）；手写 RNN/LSTM/GRU 单元
每一步增加固定的节点数（Elman：``mm → add → tanh``，每步 3 个）。

注意：融合的 ``nn.LSTM`` 把整个时间循环藏在**一个**节点里（CPU 上是 oneDNN 的 RNN 算子），
所以它的关键路径看起来是常数——这是算子粒度造成的假象，不是真的 O(1)。这里把它也测出来，
作为反例记录（``fused_lstm``）。
"""

from __future__ import annotations

import torch
from torch.fx.experimental.proxy_tensor import make_fx

from .layers import make_layer

# 只改变张量元数据（不做计算）的 aten 算子名
_VIEW_OPS = {
    "view", "_unsafe_view", "reshape", "transpose", "t", "permute", "expand", "select", "slice",
    "unsqueeze", "squeeze", "unfold", "alias", "split", "split_with_sizes", "chunk", "as_strided",
    "detach", "_reshape_alias", "unbind", "narrow", "diagonal", "lift_fresh", "clone",
}


def _op_name(node) -> str:
    target = node.target
    name = getattr(target, "__name__", str(target))  # 例如 "view.default"
    packet = getattr(target, "_overloadpacket", None)
    if packet is not None:
        name = getattr(packet, "__name__", name)
    return name.split(".")[0]


def critical_path(graph_module) -> dict:
    """FX 图的最长路径（节点数），以及去掉视图节点后的最长路径。"""
    depth_all: dict = {}
    depth_compute: dict = {}
    n_nodes = 0
    ops: dict[str, int] = {}
    for node in graph_module.graph.nodes:
        preds = node.all_input_nodes
        base_all = max((depth_all[p] for p in preds), default=0)
        base_cmp = max((depth_compute[p] for p in preds), default=0)
        if node.op == "call_function":
            n_nodes += 1
            name = _op_name(node)
            ops[name] = ops.get(name, 0) + 1
            depth_all[node] = base_all + 1
            depth_compute[node] = base_cmp + (0 if name in _VIEW_OPS else 1)
        else:  # placeholder / get_attr / output
            depth_all[node] = base_all
            depth_compute[node] = base_cmp
    out = [nd for nd in graph_module.graph.nodes if nd.op == "output"][0]
    return {"critical_path": depth_all[out], "critical_path_compute": depth_compute[out],
            "nodes": n_nodes, "ops": dict(sorted(ops.items()))}


def trace_layer(kind: str, n: int, d: int = 8, **kw) -> dict:
    """追踪一层（batch 1）的前向，返回关键路径。"""
    layer = make_layer(kind, d, **kw)
    inputs = layer.make_inputs(1, n, generator=torch.Generator().manual_seed(0))
    gm = make_fx(layer.fn)(*inputs)
    res = critical_path(gm)
    res.update(layer=kind, n=n, d=d)
    return res


def trace_fused_lstm(n: int, d: int = 8) -> dict:
    """融合的 ``nn.LSTM``：整个循环在一个节点里，关键路径与 n 无关（假象）。"""
    lstm = torch.nn.LSTM(d, d, bias=False, batch_first=True)
    x = torch.randn(1, n, d)
    with torch.no_grad():
        gm = make_fx(lambda x: lstm(x)[0])(x)
    res = critical_path(gm)
    res.update(layer="nn.LSTM (fused)", n=n, d=d)
    return res


SEQ_KINDS = ("attention", "sdpa", "restricted", "conv", "rnn", "lstm", "gru")


def per_step(rows_for_kind: list[dict], key: str = "critical_path") -> dict:
    """由 (n, 深度) 求每步增量：相邻 n 的差分都相等时给出整数斜率与截距。"""
    pts = sorted((r["n"], r[key]) for r in rows_for_kind)
    diffs = [(b[1] - a[1]) / (b[0] - a[0]) for a, b in zip(pts, pts[1:])]
    constant_rate = all(abs(x - diffs[0]) < 1e-12 for x in diffs)
    rate = diffs[0] if diffs else 0.0
    if constant_rate and float(rate).is_integer():
        intercept = pts[0][1] - int(rate) * pts[0][0]
        return {"per_step": int(rate), "intercept": int(intercept), "linear": True,
                "formula": (f"{int(rate)}n+{intercept}" if rate else f"{pts[0][1]} (constant)")}
    return {"per_step": rate, "intercept": None, "linear": False, "formula": None}


def run(ns, *, d: int = 8, progress=None) -> dict:
    rows = []
    for kind in SEQ_KINDS:
        for n in ns:
            rows.append(trace_layer(kind, n, d))
        if progress:
            progress(1)
    fused = [trace_fused_lstm(n, d) for n in ns]
    summary = {}
    for kind in SEQ_KINDS:
        rk = [r for r in rows if r["layer"] == kind]
        summary[kind] = {"all": per_step(rk, "critical_path"),
                         "compute": per_step(rk, "critical_path_compute")}
    summary["nn.LSTM (fused)"] = {"all": per_step(fused, "critical_path"),
                                  "compute": per_step(fused, "critical_path_compute")}
    for r in rows + fused:  # 算子清单只保留最小的 n（其余只是重复）
        if r["n"] != min(ns):
            r.pop("ops", None)
    return {
        "definition": ("longest path (in aten call_function nodes) of the forward graph traced with "
                       "torch.fx.experimental.proxy_tensor.make_fx, batch 1; 'compute' excludes view ops"),
        "d": d, "rows": rows, "fused_lstm": fused, "summary": summary,
        "note": "fused nn.LSTM hides its time loop inside one graph node, so its critical path looks constant",
    }
