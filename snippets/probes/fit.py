"""Straight-line fits the probes share: log-log for growth orders, semi-log₁₀ for gradient decay."""

from __future__ import annotations

import math
import statistics


def _line(xs, ys):
    """Least squares y = a + s·x (``statistics.linear_regression``); residuals y − (a + s·x)."""
    fit = statistics.linear_regression(xs, ys)
    return fit.slope, fit.intercept, [y - (fit.intercept + fit.slope * x) for x, y in zip(xs, ys)]


def loglog_fit(xs, ys) -> dict:
    """ln y = ln C + s·ln x over the positive points.

    ``residual`` is the 2-norm of the ln residuals (a disturbed sweep makes it large; ≳ 0.25
    means re-measure), ``residual_max`` the largest |ln residual|. Fewer than 2 points: slope None.
    """
    pts = [(math.log(x), math.log(y)) for x, y in zip(xs, ys) if x > 0 and y > 0]
    if len(pts) < 2:
        return {"slope": None, "intercept": None, "residual": None, "residual_max": None, "points": len(pts)}
    s, c, res = _line([a for a, _ in pts], [b for _, b in pts])
    return {"slope": s, "intercept": c, "residual": math.sqrt(sum(r * r for r in res)),
            "residual_max": max(abs(r) for r in res), "points": len(pts)}


def semilog10_fit(ks, values) -> dict:
    """log₁₀ value = a + s·k (s in decades per step), skipping zeros and non-finite values."""
    pts = [(k, math.log10(v)) for k, v in zip(ks, values) if v > 0 and math.isfinite(v)]
    if len(pts) < 2:
        return {"slope": None, "intercept": None, "points": len(pts), "residual_rms": None}
    s, a, res = _line([k for k, _ in pts], [y for _, y in pts])
    return {"slope": s, "intercept": a, "points": len(pts),
            "residual_rms": math.sqrt(sum(r * r for r in res) / len(res))}


def spread(values) -> dict:
    """Min, max and population standard deviation of a set of slopes."""
    v = [x for x in values if x is not None]
    if not v:
        return {"min": None, "max": None, "std": None, "count": 0}
    return {"min": min(v), "max": max(v), "std": statistics.pstdev(v) if len(v) > 1 else 0.0, "count": len(v)}
