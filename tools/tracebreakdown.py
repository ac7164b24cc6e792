"""What a phone's main thread spends a page load on: one traced load, summarised.

The load runs under the field harness's conditions (``tools.fieldperf``: 4× CPU, slow 4G,
412 px) with Chromium's timeline trace on, minus ``invalidationTracking`` (which Lighthouse
records to attribute layout shifts; it slows Chromium's style invalidation) and minus JS stack
sampling, which would slow the page. Every trace event on the page's main thread gets its self
time (its duration minus its children's), grouped into style, layout, script (by file), HTML parsing, paint and other,
before and after first contentful paint; the longest tasks are listed with what is inside.
"""

from __future__ import annotations

import collections
import json
import tempfile
from pathlib import Path

from tools import fieldperf

CATEGORIES = ["devtools.timeline", "disabled-by-default-devtools.timeline", "v8.execute", "loading"]
GROUPS = {
    "UpdateLayoutTree": "style", "RecalculateStyles": "style", "ParseAuthorStyleSheet": "style",
    "Layout": "layout",
    "ParseHTML": "parse HTML",
    "Paint": "paint", "PrePaint": "paint", "Layerize": "paint", "Commit": "paint", "UpdateLayer": "paint",
    "CompositeLayers": "paint", "PaintImage": "paint", "Decode Image": "paint",
    "MinorGC": "garbage collection", "MajorGC": "garbage collection", "V8.GC_SCAVENGER": "garbage collection",
}


def traced_load(browser, url: str) -> dict:
    """Load ``url`` once under the field conditions with tracing; returns the summary dict."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trace.json"
        ctx = browser.new_context(viewport=fieldperf.PHONE, device_scale_factor=1.75, is_mobile=True,
                                  has_touch=True, user_agent=fieldperf.PHONE_UA, locale="zh-CN")
        try:
            page = ctx.new_page()
            fieldperf.throttle(ctx.new_cdp_session(page))
            browser.start_tracing(page=page, path=str(path), categories=CATEGORIES)
            page.goto(url, wait_until="load", timeout=120_000)
            page.wait_for_timeout(fieldperf.QUIET_MS)
            browser.stop_tracing()
        finally:
            ctx.close()
        events = json.loads(path.read_text(encoding="utf-8"))
    return summarise(events["traceEvents"] if isinstance(events, dict) else events)


def script_name(event: dict) -> str:
    data = event.get("args", {}).get("data", {}) or {}
    url = data.get("url") or data.get("scriptName") or ""
    return "script " + (url.rsplit("/", 1)[-1].split("?")[0] or "(page)")


def summarise(events: list[dict]) -> dict:
    """Self time per group on the main thread that ran the page, before/after FCP; long tasks."""
    evaluated = [e for e in events if e.get("name") == "EvaluateScript"
                 and "/assets/" in str(e.get("args", {}).get("data", {}).get("url", ""))]
    pid, tid = evaluated[0]["pid"], evaluated[0]["tid"]
    main = sorted((e for e in events if e.get("pid") == pid and e.get("tid") == tid and e.get("ph") == "X"
                   and "dur" in e), key=lambda e: (e["ts"], -e["dur"]))
    fcp_events = [e["ts"] for e in events if e.get("name") == "firstContentfulPaint" and e.get("pid") == pid]
    fcp = min(fcp_events) if fcp_events else None
    start = min(e["ts"] for e in main)
    totals = {"before FCP": collections.Counter(), "after FCP": collections.Counter()}
    tasks: list[dict] = []
    stack: list[list] = []  # [event, group, time of its children]

    def close(until: float) -> None:
        while stack and stack[-1][0]["ts"] + stack[-1][0]["dur"] <= until:
            event, group, children = stack.pop()
            self_time = max(0.0, event["dur"] - children)
            totals["before FCP" if fcp is None or event["ts"] < fcp else "after FCP"][group] += self_time
            if tasks and tasks[-1]["start"] <= event["ts"] < tasks[-1]["start"] + tasks[-1]["dur"]:
                tasks[-1]["groups"][group] += self_time
            if stack:
                stack[-1][2] += event["dur"]

    for e in main:
        close(e["ts"])
        name = e["name"]
        if name == "RunTask" and not stack:
            tasks.append({"start": e["ts"], "dur": e["dur"], "groups": collections.Counter()})
        if name in ("EvaluateScript", "FunctionCall", "v8.evaluateModule"):
            group = script_name(e)
        elif name in GROUPS:
            group = GROUPS[name]
        else:  # a task's own time, or script machinery inside a script: the parent's group
            group = stack[-1][1] if stack and name != "RunTask" else "other"
        stack.append([e, group, 0.0])
    close(float("inf"))
    longest = sorted((t for t in tasks if t["dur"] > 50_000), key=lambda t: -t["dur"])[:6]
    return {
        "fcp_ms": None if fcp is None else (fcp - start) / 1000,
        "totals": {phase: {g: round(t / 1000) for g, t in c.most_common()} for phase, c in totals.items()},
        "long_tasks": [{"start_ms": round((t["start"] - start) / 1000), "ms": round(t["dur"] / 1000),
                        "inside": {g: round(v / 1000) for g, v in t["groups"].most_common(4)}} for t in longest],
    }


def report(url: str, s: dict) -> str:
    lines = [f"## Where the main thread's time goes: `{url or '/'}`", "",
             "One traced load under the field conditions (4× CPU, slow 4G, 412 px), without invalidationTracking "
             "and without stack sampling; self time per kind of work, in ms of the slowed CPU. "
             + (f"First contentful paint at {s['fcp_ms']:.0f} ms of the trace." if s["fcp_ms"] is not None else ""), "",
             "| work | before FCP | after FCP |", "|---|---:|---:|"]
    groups = sorted(set(s["totals"]["before FCP"]) | set(s["totals"]["after FCP"]),
                    key=lambda g: -(s["totals"]["before FCP"].get(g, 0) + s["totals"]["after FCP"].get(g, 0)))
    for g in groups:
        lines.append(f"| {g} | {s['totals']['before FCP'].get(g, 0)} | {s['totals']['after FCP'].get(g, 0)} |")
    lines += ["", "Longest tasks:", ""]
    for t in s["long_tasks"]:
        inside = ", ".join(f"{g} {v}" for g, v in t["inside"].items())
        lines.append(f"- {t['ms']} ms, starting at {t['start_ms']} ms: {inside}")
    lines.append("")
    return "\n".join(lines)
