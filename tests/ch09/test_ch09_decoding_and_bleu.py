"""Chapter 09, 推理与评测：束搜索、检查点平均与 BLEU: the claims its pages cite, one test each (CONVENTIONS.md, "Claims").

Started by `make chapter` (tools/new_chapter.py): the one test below fails until the chapter's first
real claim replaces it. A skeleton must not pass: a stub reported as proven would be a defect.
"""

from __future__ import annotations

import pytest


@pytest.mark.claim("ch09-first-claim", paper="§…", text="（待写）本章的第一条论断：一句读者可以检验的话")
def test_first_claim():
    pytest.fail(
        "chapter 09 is a skeleton: replace this test and its marker 'ch09-first-claim' with the "
        "chapter's first real claim (a test proving a sentence of the page, with its own id, paper "
        "section and text), and the badge [✔ 待写](/verification.md#ch09-first-claim) in "
        "docs/chapters/09-decoding-and-bleu/index.md with that claim's badge"
    )
