"""What each chapter costs `make test`: test time attributed to chapters from a JUnit XML report.

    .venv/bin/pytest --codeblocks tests docs --junitxml=test-output/junit.xml
    .venv/bin/python -m tests.support.chapter_cost test-output/junit.xml

A test item belongs to chapter NN when its file is under tests/chNN/ or docs/chapters/NN-*/,
or when its parameters name the chapter's page (`01-why-attention`, `chapters/03-…`); the rest
(shared site, probes, browser setup) is listed as shared. The one site build is shared too.
A benchmark for the closing notes, not a test.
"""

from __future__ import annotations

import re
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict

CHAPTER = re.compile(r"(?:tests/ch|tests\.ch|ch|chapters/|chapters\.)(\d{2})(?:[-_/.]|$)|\b(\d{2})-[a-z]")


def chapter_of(classname: str, name: str) -> str:
    for text in (classname.replace(".", "/"), name):
        m = CHAPTER.search(text)
        if m:
            return "ch" + (m.group(1) or m.group(2))
    return "shared"


def main(path: str) -> int:
    totals: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    for case in ET.parse(path).getroot().iter("testcase"):
        key = chapter_of(case.get("classname", ""), case.get("name", ""))
        totals[key] += float(case.get("time", 0))
        counts[key] += 1
    width = max(map(len, totals))
    for key in sorted(totals):
        print(f"{key:<{width}}  {counts[key]:4d} items  {totals[key]:7.1f} s")
    print(f"{'total':<{width}}  {sum(counts.values()):4d} items  {sum(totals.values()):7.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:]))
