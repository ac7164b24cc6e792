"""Which complexity-probe results the renderers show, and the number formats they share."""

from __future__ import annotations

from snippets.probes.facts import LAYERS, ORDER
from snippets.probes.results import KIND

_PRESET_RANK = {"full": 2, "quick": 1, "tiny": 0}


def probe_results(results: list[dict]) -> list[dict]:
    """每个设备一个探针结果（full 优先，其次日期最新）；CPU 在前，CUDA 在后。"""
    best: dict[str, tuple] = {}
    for r in results:  # 已由 snippets.results.load_all 校验：不合格的文件到不了这里
        if r.get("kind") != KIND:
            continue
        tag = r["provenance"].get("tag", r["_file"])
        key = (_PRESET_RANK.get(r.get("preset"), -1), r["provenance"].get("date_utc", ""))
        if tag not in best or key > best[tag][0]:
            best[tag] = (key, r)
    chosen = [v[1] for v in best.values()]
    return sorted(chosen, key=lambda r: (r["provenance"]["device"]["type"] != "cpu", r["provenance"]["tag"]))


def primary(results: list[dict]) -> dict | None:
    pr = probe_results(results)
    return pr[0] if pr else None


def fmt_int(x) -> str:
    return f"{int(x):,}"


def fmt_bytes(b) -> str:
    if b is None:
        return "—"
    b = int(b)
    if b >= 2**30:
        return f"{b:,} B（{b / 2**30:.2f} GiB）"
    if b >= 2**20:
        return f"{b:,} B（{b / 2**20:.2f} MiB）"
    if b >= 2**10:
        return f"{b:,} B（{b / 2**10:.1f} KiB）"
    return f"{b:,} B"


def fmt_slope(x, digits=2) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


def fmt_time(s) -> str:
    if s is None:
        return "—"
    if s < 1e-3:
        return f"{s * 1e6:.1f} µs"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s"




def short(kind: str) -> str:
    return LAYERS[kind].short if kind in LAYERS else kind


def device_short(r: dict) -> str:
    return "CPU" if r["provenance"]["device"]["type"] == "cpu" else "GPU"


__all__ = ["ORDER", "LAYERS", "probe_results", "primary", "short", "device_short",
           "fmt_int", "fmt_bytes", "fmt_slope", "fmt_time"]
