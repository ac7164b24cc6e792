"""What each chapter costs `make test`: test time attributed to chapters from a JUnit XML report.

    .venv/bin/pytest --codeblocks tests docs --junitxml=test-output/junit.xml
    .venv/bin/python -m tools.chapter_cost test-output/junit.xml [WORKERS]

A test item belongs to chapter NN when its file is under tests/chNN/ or docs/chapters/NN-*/,
or when its parameters name the chapter's page (`01-why-attention`, `chapters/03-…`); the rest
(shared site, probes, browser setup) is listed as shared. A browser page visit, made once per run
by whichever test asks first (or by a worker that would otherwise wait), is charged to the page it
visited (the test's JUnit property ``visit``). The one site build is shared too.
Times are worker-seconds (the sum of the items' times); with WORKERS xdist workers sharing the
load, a chapter adds about worker-seconds / WORKERS to the wall time (the last column).
A benchmark for the closing notes, not a test.
"""

from __future__ import annotations

import re
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# a chapter's test folder, or its page slug (`01-why-attention`) as the docs folder names it;
# not a parameter pair such as `16-64-lstm`
SLUGS = "|".join(re.escape(p.name) for p in sorted((ROOT / "docs" / "chapters").glob("[0-9][0-9]-*")))
CHAPTER = re.compile(r"(?:tests/ch|tests\.ch|ch|chapters/|chapters\.)(\d{2})(?:[-_/.]|$)"
                     r"|\b(?=(?:" + SLUGS + r")\b)(\d{2})-")


def chapter_of(classname: str, name: str) -> str:
    for text in (classname.replace(".", "/"), name):
        m = CHAPTER.search(text)
        if m:
            return "ch" + (m.group(1) or m.group(2))
    return "shared"


def main(path: str, workers: int = 1) -> int:
    totals: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    for case in ET.parse(path).getroot().iter("testcase"):
        key = chapter_of(case.get("classname", ""), case.get("name", ""))
        totals[key] += float(case.get("time", 0))
        counts[key] += 1
        # a page visit one test made for all (tests/browser/conftest.py): charged to the page's chapter
        for prop in case.iter("property"):
            if prop.get("name") == "visit":
                page, seconds = prop.get("value", "").rsplit(" ", 1)
                totals[key] -= float(seconds)
                totals[chapter_of("", page)] += float(seconds)
    width = max(map(len, totals))
    for key in sorted(totals):
        print(f"{key:<{width}}  {counts[key]:4d} items  {totals[key]:7.1f} s  ~{totals[key] / workers:6.1f} s wall")
    total = sum(totals.values())
    print(f"{'total':<{width}}  {sum(counts.values()):4d} items  {total:7.1f} s  ~{total / workers:6.1f} s wall")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1))
