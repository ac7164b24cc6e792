"""``python -m sitebuild.audit`` (``make audit``): Lighthouse over every chapter page of a fresh build.

A benchmark on this machine, not a test: writes ``lighthouse/<page>.json`` and ``lighthouse/summary.md``.
Chromium is Debian's (``$CHROMIUM``, default /usr/bin/chromium); Lighthouse is the pinned npm package.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urljoin

from sitebuild.config import nav_pages
from sitebuild.browser import CHROMIUM, CHROMIUM_ARGS, BuildError, served_fresh_build

ROOT = Path(__file__).resolve().parent.parent


def chapter_urls() -> list[str]:
    return [url for _, _, url in nav_pages() if url.startswith("chapters/")]


LIGHTHOUSE = ROOT / "node_modules" / ".bin" / "lighthouse"
CATEGORIES = ("performance", "accessibility", "best-practices", "seo")


def lighthouse(base: str, out_dir: Path) -> list[tuple]:
    """Lighthouse on each chapter page under ``base``: (name, url, scores, audits, failed) rows."""
    rows = []
    for url in chapter_urls():
        name = url.strip("/").split("/")[-1] or "home"
        report = out_dir / f"{name}.json"
        flags = " ".join(["--headless=new", *CHROMIUM_ARGS])
        cmd = [
            str(LIGHTHOUSE), urljoin(base, url), "--output=json", f"--output-path={report}",
            f"--chrome-flags={flags}", "--quiet",
            "--only-categories=" + ",".join(CATEGORIES),
        ]
        proc = subprocess.run(cmd, env=dict(os.environ, CHROME_PATH=CHROMIUM), capture_output=True, text=True)
        if proc.returncode != 0 or not report.is_file():
            raise RuntimeError(f"lighthouse failed on {url}:\n{proc.stdout}{proc.stderr}")
        data = json.loads(report.read_text(encoding="utf-8"))
        scores = {c: data["categories"][c]["score"] for c in CATEGORIES}
        audits = data["audits"]
        failed = sorted({
            ref["id"]
            for c in CATEGORIES for ref in data["categories"][c]["auditRefs"]
            if ref["weight"] > 0 and (audits[ref["id"]].get("score") is not None)
            and audits[ref["id"]]["score"] < 0.9
        })
        rows.append((name, url, scores, audits, failed, data))
        print(f"lighthouse {url}: " + ", ".join(f"{c} {s * 100:.0f}" for c, s in scores.items()), flush=True)
    return rows


def main() -> int:
    """Lighthouse on every chapter page of a fresh local build. A benchmark, not a test."""
    out_dir = ROOT / "lighthouse"
    out_dir.mkdir(exist_ok=True)
    try:
        with served_fresh_build() as (base, _):
            rows = lighthouse(base, out_dir)
    except (BuildError, RuntimeError) as exc:
        sys.stderr.write(f"{exc}\n")
        return 1
    data = rows[-1][-1]
    lines = [
        "# Lighthouse",
        "",
        f"Lighthouse {data.get('lighthouseVersion')} ({data['configSettings']['formFactor']} emulation, "
        f"simulated throttling) with {CHROMIUM}, against a fresh build on a local static server without "
        "compression. A benchmark on a shared machine, not a test: timings move with the load.",
        "",
        "| page | performance | accessibility | best practices | SEO | FCP | LCP | TBT | CLS | transfer |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, url, scores, audits, failed, _ in rows:
        def metric(key):
            return audits.get(key, {}).get("displayValue", "–").replace("\xa0", " ")
        lines.append(
            f"| [{url}]({name}.json) | " + " | ".join(f"{scores[c] * 100:.0f}" for c in CATEGORIES)
            + f" | {metric('first-contentful-paint')} | {metric('largest-contentful-paint')}"
            f" | {metric('total-blocking-time')} | {metric('cumulative-layout-shift')}"
            f" | {audits['total-byte-weight']['numericValue'] / 1024:,.0f} KiB |"
        )
    lines += ["", "Audits below 90 that weigh on a score:", ""]
    for name, url, scores, audits, failed, _ in rows:
        lines.append(f"- `{url}`: " + (", ".join(f"`{k}`" for k in failed) or "none"))
    (out_dir / "summary.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print((out_dir / "summary.md").read_text(encoding="utf-8"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
