"""``python -m tools.audit`` (``make audit``): how fast the pages are on a phone.

A benchmark on this machine, not a test. For every chapter page, the question bank and the
home page of a fresh build, served with gzip as GitHub Pages serves it, side by side:

- **field**: the tracing-free harness of ``tools.fieldperf`` (4× CPU, slow 4G, 412 px);
- **Lighthouse 12.2.3** mobile as shipped ("stock");
- **Lighthouse, untracked**: the same with the ``invalidationTracking`` trace category removed
  (``tools/lighthouse_untracked.mjs``), which on large pages slows Chromium's style work.

Each number is the median of ``RUNS`` loads (default 3). Budgets (from the issue): TBT ≤ 600 ms,
no task over 300 ms after first paint, LCP ≤ 2.5 s, formulas typeset at first paint;
Lighthouse performance ≥ 90 and accessibility 100. Then one traced load of the first chapter
(no invalidationTracking) says what the main thread spends its time on.

Writes ``lighthouse/summary.md``, ``lighthouse/<page>-<variant>-<run>.json`` and
``lighthouse/trace-<page>.md``. ``PAGES="01-why-attention interview"`` limits the pages,
``RUNS=1`` makes a quick pass, ``STOCK_RUNS=1`` runs stock Lighthouse once per page (it takes
longest), ``LIGHTHOUSE=stock|untracked|both|none`` picks the Lighthouse runs.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urljoin

from sitebuild.browser import CHROMIUM, CHROMIUM_ARGS, BuildError, chromium, served_fresh_build
from sitebuild.config import nav_pages, page_name, picked
from tools import fieldperf, tracebreakdown

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "lighthouse"
LIGHTHOUSE = {
    "stock": [str(ROOT / "node_modules" / ".bin" / "lighthouse")],
    "untracked": ["node", str(ROOT / "tools" / "lighthouse_untracked.mjs")],
}
CATEGORIES = ("performance", "accessibility")
BUDGET = {"tbt": 600, "longest_task": 300, "lcp": 2500, "performance": 90, "accessibility": 100}


def audited_urls() -> list[str]:
    """Every chapter page, the question bank and the home page (site-relative URLs)."""
    urls = [url for _, _, url in nav_pages() if url.startswith("chapters/")]
    return urls + ["interview/", ""]


def run_lighthouse(variant: str, url: str, report: Path) -> dict:
    """One Lighthouse run; returns scores (0-100) and the metrics in ms."""
    flags = " ".join(["--headless=new", *CHROMIUM_ARGS])
    cmd = [*LIGHTHOUSE[variant], url, "--output=json", f"--output-path={report}", "--quiet",
           f"--chrome-flags={flags}", "--only-categories=" + ",".join(CATEGORIES)]
    proc = subprocess.run(cmd, cwd=ROOT, env=dict(os.environ, CHROME_PATH=CHROMIUM), capture_output=True, text=True)
    if proc.returncode != 0 or not report.is_file():
        raise RuntimeError(f"lighthouse ({variant}) failed on {url}:\n{proc.stdout}{proc.stderr}")
    data = json.loads(report.read_text(encoding="utf-8"))
    audits = data["audits"]
    failed = sorted(
        ref["id"] for c in CATEGORIES for ref in data["categories"][c]["auditRefs"]
        if ref["weight"] > 0 and audits[ref["id"]].get("score") is not None and audits[ref["id"]]["score"] < 0.9
    )
    return {
        "version": data["lighthouseVersion"],
        "error": (data.get("runtimeError") or {}).get("code"),
        **{c: round((data["categories"][c]["score"] or 0) * 100) for c in CATEGORIES},
        "fcp": audits["first-contentful-paint"].get("numericValue"),
        "lcp": audits["largest-contentful-paint"].get("numericValue"),
        "tbt": audits["total-blocking-time"].get("numericValue"),
        "failed": failed,
        "benchmark": data.get("environment", {}).get("benchmarkIndex"),  # the host's speed at the time
    }


def median(rows: list[dict], key: str) -> float | None:
    values = [r[key] for r in rows if r.get(key) is not None]
    return statistics.median(values) if values else None


def progress(done: int, total: int, what: str, started: float) -> None:
    """One line per step: a bar, the count and the elapsed time (benchmarks are slow)."""
    width = 24
    filled = int(width * done / total)
    sys.stdout.write(f"[{'#' * filled}{'.' * (width - filled)}] {done}/{total} "
                     f"{time.monotonic() - started:5.0f}s  {what}\n")
    sys.stdout.flush()


def measure_all(base: str, urls: list[str], runs: int, variants: list[str], stock_runs: int) -> dict[str, dict]:
    """Field and Lighthouse runs for each page, interleaved so that load on the machine
    spreads over all of them. Stock Lighthouse runs ``stock_runs`` times (it is the slow one)."""
    results: dict[str, dict] = {url: {"field": [], **{v: [] for v in variants}} for url in urls}
    per_run = [[v for v in variants if v != "stock" or run < stock_runs] for run in range(runs)]
    total, done, started = len(urls) * sum(1 + len(v) for v in per_run), 0, time.monotonic()
    with chromium() as browser:
        for run in range(runs):
            for url in urls:
                m = fieldperf.measure(browser, urljoin(base, url))
                results[url]["field"].append(m)
                done += 1
                progress(done, total, f"field {url or '/'}: TBT {m['tbt']:.0f} ms, longest {m['longest_task']:.0f} ms", started)
                for variant in per_run[run]:
                    report = OUT / f"{page_name(url)}-{variant}-{run + 1}.json"
                    r = run_lighthouse(variant, urljoin(base, url), report)
                    results[url][variant].append(r)
                    done += 1
                    progress(done, total, f"lighthouse {variant} {url or '/'}: performance {r['performance']}, "
                                          f"TBT {r['tbt']:.0f} ms", started)
    return results


def ms(value: float | None) -> str:
    return "–" if value is None else f"{value / 1000:.1f} s" if value >= 1000 else f"{value:.0f} ms"


def index(value: float | None) -> str:
    return "–" if value is None else f"{value:.0f}"


def mark(ok: bool) -> str:
    return "" if ok else " ✗"


def summary(results: dict[str, dict], runs: int, variants: list[str], version: str) -> str:
    """The tables of lighthouse/summary.md; each number is a median over the runs made."""
    lines = [
        "# Phone performance (`make audit`)",
        "",
        f"A fresh build served with gzip on 127.0.0.1; Chromium {CHROMIUM}; each number is the median of the runs "
        f"made ({runs} per page, stock Lighthouse {min(runs, stock_runs(runs))}). "
        "A benchmark on a shared 2-core machine, not a test: numbers move with the load. ✗ marks a number over "
        "its budget.",
        "",
        "**Field**: tracing-free harness (`tools/fieldperf.py`: Playwright + CDP, 4× CPU, Lighthouse's slow-4G "
        "constants, 412 px phone, metrics from PerformanceObserver). Budgets: TBT ≤ 600 ms, longest task after first "
        "paint ≤ 300 ms, LCP ≤ 2.5 s, math typeset in the HTML (no formula waits for a script).",
        "",
        "| page | field TBT | longest task | long tasks | FCP | LCP | CLS | math at first paint |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for url, r in results.items():
        f = r["field"]
        tbt, longest, lcp = median(f, "tbt"), median(f, "longest_task"), median(f, "lcp")
        math = f[0]["math"] or {}
        math_ok = math.get("untypeset") == 0 and math.get("katex_scripts") == 0
        lines.append(
            f"| `{url or '/'}` | {ms(tbt)}{mark(tbt <= BUDGET['tbt'])} | {ms(longest)}{mark(longest <= BUDGET['longest_task'])}"
            f" | {median(f, 'long_tasks'):.0f} | {ms(median(f, 'fcp'))} | {ms(lcp)}{mark(lcp is not None and lcp <= BUDGET['lcp'])}"
            f" | {median(f, 'cls'):.3f}"
            f" | {'yes' if math_ok else 'NO'} ({math.get('formulas', 0)} formulas) |"
        )
    for variant in variants:
        label = {"stock": "Lighthouse 12.2.3 as shipped (stock): on pages this large its own tracing inflates style work",
                 "untracked": "Lighthouse 12.2.3 without the invalidationTracking trace category (untracked)"}[variant]
        speeds = [row["benchmark"] for r in results.values() for row in r[variant] if row.get("benchmark")]
        speed = (f" Lighthouse's BenchmarkIndex of this machine (its speed before each run, higher is faster) went "
                 f"from {min(speeds):.0f} to {max(speeds):.0f} during these runs: the 4× slowdown is of a host whose "
                 "speed moves.") if speeds else ""
        lines += ["", f"**{label}**, mobile, simulated throttling (Lighthouse {version}). Budgets: performance ≥ 90, "
                      f"accessibility 100.{speed}", "",
                  "| page | performance | accessibility | FCP | LCP | TBT | BenchmarkIndex | audits under 90 |",
                  "|---|---:|---:|---:|---:|---:|---:|---|"]
        for url, r in results.items():
            rows = r[variant]
            perf, a11y = median(rows, "performance"), median(rows, "accessibility")
            failed = sorted({a for row in rows for a in row["failed"]})
            errors = sorted({row["error"] for row in rows if row["error"]})
            lines.append(
                f"| `{url or '/'}` | {perf:.0f}{mark(perf >= BUDGET['performance'])} | {a11y:.0f}{mark(a11y >= BUDGET['accessibility'])}"
                f" | {ms(median(rows, 'fcp'))} | {ms(median(rows, 'lcp'))} | {ms(median(rows, 'tbt'))}"
                f" | {index(median(rows, 'benchmark'))}"
                f" | {', '.join(f'`{a}`' for a in failed) or '–'}{' (errors: ' + ', '.join(errors) + ')' if errors else ''} |"
            )
    return "\n".join(lines) + "\n"


def stock_runs(runs: int) -> int:
    return int(os.environ.get("STOCK_RUNS", runs))


def main() -> int:
    runs = int(os.environ.get("RUNS", "3"))
    choice = os.environ.get("LIGHTHOUSE", "both")
    variants = {"both": ["stock", "untracked"], "none": []}.get(choice, [choice])
    wanted = os.environ.get("PAGES", "").split()
    urls = [u for u in audited_urls() if picked(u, wanted)]
    OUT.mkdir(exist_ok=True)
    try:
        with served_fresh_build(compress=True) as (base, _):
            results = measure_all(base, urls, runs, variants, stock_runs(runs))
            version = next((r[v][0]["version"] for r in results.values() for v in variants), "–")
            (OUT / "results.json").write_text(json.dumps(results, indent=1, ensure_ascii=False), encoding="utf-8")
            text = summary(results, runs, variants, version)
            traced = urls[0]
            with chromium() as browser:
                breakdown = tracebreakdown.traced_load(browser, urljoin(base, traced))
            trace_md = tracebreakdown.report(traced, breakdown)
            (OUT / f"trace-{page_name(traced)}.md").write_text(trace_md, encoding="utf-8")
    except (BuildError, RuntimeError) as exc:
        sys.stderr.write(f"{exc}\n")
        return 1
    (OUT / "summary.md").write_text(text + "\n" + trace_md, encoding="utf-8")
    print(text + "\n" + trace_md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
