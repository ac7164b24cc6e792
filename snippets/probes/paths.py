"""最大路径长度（maximum path length），测出来的。

定义（本站使用的精确定义）：**路径长度 L = 使 ∂y_n/∂x₁ ≠ 0 的最小计算深度**。

- 前馈层（注意力、受限注意力、卷积）：把同类层（各层权重独立随机）堆叠 L 层，
  L 是让最后一个输出位置 y_n 依赖第一个输入 x₁ 的最小层数。
- 循环层（RNN、LSTM）：一层 RNN 本身就让 h_n 依赖 x₁，所以"层数"不是合适的尺度；
  这里数的是**单元应用次数**（cell applications）。做法是把循环改写成"同步轮次"：
  第 r 轮对所有位置并行地做一次单元计算，且只读第 r−1 轮的状态
  ``H^{(r)}_t = cell(x_t, H^{(r-1)}_{t-1})``。L 是使 ∂H^{(L)}_n/∂x₁ ≠ 0 的最小轮数。
  结果是 **L = n**：x₁ 在第 1 次单元应用进入 h₁，之后还要 n−1 次循环跳（recurrent hop）
  才到 h_n。n 轮之后同步轮次恰好等于顺序 RNN 的输出（本模块也检查这一点）。

为什么看雅可比的**数值**而不是 autograd 图的结构？张量级的 autograd 图里，一次批量投影
``X @ W``（所有位置一起算）或一次 ``stack`` 会让 y_n 的节点"一跳"连到整个 X，形成假的捷径。
这里用 float64、随机权重和随机投影向量 u，计算 ``∂(u·y_n)/∂x₁``：没有依赖时它**精确为 0**
（零填充、−inf 掩码使 softmax 权重精确为 0），有依赖时对一般的随机权重非零。报告的 L
满足：深度 L 时范数 > 0，深度 L−1 时范数恰为 0。

理论值：注意力 1；受限注意力（半径 w，窗口 2w+1）⌈(n−1)/w⌉；因果卷积（核宽 k）
⌈(n−1)/(k−1)⌉；空洞因果卷积（第 ℓ 层空洞率 k^ℓ，ℓ = 0, 1, …）⌈log_k n⌉；RNN/LSTM n（单元应用次数，
= 1 次读入 + n−1 次循环跳）。第一层就用空洞率 k 的空洞卷积（``dilated_conv_from_k``，ℓ = 1, …, N）
感受野跨 k^{N+1}−k+1 个位置，但只到达偏移为 k 的倍数的位置（``reached_offsets``），所以没有路径长度。
"""

from __future__ import annotations

import math

import torch

from .layers import make_layer

DTYPE = torch.float64


def ceil_log(n: int, k: int) -> int:
    """⌈log_k n⌉，整数运算（避免浮点误差）。"""
    L, reach = 0, 1
    while reach < n:
        reach *= k
        L += 1
    return L


def theory(kind: str, n: int, *, radius: int = 1, kernel: int = 2) -> int:
    """上面的理论路径长度。"""
    if kind == "attention":
        return 1
    if kind == "restricted":
        return math.ceil((n - 1) / radius)
    if kind == "conv":
        return math.ceil((n - 1) / (kernel - 1))
    if kind == "dilated_conv":
        return ceil_log(n, kernel)
    if kind in ("rnn", "lstm"):
        return n
    raise ValueError(f"kind={kind!r} 没有路径长度（未知，或像 dilated_conv_from_k 那样到不了每个位置）")


def _stack_factory(kind: str, d: int, *, radius: int, kernel: int, device):
    """返回 ``make(ℓ)``：第 ℓ 层（从 0 开始）的前向函数，各层权重独立。"""

    def make(ell: int):
        if kind == "attention":
            return make_layer("attention", d, seed=ell, dtype=DTYPE, device=device)
        if kind == "restricted":
            return make_layer("restricted", d, radius=radius, seed=ell, dtype=DTYPE, device=device)
        if kind == "conv":
            return make_layer("conv", d, kernel=kernel, seed=ell, dtype=DTYPE, device=device)
        if kind in ("dilated_conv", "dilated_conv_from_k"):
            first = 0 if kind == "dilated_conv" else 1  # 第一层的空洞率是 k^first
            return make_layer("conv", d, kernel=kernel, dilation=kernel ** (ell + first), seed=ell,
                              dtype=DTYPE, device=device)
        raise ValueError(f"kind={kind!r} 不是前馈层")

    return make


def _recurrent_round_factory(kind: str, d: int, *, device):
    """RNN/LSTM 的同步轮次：``step(x, state) -> state``，所有位置并行、只读上一轮的状态。

    用的就是页面上的单元（``RNNCell`` / ``LSTMCell``）：把 n 个位置当作一个批次，一次调用算完一轮。
    n 轮后与顺序实现逐元素相同（本模块也检查这一点）。
    """
    layer = make_layer(kind, d, seed=0, dtype=DTYPE, device=device)
    cell = layer.module.cell

    def shift(s):  # (1, n, d) -> (n, d)：位置 t 拿到位置 t−1 的状态，位置 1 拿到 h_0 = 0
        return torch.cat([torch.zeros_like(s[:, :1]), s[:, :-1]], dim=1)[0]

    if kind == "rnn":
        def init(x):
            return (torch.zeros_like(x),)

        def step(x, state):  # x: (1, n, d)
            return (cell(x[0], shift(state[0]))[None],)  # (1, n, d)

    elif kind == "lstm":
        def init(x):
            return (torch.zeros_like(x), torch.zeros_like(x))

        def step(x, state):
            h, c = cell(x[0], (shift(state[0]), shift(state[1])))  # 各 (n, d)
            return (h[None], c[None])

    else:
        raise ValueError(f"kind={kind!r} is not recurrent")
    return layer, init, step


def measure_depth(kind: str, n: int, *, d: int = 4, radius: int = 1, kernel: int = 2, seed: int = 0,
                  max_depth: int | None = None, device: str = "cpu") -> dict:
    """测最小深度 L（见模块说明）。先倍增找到上界，再二分；最后核对 L 与 L−1。"""
    if n < 2:
        raise ValueError(f"n={n} 至少为 2")
    expected = theory(kind, n, radius=radius, kernel=kernel)  # 未知的 kind（或没有路径长度的）先报错
    max_depth = max_depth or (2 * n + 2)
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(1, n, d, generator=g, dtype=DTYPE).to(device).requires_grad_(True)  # (1, n, d)
    u = torch.randn(d, generator=g, dtype=DTYPE).to(device)  # 随机投影 u·y_n

    outputs: list[torch.Tensor] = []  # outputs[L-1] 是深度 L 的输出 y（(1, n, d)）
    recurrent = kind in ("rnn", "lstm")
    if recurrent:
        layer, init, step = _recurrent_round_factory(kind, d, device=device)
        state = init(x)
    else:
        make = _stack_factory(kind, d, radius=radius, kernel=kernel, device=device)

    def extend(L: int) -> None:
        nonlocal state
        while len(outputs) < L:
            if recurrent:
                state = step(x, state)
                outputs.append(state[0])
            else:
                prev = outputs[-1] if outputs else x
                outputs.append(make(len(outputs))(prev))

    def grad_norm(L: int) -> float:
        extend(L)
        (gx,) = torch.autograd.grad((outputs[L - 1][0, n - 1] * u).sum(), x, retain_graph=True)
        return float(gx[0, 0].abs().max())  # ∂(u·y_n)/∂x₁ 的最大绝对值

    # 倍增：找第一个 hi 使 grad_norm(hi) > 0
    evaluated: dict[int, float] = {}

    def reach(L: int) -> bool:
        evaluated[L] = grad_norm(L)
        return evaluated[L] > 0.0

    hi = 1
    while not reach(hi):
        if hi >= max_depth:
            raise RuntimeError(f"{kind}: 到深度 {max_depth} 仍未到达 x₁")
        hi = min(2 * hi, max_depth)
    lo = hi // 2  # reach(lo) 为假（或 lo = 0）
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if reach(mid):
            hi = mid
        else:
            lo = mid
    L = hi
    if evaluated[L] < 1e-280:  # 离 float64 下溢太近，"非零"不再可信
        raise RuntimeError(f"{kind} n={n}: 深度 {L} 的梯度 {evaluated[L]:.3g} 太接近下溢，请减小 n")
    below = grad_norm(L - 1) if L > 1 else 0.0
    res = {
        "layer": kind, "n": n, "d": d, "depth": L,
        "theory": expected,
        "grad_norm_at_depth": evaluated[L], "grad_norm_below": below,
        "evaluated_depths": sorted(evaluated),
    }
    if kind in ("restricted",):
        res["radius"] = radius
        res["window"] = 2 * radius + 1
    if kind in ("conv", "dilated_conv", "dilated_conv_from_k"):
        res["kernel"] = kernel
    if recurrent:
        # n 轮同步计算应与顺序实现完全一致（不动点）
        extend(n)
        with torch.no_grad():
            seq = layer(x.detach())  # (1, n, d)
        res["rounds_equal_sequential"] = float((outputs[n - 1].detach() - seq).abs().max())
        res["unit"] = "cell applications (1 input read + n-1 recurrent hops)"
    else:
        res["unit"] = "stacked layers"
    res["agrees"] = res["depth"] == res["theory"] and below == 0.0
    return res


def reached_offsets(kind: str, n: int, depth: int, *, d: int = 4, kernel: int = 2, seed: int = 0) -> list[int]:
    """堆叠 ``depth`` 层后，y_n 依赖哪些输入：偏移 n−j 使 ∂(u·y_n)/∂x_j ≠ 0（float64，精确为 0 即不依赖）。"""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(1, n, d, generator=g, dtype=DTYPE).requires_grad_(True)  # (1, n, d)
    u = torch.randn(d, generator=g, dtype=DTYPE)
    make = _stack_factory(kind, d, radius=1, kernel=kernel, device="cpu")
    y = x
    for ell in range(depth):
        y = make(ell)(y)  # (1, n, d)
    (gx,) = torch.autograd.grad((y[0, n - 1] * u).sum(), x)
    return [n - 1 - j for j in range(n) if float(gx[0, j].abs().max()) > 0.0][::-1]


# 图/表用的配置：(名字, kind, 关键字参数)
PATH_CONFIGS = (
    ("attention", "attention", {}),
    ("restricted r=1", "restricted", {"radius": 1}),
    ("restricted r=4", "restricted", {"radius": 4}),
    ("conv k=2", "conv", {"kernel": 2}),
    ("conv k=3", "conv", {"kernel": 3}),
    ("dilated conv k=2", "dilated_conv", {"kernel": 2}),
    ("dilated conv k=3", "dilated_conv", {"kernel": 3}),
    ("rnn", "rnn", {}),
    ("lstm", "lstm", {}),
)


def run(ns, *, d: int = 4, device: str = "cpu", progress=None) -> dict:
    rows = []
    for label, kind, kw in PATH_CONFIGS:
        for n in ns:
            r = measure_depth(kind, n, d=d, device=device, **kw)
            r["config"] = label
            rows.append(r)
        if progress:
            progress(1)
    return {
        "definition": ("minimal depth L with d(u.y_n)/dx_1 != 0 (float64, random weights): stacked layers "
                       "for attention/restricted/conv; synchronous cell applications for RNN/LSTM "
                       "(L = n: 1 input read + n-1 recurrent hops). Verified: nonzero at L, exactly 0 at L-1."),
        "d": d, "dtype": "float64", "rows": rows,
        "all_agree": all(r["agrees"] for r in rows),
    }
