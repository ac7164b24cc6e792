"""log-log 拟合（power-law fit）：y ≈ C·x^s。墙钟时间和内存的增长阶都用它。"""

from __future__ import annotations

import math
import statistics


def loglog_fit(xs, ys) -> dict:
    """最小二乘拟合 ln y = ln C + s·ln x。

    返回 ``slope``、``intercept``（ln C）、``residual``（ln 残差的平方和开根号，即
    残差向量的 2-范数；扰动过的扫描会让它变大，≳ 0.25 时应重测）、``residual_max``
    （最大的 |ln 残差|）与点数。少于 2 个点时斜率为 None。
    """
    pts = [(math.log(x), math.log(y)) for x, y in zip(xs, ys) if x > 0 and y > 0]
    n = len(pts)
    if n < 2:
        return {"slope": None, "intercept": None, "residual": None, "residual_max": None, "points": n}
    mx = sum(a for a, _ in pts) / n
    my = sum(b for _, b in pts) / n
    sxx = sum((a - mx) ** 2 for a, _ in pts)
    s = sum((a - mx) * (b - my) for a, b in pts) / sxx
    c = my - s * mx
    res = [b - (c + s * a) for a, b in pts]
    return {"slope": s, "intercept": c, "residual": math.sqrt(sum(r * r for r in res)),
            "residual_max": max(abs(r) for r in res), "points": n}


def spread(values) -> dict:
    """一组斜率的最小、最大、标准差。"""
    v = [x for x in values if x is not None]
    if not v:
        return {"min": None, "max": None, "std": None, "count": 0}
    return {"min": min(v), "max": max(v), "std": statistics.pstdev(v) if len(v) > 1 else 0.0,
            "count": len(v)}
