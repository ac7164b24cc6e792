"""The search expectations (search_queries.json): queries readers type, the page (and section)
each must find, and how a result set from Material's search worker is scored against them."""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import unquote

QUERIES_FILE = Path(__file__).with_name("search_queries.json")

# What a result title or preview must not show: TeX delimiters and commands, dollar math,
# permalink pilcrows, notebook prompts and copy-button labels.
RAW_MARKUP = re.compile(r"\\[()\[\]]|\\[A-Za-z]{2,}|\$|¶|In\s*\[\s*\d*\s*\]:|Copied!")


def load_queries() -> dict:
    return json.loads(QUERIES_FILE.read_text(encoding="utf-8"))


CHAPTER_ROOT = re.compile(r"chapters/\d\d-[^/]+/")


def found(groups: list[list[str]], target: str, top: int, pages_top: int | None = None) -> bool:
    """target 'page' is among the first `pages_top` (default `top`) result pages;
    'page#anchor' also has its anchor among that page's first `top` sections. A chapter's first
    page without an anchor ('chapters/01-why-attention/') stands for the chapter: any of its
    pages counts (a chapter is several pages; the query asks that the chapter answers it)."""
    page, _, anchor = target.partition("#")
    pages = [g[0].split("#")[0] for g in groups][: pages_top or top]
    if not anchor and CHAPTER_ROOT.fullmatch(page):
        return any(p.startswith(page) for p in pages)
    if page not in pages:
        return False
    sections = [unquote(loc.split("#", 1)[1]) for loc in groups[pages.index(page)] if "#" in loc][:top]
    return not anchor or anchor in sections


def evaluate(spec: dict, results: dict[str, list[list[str]]]) -> dict:
    """Recall over all queries; ranking misses of queries marked ``first`` (their page must be
    the first result, its section among the first `top`)."""
    top = spec["top"]
    report, misses, rank_misses = [], [], []
    for q in spec["queries"]:
        groups = results[q["q"]]
        expected = q["page"] + ("#" + q["anchor"] if q.get("anchor") else "")
        targets = [expected, *q.get("or", [])]
        hit = any(found(groups, t, top) for t in targets)
        first = any(found(groups, t, top, pages_top=1) for t in targets)
        row = {"q": q["q"], "kind": q["kind"], "hit": hit, "first": first, "expected": expected,
               "top": [[unquote(loc) for loc in g[:top]] for g in groups[:top]]}
        report.append(row)
        if not hit:
            misses.append(f"{q['q']!r} ({q['kind']}): want {expected}, got {row['top']}")
        if q.get("first") and not first:
            rank_misses.append(f"{q['q']!r}: want {expected} first, got {row['top']}")
    recall = 1 - len(misses) / len(spec["queries"])
    ranked = [q for q in spec["queries"] if q.get("first")]
    return {"report": report, "misses": misses, "rank_misses": rank_misses, "recall": recall,
            "ranked": len(ranked), "first_rate": sum(r["first"] for r in report) / len(report)}


def raw_markup(items: list[dict]) -> list[str]:
    """Result titles/previews (worker items: location, title, text) that show raw markup."""
    bad = []
    for item in items:
        for field in ("title", "text"):
            # inline code may show a backslash (`\\input`); everything else is prose
            text = re.sub(r"<code>.*?</code>|<[^>]+>", "", item.get(field) or "")
            if m := RAW_MARKUP.search(text):
                bad.append(f"{item['location']} {field}: …{text[max(0, m.start() - 30):m.end() + 30]}…")
    return bad
