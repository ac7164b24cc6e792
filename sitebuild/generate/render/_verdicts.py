"""Table cells for a paired comparison of two arms over seeds (snippets.stats.compare_seeds): every
renderer that compares arms writes the same columns, so a page's verdict word and its table agree."""

from __future__ import annotations

from snippets.stats import SeedComparison



def signed(x: float, scale: float = 1.0, digits: int = 1) -> str:
    return f"{x * scale:+.{digits}f}"


def cells(c: SeedComparison, scale: float = 1.0, digits: int = 1) -> list[str]:
    """[平均差, 区间, k/n, 结论]; scale turns a fraction into points (100)."""
    if c.n == 1:
        interval = "—（1 个种子）"
    else:
        lo, hi = c.interval
        interval = f"[{signed(lo, scale, digits)}, {signed(hi, scale, digits)}]"
    return [signed(c.mean_difference, scale, digits), interval, f"{c.n_agree}/{c.n}", c.verdict]


def per_seed_rows(c: SeedComparison, fmt, scale: float = 1.0, digits: int = 1) -> list[list[str]]:
    """One row per seed: seed, a, b, b − a."""
    return [[str(s), fmt(a), fmt(b), signed(b - a, scale, digits)] for s, a, b in zip(c.seeds, c.a, c.b)]
