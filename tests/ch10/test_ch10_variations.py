"""Chapter 10, 模型变体、句法分析与结论: the claims its pages cite, one test each (CONVENTIONS.md, "Claims").

Started by `make chapter` (tools/new_chapter.py): the one test below fails until the chapter's first
real claim replaces it. A skeleton must not pass: a stub reported as proven would be a defect.
"""

from __future__ import annotations

import pytest


@pytest.mark.claim("ch10-first-claim", paper="§…", text="（待写）本章的第一条论断：一句读者可以检验的话")
def test_first_claim():
    pytest.fail(
        "chapter 10 is a skeleton: replace this test and its marker 'ch10-first-claim' with the "
        "chapter's first real claim (a test proving a sentence of the page, with its own id, paper "
        "section and text), and the badge [✔ 待写](/verification.md#ch10-first-claim) in "
        "docs/chapters/10-variations/index.md with that claim's badge"
    )
