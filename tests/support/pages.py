"""What a page states, read back by the tests: a derived number typed in prose must equal the computed one."""

from __future__ import annotations

import re
from functools import cache

from tests.support.sections import DOCS


@cache
def plain(page: str) -> str:
    """The page's Markdown with TeX spacing and grouping removed: "1{,}048{,}576\\ \\text{B}" -> "1048576B".

    ``page`` is a file under docs/, or a chapter's folder ("chapters/01-why-attention/"): then
    every page of the chapter, since a chapter is several pages."""
    path = DOCS / page
    files = sorted(path.glob("*.md")) if path.is_dir() else [path]
    text = "\n".join(f.read_text(encoding="utf-8") for f in files)
    text = re.sub(r"\\(?:text|mathrm|operatorname)\{([^{}]*)\}", r"\1", text)
    text = text.replace("{,}", "").replace("\\ ", "").replace("\\,", "").replace("$", "")
    return re.sub(r"[\s,]", "", text)


def assert_states(page: str, *values: str) -> None:
    """Each value (written without spaces or thousands separators) appears on the page."""
    missing = [v for v in values if re.sub(r"[\s,]", "", v) not in plain(page)]
    assert not missing, f"docs/{page} does not state {missing}"


def chapter(number: str) -> str:
    """"chapters/01-why-attention/": the folder of chapter ``number`` ("01")."""
    found = sorted(DOCS.glob(f"chapters/{number}-*/index.md"))
    assert len(found) == 1, f"chapter {number}: {found}"
    return found[0].parent.relative_to(DOCS).as_posix() + "/"


CH01 = chapter("01")
CH01_QUESTIONS = CH01 + "questions.md"
CH02 = chapter("02")
