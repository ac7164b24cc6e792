"""What a page states, read back by the tests: a derived number typed in prose must equal the computed one."""

from __future__ import annotations

import re
from functools import cache

from tests.support.sections import DOCS


@cache
def plain(page: str) -> str:
    """The page's Markdown with TeX spacing and grouping removed: "1{,}048{,}576\\ \\text{B}" -> "1048576B"."""
    text = (DOCS / page).read_text(encoding="utf-8")
    text = re.sub(r"\\(?:text|mathrm|operatorname)\{([^{}]*)\}", r"\1", text)
    text = text.replace("{,}", "").replace("\\ ", "").replace("\\,", "").replace("$", "")
    return re.sub(r"[\s,]", "", text)


def assert_states(page: str, *values: str) -> None:
    """Each value (written without spaces or thousands separators) appears on the page."""
    missing = [v for v in values if re.sub(r"[\s,]", "", v) not in plain(page)]
    assert not missing, f"docs/{page} does not state {missing}"


CH01 = "chapters/01-why-attention/index.md"
CH01_QUESTIONS = "chapters/01-why-attention/questions.md"
CH02 = "chapters/02-architecture/index.md"
