"""第 13 章的探针：长上下文注意力的代价与一个联想回忆（associative recall）小实验，
写 ``results/long-context-<device-tag>.json``。

    python -m snippets.probes.long_context --device cpu|cuda --preset tiny|quick|full [--out PATH]

测什么（每一项都调用页面上的代码，float32，batch·heads = 1）：

- ``scaling``：随 n 变化的时间（``repeats`` 次的中位数，CPU 单线程）与峰值额外内存（:mod:`snippets.probes.memory`）：
  因果全注意力（第 03 章的 ``scaled_dot_product_attention`` + 因果掩码）、``sliding_window_attention``（窗口 w）、
  ``linear_attention_recurrent``、``linear_attention_chunked``（块 C）、``delta_rule_chunked``（块 C）。
- ``decode_step``：已经读过 n 个词元后再解码一个词元的峰值额外内存：全注意力读整段 KV 缓存，
  线性注意力只读 d_v × d_k 的状态。
- ``recall``：不训练的联想回忆。N 对（键，值），键是 d_k 维随机单位向量，值从 N 个随机单位向量的码本里取；
  写入后用每个键去查，输出与码本中哪个值最像（余弦）就算回忆出哪个。三种记忆：softmax 注意力（保留全部
  N 对，查询乘上锐度 ``sharpness``），线性注意力的状态 S = Σ v kᵀ，增量规则（β = 1，读一遍）的状态，
  最小二乘解 S_ls = argmin Σ‖S k_i − v_i‖²（均方误差最小，不是回忆率最高），以及按码本设计的状态
  S_c = C⁺K（C 是 N × d_v 的码本）：它让码本打分 c_jᵀ S_c k_i = k_jᵀk_i，N ≤ d_v 时每个键都读对，
  说明这个按最近码本判对的回忆率量的是分类，不是 d_k 对的精确存储；再从 S_c 出发，用 Adam 在码本打分的
  交叉熵上走 ``fit_steps`` 步（``fit_linear_state``），看一个 d_v × d_k 状态在这种判对下最多能到多少。几个种子。

闭式（页面的表与「代价」部件共用）：``attention_flops``、``linear_layer_flops``、``decode_state_elems``。

预设：``quick`` 在 2 核 CPU 上 < 60 s，``full`` < 5 min，``tiny`` 只给冒烟测试。``--device cuda`` 在 GPU 上运行
（CUDA 事件计时，内存用 ``max_memory_allocated``），已提交的一份是 ``results/long-context-cuda-nvidia-h200.json``；
没有 GPU 时直接报错退出，不写任何文件。
"""

from __future__ import annotations

import sys
import time

import torch

from snippets import results as R
from snippets.attention import scaled_dot_product_attention
from snippets.linear_attention import (delta_rule_chunked, delta_rule_step, linear_attention_chunked,
                                       linear_attention_recurrent)
from snippets.probes._cli import probe_main, start
from snippets.probes.memory import peak_allocated_bytes
from snippets.probes.timer import Timer, median_time
from snippets.sparse_attention import sliding_window_attention

KIND = "long-context-probes"
SCHEMA_VERSION = 1
METHODS = ("full", "window", "linear_recurrent", "linear_chunked", "delta_chunked")

PRESETS = {
    "tiny": {"ns": [64, 128], "d": 16, "window": 16, "chunk": 16, "repeats": 1, "decode_ns": [64, 128],
             "recall": {"d_k": 8, "ns": [4, 8, 16], "seeds": [0, 1], "sharpness": 20.0, "fit_steps": 20}},
    "quick": {"ns": [256, 512, 1024, 2048], "d": 64, "window": 128, "chunk": 64, "repeats": 3,
              "decode_ns": [512, 2048, 8192],
              "recall": {"d_k": 16, "ns": [4, 8, 16, 32, 64, 128], "seeds": [0, 1, 2], "sharpness": 20.0,
                         "fit_steps": 200}},
    "full": {"ns": [256, 512, 1024, 2048, 4096], "d": 64, "window": 128, "chunk": 64, "repeats": 3,
             "decode_ns": [512, 2048, 8192, 32768],
             "recall": {"d_k": 16, "ns": [4, 8, 16, 32, 64, 128], "seeds": [0, 1, 2, 3, 4], "sharpness": 20.0,
                        "fit_steps": 200}},
}


# ----------------------------------------------------------------------------- 闭式
def attention_flops(n: int, d: int, method: str, window: int | None = None) -> int:
    """因果性不计入的浮点运算数（一次乘加 = 2）：全注意力 QKᵀ 与 PV 各 2n²d，共 4n²d；
    滑动窗口每个查询只看 min(n, w) 个键：4n·min(n, w)·d（w ≥ n 时就是全注意力）；
    线性注意力每步外积 2d² 加读出 2d²：4nd²（d_k = d_v = d）。"""
    if method == "full":
        return 4 * n * n * d
    if method == "window":
        return 4 * n * min(n, window) * d
    if method == "linear":
        return 4 * n * d * d
    raise ValueError(f"method must be full, window or linear, got {method!r}")


def linear_layer_flops(n: int, d: int) -> int:
    """一层里注意力以外的线性部分（第 01 章）：Q、K、V、O 四个投影 4·2nd²，FFN（d_ff = 4d）2·2n·4d²，共 24nd²。"""
    return 24 * n * d * d


def decode_state_elems(n: int, d: int, method: str, window: int | None = None) -> int:
    """解码时每层每头要存的元素数：全注意力 K、V 各 n·d；滚动缓存 2·w·d；线性注意力的状态 d·d。"""
    return {"full": 2 * n * d, "window": 2 * min(n, window or n) * d, "linear": d * d}[method]


# ----------------------------------------------------------------------------- 测量
def scaling_rows(ns, d, window, chunk, repeats, device, timer, progress=None) -> list[dict]:
    rows = []
    g = torch.Generator().manual_seed(0)
    for n in ns:
        q, k, v = (torch.randn(1, n, d, generator=g).to(device) / d ** 0.25 for _ in range(3))  # (1, n, d)
        kn = torch.nn.functional.normalize(k, dim=-1)  # 增量规则要单位键
        beta = torch.full((1, n), 0.5, device=device)
        causal = torch.ones(n, n, dtype=torch.bool, device=device).tril()
        fns = {"full": lambda: scaled_dot_product_attention(q, k, v, causal, check_inputs=False)[0],
               "window": lambda: sliding_window_attention(q, k, v, window),
               "linear_recurrent": lambda: linear_attention_recurrent(q, k, v),
               "linear_chunked": lambda: linear_attention_chunked(q, k, v, chunk),
               "delta_chunked": lambda: delta_rule_chunked(q, kn, v, beta, chunk)}
        with torch.no_grad():
            for method in METHODS:
                fns[method]()  # 预热：GPU 上第一次矩阵乘会分配 cuBLAS 的工作区，不算进峰值
                peak = peak_allocated_bytes(fns[method], device)["peak_bytes"]
                rows.append({"method": method, "n": n, "d": d, "time_s": median_time(timer, fns[method], repeats)[0],
                             "peak_bytes": int(peak)})
        if progress:
            progress(1)
    return rows


def decode_step_rows(ns, d, device) -> list[dict]:
    """读过 n 个词元之后，再解码一个词元的峰值额外内存（缓存或状态在测量之外建好）。"""
    rows = []
    g = torch.Generator().manual_seed(2)
    for n in ns:
        k_cache, v_cache = (torch.randn(1, n, d, generator=g).to(device) for _ in range(2))  # (1, n, d)
        state = torch.randn(1, d, d, generator=g).to(device)  # (1, d_v, d_k)
        q, k, v = (torch.randn(1, d, generator=g).to(device) for _ in range(3))
        with torch.no_grad():
            full = peak_allocated_bytes(lambda: scaled_dot_product_attention(
                q[:, None, :], k_cache, v_cache, check_inputs=False)[0], device)["peak_bytes"]
            lin = peak_allocated_bytes(lambda: (state + v[:, :, None] * k[:, None, :]) @ q[:, :, None],
                                       device)["peak_bytes"]
        rows.append({"n": n, "d": d, "full_step_bytes": int(full), "linear_step_bytes": int(lin),
                     "kv_cache_bytes": 2 * n * d * 4, "state_bytes": d * d * 4})
    return rows


def fit_linear_state(keys, codebook, s0, steps, lr=0.05, temperature=0.1):
    """从 s0 (d_v, d_k) 出发，用 Adam 最小化码本打分 softmax(C S k_i / temperature) 对第 i 个的交叉熵。"""
    s = s0.clone().requires_grad_(True)
    opt = torch.optim.Adam([s], lr=lr)
    target = torch.arange(keys.shape[0], device=keys.device)
    for _ in range(steps):
        logits = keys @ s.T @ codebook.T / temperature  # (N, N)：第 i 个键对码本每一项的打分
        loss = torch.nn.functional.cross_entropy(logits, target)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return s.detach()


def recall_rows(cfg, device) -> list[dict]:
    rows = []
    d_k = cfg["d_k"]
    for seed in cfg["seeds"]:
        g = torch.Generator().manual_seed(seed)
        for n in cfg["ns"]:
            keys = torch.nn.functional.normalize(torch.randn(n, d_k, generator=g), dim=-1).to(device)  # (N, d_k)
            codebook = torch.nn.functional.normalize(torch.randn(n, 64, generator=g), dim=-1).to(device)  # (N, 64)
            vals = codebook  # 第 i 个键配第 i 个值
            with torch.no_grad():
                soft, _ = scaled_dot_product_attention(keys * cfg["sharpness"] * d_k ** 0.5, keys, vals,
                                                       check_inputs=False)  # 全部 N 对都留着
                s_lin = vals.T @ keys  # (64, d_k)：S = Σ v kᵀ
                s_delta = torch.zeros(64, d_k, device=device)
                for i in range(n):
                    s_delta = delta_rule_step(s_delta, keys[i], vals[i], torch.tensor(1.0, device=device))
                s_ls = torch.linalg.lstsq(keys, vals).solution.T  # (64, d_k)：最小二乘，均方误差最小的读出
                s_code = torch.linalg.pinv(codebook) @ keys  # (64, d_k)：S = C⁺K，码本打分 C S k_i = K k_i
            s_fit = fit_linear_state(keys, codebook, s_code, cfg["fit_steps"])  # (64, d_k)
            with torch.no_grad():
                outs = {"softmax": soft, "linear": keys @ s_lin.T, "delta": keys @ s_delta.T,
                        "best_linear": keys @ s_ls.T, "codebook_linear": keys @ s_code.T,
                        "fitted_linear": keys @ s_fit.T}  # (N, 64)
            row = {"seed": seed, "n_pairs": n, "d_k": d_k}
            for name, o in outs.items():
                pred = (torch.nn.functional.normalize(o, dim=-1) @ codebook.T).argmax(-1)
                row[name] = (pred == torch.arange(n, device=device)).float().mean().item()
            rows.append(row)
    return rows


def run(preset: str, device: str, command: str, *, progress_bar: bool = True) -> dict:
    from tqdm import tqdm

    prov = start(device, command)
    plan = PRESETS[preset]
    timer = Timer(device)
    t0 = time.perf_counter()
    bar = tqdm(total=len(plan["ns"]) + 2, desc="long-context probes", file=sys.stderr, disable=not progress_bar)
    out = {"scaling": {"window": plan["window"], "chunk": plan["chunk"], "d": plan["d"], "repeats": plan["repeats"],
                       "timer": timer.name,
                       "rows": scaling_rows(plan["ns"], plan["d"], plan["window"], plan["chunk"], plan["repeats"],
                                            device, timer, bar.update)}}
    out["decode_step"] = decode_step_rows(plan["decode_ns"], plan["d"], device)
    bar.update(1)
    out["recall"] = {"config": plan["recall"], "rows": recall_rows(plan["recall"], device)}
    bar.update(1)
    bar.close()
    prov["runtime_s"] = round(time.perf_counter() - t0, 2)
    prov["load_average"]["after"] = R.loadavg()
    return {"kind": KIND, "schema_version": SCHEMA_VERSION, "preset": preset, "provenance": prov, "probes": out}


def main(argv=None) -> int:
    return probe_main("snippets.probes.long_context", "long-context", PRESETS, run, argv, __doc__.splitlines()[0])


if __name__ == "__main__":
    raise SystemExit(main())
