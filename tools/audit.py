"""``python -m tools.audit`` (``make audit``): how fast the pages are on a phone.

A benchmark on this machine, not a test. For every chapter page, the question bank and the
home page of a fresh build, served as a stock static host serves it (:func:`static_host`:
HTTP/1.1 with keep-alive, gzip, GitHub Pages' caching headers), side by side:

- **field**: the tracing-free harness of ``tools.fieldperf`` (4× CPU, slow 4G, 412 px);
- **Lighthouse 12.2.3** mobile as shipped (``node_modules/.bin/lighthouse``, simulated throttling).

Lighthouse's simulation (Lantern) replays the load over the connections it saw, so the audit
serves the build as a host would, kept alive (``sitebuild/serve.py`` speaks HTTP/1.0, one
connection per request). Why the audit moved to this setting: tools/history.md (2026-12-03).

Each number is the median of ``RUNS`` loads (default 3). Budgets (from the issue): TBT ≤ 600 ms,
no task over 300 ms after first paint, LCP ≤ 2.5 s, formulas typeset at first paint;
Lighthouse performance ≥ 90 and accessibility 100. Then one traced load of the first chapter
(no invalidationTracking) says what the main thread spends its time on.

Writes ``lighthouse/summary.md``, ``lighthouse/<page>-<run>.json`` and
``lighthouse/trace-<page>.md``. ``PAGES="01-why-attention interview"`` limits the pages,
``RUNS=1`` makes a quick pass, ``LIGHTHOUSE_RUNS=1`` runs Lighthouse once per page (it takes
longest), ``LIGHTHOUSE=none`` skips it.
"""

from __future__ import annotations

import contextlib
import email.utils
import functools
import gzip
import hashlib
import http.server
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urljoin

from sitebuild.browser import CHROMIUM, CHROMIUM_ARGS, BuildError, chromium
from sitebuild.config import nav_pages, page_name, picked
from sitebuild.serve import GZIP_SUFFIXES, free_port
from tools import fieldperf, tracebreakdown

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "lighthouse"
LIGHTHOUSE = str(ROOT / "node_modules" / ".bin" / "lighthouse")
CATEGORIES = ("performance", "accessibility")
BUDGET = {"tbt": 600, "longest_task": 300, "lcp": 2500, "performance": 90, "accessibility": 100}


class StaticHostHandler(http.server.SimpleHTTPRequestHandler):
    """What a stock static host (GitHub Pages) sends: HTTP/1.1 with keep-alive, text gzipped
    (compressed once, not per request), Content-Length, Last-Modified, ETag, Vary and
    ``Cache-Control: max-age=600``. No HTTP/2: that needs TLS, and the audit loads are cold."""

    protocol_version = "HTTP/1.1"
    compressed: dict[Path, bytes] = {}

    def log_message(self, *args):
        pass

    def end_headers(self):
        self.send_header("Cache-Control", "max-age=600")
        super().end_headers()

    def send_head(self):
        path = Path(self.translate_path(self.path))
        if path.is_dir() and self.path.split("?")[0].endswith("/"):
            path = path / "index.html"
        if not (path.is_file() and path.suffix in GZIP_SUFFIXES and "gzip" in self.headers.get("Accept-Encoding", "")):
            return super().send_head()
        body = self.compressed.get(path)
        if body is None:
            body = self.compressed[path] = gzip.compress(path.read_bytes(), 9, mtime=0)
        self.send_response(200)
        self.send_header("Content-Type", self.guess_type(str(path)))
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Vary", "Accept-Encoding")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Last-Modified", email.utils.formatdate(path.stat().st_mtime, usegmt=True))
        self.send_header("ETag", '"' + hashlib.sha1(body).hexdigest()[:16] + '"')
        self.end_headers()
        return io.BytesIO(body)


@contextlib.contextmanager
def static_host(directory: Path, port: int):
    """Serve ``directory`` on 127.0.0.1:``port`` like a stock static host; yields the base URL."""
    handler = functools.partial(StaticHostHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def built_and_hosted():
    """A fresh ``mkdocs build --strict`` whose ``site_url`` is the origin it is then served from."""
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="site-") as tmp:
        site_dir = Path(tmp) / "site"
        env = dict(os.environ, NO_MKDOCS_2_WARNING="1", SITE_URL=f"http://127.0.0.1:{port}/")
        build = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site_dir)],
                               cwd=ROOT, env=env, capture_output=True, text=True)
        if build.returncode != 0:
            raise BuildError(build.stdout + build.stderr)
        with static_host(site_dir, port) as base:
            yield base


def audited_urls() -> list[str]:
    """Every chapter page, the question bank and the home page (site-relative URLs)."""
    urls = [url for _, _, url in nav_pages() if url.startswith("chapters/")]
    return urls + ["interview/", ""]


def run_lighthouse(url: str, report: Path) -> dict:
    """One run of Lighthouse as shipped (mobile, simulated throttling); returns scores (0-100)
    and the metrics in ms."""
    flags = " ".join(["--headless=new", *CHROMIUM_ARGS])
    cmd = [LIGHTHOUSE, url, "--output=json", f"--output-path={report}", "--quiet",
           f"--chrome-flags={flags}", "--only-categories=" + ",".join(CATEGORIES)]
    proc = subprocess.run(cmd, cwd=ROOT, env=dict(os.environ, CHROME_PATH=CHROMIUM), capture_output=True, text=True)
    if proc.returncode != 0 or not report.is_file():
        raise RuntimeError(f"lighthouse failed on {url}:\n{proc.stdout}{proc.stderr}")
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


def measure_all(base: str, urls: list[str], runs: int, lighthouse_runs: int) -> dict[str, dict]:
    """Field and Lighthouse runs for each page, interleaved so that load on the machine
    spreads over all of them. Lighthouse runs ``lighthouse_runs`` times (it is the slow one)."""
    results: dict[str, dict] = {url: {"field": [], "lighthouse": []} for url in urls}
    total = len(urls) * (runs + min(runs, lighthouse_runs))
    done, started = 0, time.monotonic()
    with chromium() as browser:
        for run in range(runs):
            for url in urls:
                m = fieldperf.measure(browser, urljoin(base, url))
                results[url]["field"].append(m)
                done += 1
                progress(done, total, f"field {url or '/'}: TBT {m['tbt']:.0f} ms, longest {m['longest_task']:.0f} ms", started)
                if run < lighthouse_runs:
                    r = run_lighthouse(urljoin(base, url), OUT / f"{page_name(url)}-{run + 1}.json")
                    results[url]["lighthouse"].append(r)
                    done += 1
                    progress(done, total, f"lighthouse {url or '/'}: performance {r['performance']}, "
                                          f"LCP {r['lcp']:.0f} ms, TBT {r['tbt']:.0f} ms", started)
    return results


def ms(value: float | None) -> str:
    return "–" if value is None else f"{value / 1000:.1f} s" if value >= 1000 else f"{value:.0f} ms"


def index(value: float | None) -> str:
    return "–" if value is None else f"{value:.0f}"


def mark(ok: bool) -> str:
    return "" if ok else " ✗"


def summary(results: dict[str, dict], runs: int, lighthouse_runs: int, version: str) -> str:
    """The tables of lighthouse/summary.md; each number is a median over the runs made."""
    lines = [
        "# Phone performance (`make audit`)",
        "",
        f"A fresh build served as a stock static host serves it (HTTP/1.1 keep-alive, gzip) on 127.0.0.1; "
        f"Chromium {CHROMIUM}; each number is the median of the runs made ({runs} per page, Lighthouse "
        f"{min(runs, lighthouse_runs)}). A benchmark on a shared 2-core machine, not a test: numbers move with the "
        "load. ✗ marks a number over its budget.",
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
    if not lighthouse_runs:
        return "\n".join(lines) + "\n"
    speeds = [row["benchmark"] for r in results.values() for row in r["lighthouse"] if row.get("benchmark")]
    speed = (f" Lighthouse's BenchmarkIndex of this machine (its speed before each run, higher is faster) went "
             f"from {min(speeds):.0f} to {max(speeds):.0f} during these runs: the 4× slowdown is of a host whose "
             "speed moves.") if speeds else ""
    lines += ["", f"**Lighthouse {version} as shipped**, mobile, simulated throttling. Budgets: performance ≥ 90, "
                  f"accessibility 100.{speed}", "",
              "| page | performance | accessibility | FCP | LCP | TBT | BenchmarkIndex | audits under 90 |",
              "|---|---:|---:|---:|---:|---:|---:|---|"]
    for url, r in results.items():
        rows = r["lighthouse"]
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


def main() -> int:
    runs = int(os.environ.get("RUNS", "3"))
    lighthouse_runs = 0 if os.environ.get("LIGHTHOUSE") == "none" else int(os.environ.get("LIGHTHOUSE_RUNS", runs))
    wanted = os.environ.get("PAGES", "").split()
    urls = [u for u in audited_urls() if picked(u, wanted)]
    OUT.mkdir(exist_ok=True)
    try:
        with built_and_hosted() as base:
            results = measure_all(base, urls, runs, lighthouse_runs)
            version = next((r["lighthouse"][0]["version"] for r in results.values() if r["lighthouse"]), "–")
            (OUT / "results.json").write_text(json.dumps(results, indent=1, ensure_ascii=False), encoding="utf-8")
            text = summary(results, runs, lighthouse_runs, version)
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
