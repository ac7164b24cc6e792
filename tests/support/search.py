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


CHAPTER = re.compile(r"chapters/\d\d-[^/#]+/")


def chapter_groups(groups: list[list[dict]]) -> list[list[dict]]:
    """The worker's result groups (one per page, best first; items with location and score)
    with a chapter's pages merged into one group, where the chapter first ranks, its sections
    in score order: a chapter is several pages but one unit of the site, as it was when it
    was one page."""
    merged: list[list[dict]] = []
    at: dict[str, int] = {}
    for group in groups:
        m = CHAPTER.match(group[0]["location"]) if group else None
        if m and m[0] in at:
            merged[at[m[0]]].extend(group)
            continue
        if m:
            at[m[0]] = len(merged)
        merged.append(list(group))
    for i in at.values():
        merged[i].sort(key=lambda item: -(item.get("score") or 0))
    return merged


def found(groups: list[list[str]], target: str, top: int, pages_top: int | None = None) -> bool:
    """target 'page' is among the first `pages_top` (default `top`) result pages;
    'page#anchor' also has its anchor among that page's first `top` sections. A chapter's pages
    count as one page (groups from :func:`chapter_groups`), named by the chapter's first page:
    'chapters/01-why-attention/rnn/#模型与损失' is found when chapter 01 ranks among the first
    pages and that section among the chapter's first sections."""
    page, _, anchor = target.partition("#")

    def unit(location: str) -> str:
        m = CHAPTER.match(location)
        return m[0] if m else location.split("#")[0]

    pages = [unit(g[0]) for g in groups][: pages_top or top]
    if unit(page) not in pages:
        return False
    group = groups[pages.index(unit(page))]
    sections = [unquote(loc.split("#", 1)[1]) for loc in group if "#" in loc][:top]
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


HAN = re.compile(r"[\u3400-\u9fff]+")


def single_character_only(query: str, marks: list[str]) -> bool:
    """No highlight of the first result holds two consecutive characters of the query: it was
    found by single characters (字节对编码 → 对照, 对数, 对) alone. The box highlights whole index
    words that start with a query piece, so the highlight itself may be longer than the piece.
    Only a query with two Han characters in a row is judged: in 「n < d」 single letters are the words."""
    q = "".join(query.lower().split())
    pairs = {q[i:i + 2] for i in range(len(q) - 1)}
    han = any(HAN.fullmatch(p) for p in pairs)
    return bool(marks) and han and not any(p in m.lower() for m in marks for p in pairs)


MARK = re.compile(r"<mark[^>]*>(.*?)</mark>", re.S)


def marks(item: dict) -> list[str]:
    """The words a result item (worker item: title, text) highlights."""
    return [re.sub(r"<[^>]+>", "", m) for m in MARK.findall(item.get("title", "") + item.get("text", ""))]


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
