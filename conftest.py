"""Docs code blocks (pytest --codeblocks): a block that only includes sections of snippets/
(``--8<-- "snippets/x.py:name"``) is skipped here, since its code runs in the snippet's own
tests and, page by page, in tests/site/test_pages.py. Every other ```python block runs.

It lives at the root so that ``pytest --codeblocks docs`` alone skips them too.
"""

from __future__ import annotations

import re

import pytest

INCLUDE = re.compile(r'\s*--8<--\s+"(snippets/[^":]+)(?::[\w-]+)?"\s*')


def included_modules(code: str) -> list[str] | None:
    """The snippet files a block includes, or None if the block holds anything but includes."""
    lines = [line for line in code.splitlines() if line.strip()]
    matches = [INCLUDE.fullmatch(line) for line in lines]
    if not lines or not all(matches):
        return None
    return sorted({m.group(1) for m in matches})


def pytest_collection_modifyitems(config, items):
    for item in items:
        block = getattr(item, "obj", None)
        code = getattr(block, "code", None)
        if not isinstance(code, str) or getattr(block, "syntax", None) != "python":
            continue
        modules = included_modules(code)
        if modules:
            item.add_marker(pytest.mark.skip(
                reason=f"included from {', '.join(modules)}: runs in its tests and in tests/site/test_pages.py"))
