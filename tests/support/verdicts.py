"""A page's sentence about a toy comparison, read against the helper's verdict on the committed file.

A claim test finds the sentence (by a fragment it contains) and calls :func:`assert_reading` with the
comparison (snippets.stats.compare_seeds). The sentence must name the seed count, and its words may
say no more than the verdict allows (docs/reading-experiments.md, 「区间与结论」):

- 「不足以下结论」: the sentence hedges (看不出、分不出、不足以下结论…); a comparative word
  (更高、更好、不如…) may appear only in a clause that hedges it;
- a comparative word agrees with the sign of the mean difference (``higher`` words need b > a);
- 「总是」「每个种子上都…」: only with 「一致」;
- 「没有差别」: never, since an interval that includes 0 shows too little data, not equality.
"""

from __future__ import annotations

import re

from snippets.stats import SeedComparison
from tests.support.sections import DOCS

HIGHER = ("更高", "更好", "更大", "更多", "高于", "优于", "胜过", "提高")
LOWER = ("更低", "更差", "更小", "更少", "低于", "不如", "降低")
UNIVERSAL = ("总是", "都更", "都高", "都低", "每个种子上都", "从不", "始终")
NO_DIFFERENCE = ("没有差别", "没有区别", "一样好", "持平", "无差别")
HEDGES = ("看不出", "分不出", "不足以下结论", "不能说", "无法断定", "说不上", "定不下")


def sentence(page: str, fragment: str) -> str:
    """The one sentence of docs/<page> (split at 。！？; and line ends) that contains ``fragment``."""
    text = (DOCS / page).read_text(encoding="utf-8")
    found = [s for s in re.split(r"(?<=[。！？；])|\n", text) if fragment in s]
    assert len(found) == 1, f"docs/{page}: {len(found)} sentences contain {fragment!r}"
    return found[0]


def problems(text: str, c: SeedComparison, higher=HIGHER, lower=LOWER) -> list[str]:
    """What in ``text`` reads ``c`` more strongly than its verdict allows (empty: the reading holds)."""
    found = []
    if f"{c.n} 个种子" not in text:
        found.append(f"names no seed count ({c.n} 个种子)")
    hedged = any(h in text for h in HEDGES)
    ups = [w for w in higher if w in text]
    downs = [w for w in lower if w in text]
    if c.verdict == "不足以下结论":
        if not hedged:
            found.append(f"verdict is 不足以下结论 but the sentence does not hedge ({'、'.join(HEDGES[:3])}…)")
        # a comparative word only inside a hedged clause: 「看不出平滑后更高」, not 「平滑后更高，看不出…」
        for clause in re.split(r"[，,：:（）()]", text):
            words = [w for w in higher + lower if w in clause]
            if words and not any(h in clause for h in HEDGES):
                found.append(f"verdict is 不足以下结论 but the clause {clause.strip()!r} says {words}")
    else:
        if ups and c.sign <= 0:
            found.append(f"says {ups} but the mean difference is {c.mean_difference:+.4g}")
        if downs and c.sign >= 0:
            found.append(f"says {downs} but the mean difference is {c.mean_difference:+.4g}")
    universal = [w for w in UNIVERSAL if w in text]
    if universal and c.verdict != "一致":
        found.append(f"says {universal} but the verdict is {c.verdict} ({c.n_agree}/{c.n} seeds agree)")
    same = [w for w in NO_DIFFERENCE if w in text]
    if same:
        found.append(f"says {same}: an interval that includes 0 is too little data, not equality")
    return found


def assert_reading(page: str, fragment: str, c: SeedComparison, stated: str | None = None, **words) -> str:
    """The sentence of ``page`` holding ``fragment`` reads ``c`` as its verdict allows; returns it.

    ``stated``: text the sentence must contain, typically ``snippets.stats.describe(c, ...)`` (mean
    difference, interval, seeds that agree, verdict), so that the page's numbers are the helper's."""
    text = sentence(page, fragment)
    found = problems(text, c, **words)
    if stated is not None and stated not in text:
        found.append(f"does not state {stated!r}")
    assert not found, f"docs/{page}: {text.strip()!r} — " + "; ".join(found)
    return text
