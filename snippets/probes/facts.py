"""每种层的事实（layer facts），只在这里写一次：中文名、闭式 FLOPs（文字与 LaTeX）、论文的指数、Table 1 的一行。

探针（计数、计时）、图表渲染（sitebuild.generate.render）和测试都从这里读，不再各抄一份。

FLOPs 约定：batch 1，无偏置，一次乘加 = 2 FLOP；``fwd+bwd`` 时输入与全部权重都要梯度，
循环层的初始状态 h_0 = 0 不要梯度，所以少一次对 h_0 的矩阵乘（−2d² 之类的常数项）。
w 是受限注意力的半径（窗口 2w+1；代码参数名 radius / r），k 是卷积核宽。
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

MODES = ("fwd", "fwd+bwd")


@dataclass(frozen=True)
class Layer:
    kind: str
    zh: str  # 表格里的中文名
    short: str  # 图例里的短名
    fwd: Callable[[int, int, int, int], int]  # (n, d, r, k) -> 前向 FLOPs
    fwd_bwd: Callable[[int, int, int, int], int]  # (n, d, r, k) -> 前向 + 反向 FLOPs
    text: tuple[str, str]  # 闭式的文字写法（前向，前向 + 反向）
    tex: tuple[str, str]  # 同上，LaTeX
    exponent: dict  # 论文 Table 1 的每层复杂度在 n、d 方向的指数（整层时间的参照）
    reader_code: str | None  # 页面上展示、探针直接使用的读者代码；None = 只在探针里（页面不展示）
    table1: str  # 它属于论文 Table 1 的哪一行（TABLE1 的键）

    def flops(self, n: int, d: int, mode: str = "fwd", *, radius: int = 4, kernel: int = 3) -> int:
        if mode not in MODES:
            raise ValueError(f"mode={mode!r} must be one of {MODES}")
        return (self.fwd if mode == "fwd" else self.fwd_bwd)(n, d, radius, kernel)


# 论文 Table 1：层类型 -> (每层复杂度, 顺序操作数, 最大路径长度)
TABLE1 = {
    "Self-Attention": ("O(n²·d)", "O(1)", "O(1)"),
    "Recurrent": ("O(n·d²)", "O(n)", "O(n)"),
    "Convolutional": ("O(k·n·d²)", "O(1)", "O(log_k(n))"),
    "Self-Attention (restricted)": ("O(r·n·d)", "O(1)", "O(n/r)"),
}

LAYERS: dict[str, Layer] = {layer.kind: layer for layer in (
    Layer("attention", "自注意力（含 Q/K/V/O 投影）", "attention",
          lambda n, d, r, k: 8 * n * d * d + 4 * n * n * d,
          lambda n, d, r, k: 24 * n * d * d + 12 * n * n * d,
          ("8nd² + 4n²d", "24nd² + 12n²d"), (r"8nd^2+4n^2d", r"24nd^2+12n^2d"),
          {"n": 2, "d": 1}, "snippets/attention.py:mha", "Self-Attention"),
    Layer("attention_core", "注意力核心（QKᵀ 与 AV）", "attention core",
          lambda n, d, r, k: 4 * n * n * d,
          lambda n, d, r, k: 12 * n * n * d,
          ("4n²d", "12n²d"), (r"4n^2d", r"12n^2d"),
          {"n": 2, "d": 1}, "snippets/attention.py:sdpa", "Self-Attention"),
    Layer("sdpa", "SDPA（F.scaled_dot_product_attention）", "SDPA",
          lambda n, d, r, k: 8 * n * d * d + 4 * n * n * d,
          lambda n, d, r, k: 24 * n * d * d + 12 * n * n * d,
          ("8nd² + 4n²d", "24nd² + 12n²d"), (r"8nd^2+4n^2d", r"24nd^2+12n^2d"),
          {"n": 2, "d": 1}, None, "Self-Attention"),
    Layer("restricted", "受限自注意力（窗口 2w+1）", "restricted",
          lambda n, d, r, k: 8 * n * d * d + 4 * n * (2 * r + 1) * d,
          lambda n, d, r, k: 24 * n * d * d + 12 * n * (2 * r + 1) * d,
          ("8nd² + 4n(2w+1)d", "24nd² + 12n(2w+1)d"), (r"8nd^2+4n(2w+1)d", r"24nd^2+12n(2w+1)d"),
          {"n": 1, "d": 1}, "snippets/attention.py:restricted", "Self-Attention (restricted)"),
    Layer("rnn", "Elman RNN", "RNN",
          lambda n, d, r, k: 4 * n * d * d,
          lambda n, d, r, k: 12 * n * d * d - 2 * d * d,
          ("4nd²", "12nd² − 2d²"), (r"4nd^2", r"12nd^2-2d^2"),
          {"n": 1, "d": 2}, "snippets/rnn.py:rnn-layer", "Recurrent"),
    Layer("lstm", "LSTM", "LSTM",
          lambda n, d, r, k: 16 * n * d * d,
          lambda n, d, r, k: 48 * n * d * d - 8 * d * d,
          ("16nd²", "48nd² − 8d²"), (r"16nd^2", r"48nd^2-8d^2"),
          {"n": 1, "d": 2}, "snippets/lstm.py:lstm-layer", "Recurrent"),
    Layer("gru", "GRU", "GRU",
          lambda n, d, r, k: 12 * n * d * d,
          lambda n, d, r, k: 36 * n * d * d - 6 * d * d,
          ("12nd²", "36nd² − 6d²"), (r"12nd^2", r"36nd^2-6d^2"),
          {"n": 1, "d": 2}, None, "Recurrent"),
    Layer("conv", "因果卷积（核宽 k）", "conv",
          lambda n, d, r, k: 2 * k * n * d * d,
          lambda n, d, r, k: 6 * k * n * d * d,
          ("2knd²", "6knd²"), (r"2knd^2", r"6knd^2"),
          {"n": 1, "d": 2}, None, "Convolutional"),
)}

ORDER = tuple(LAYERS)  # 表格与图例的顺序
FLOP_KINDS = tuple(k for k in ORDER if k != "sdpa")  # CPU 上计数器对 4-D SDPA 记 0，所以不数它


def closed_form(kind: str, n: int, d: int, mode: str = "fwd", *, radius: int = 4, kernel: int = 3) -> int:
    """上表的闭式（batch 1）。"""
    if kind not in LAYERS:
        raise ValueError(f"kind={kind!r} has no closed form; choose from {ORDER}")
    return LAYERS[kind].flops(n, d, mode, radius=radius, kernel=kernel)
