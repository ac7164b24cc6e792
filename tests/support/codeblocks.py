"""Which docs code blocks only include snippet sections (the root conftest.py skips them)."""

from __future__ import annotations

import re

INCLUDE = re.compile(r'\s*--8<--\s+"(snippets/[^":]+)(?::[\w-]+)?"\s*')


def included_modules(code: str) -> list[str] | None:
    """The snippet files a block includes, or None if the block holds anything but includes."""
    lines = [line for line in code.splitlines() if line.strip()]
    matches = [INCLUDE.fullmatch(line) for line in lines]
    if not lines or not all(matches):
        return None
    return sorted({m.group(1) for m in matches})
