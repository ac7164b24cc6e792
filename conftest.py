"""Docs code blocks (pytest --codeblocks): a block that only includes sections of snippets/
(``--8<-- "snippets/x.py:name"``) is skipped, since its code runs in the snippet's own tests and,
page by page, in tests/site/test_pages.py. Every other ```python block runs.

It lives at the root so that ``pytest --codeblocks docs`` alone skips them too.
"""

from __future__ import annotations

import pytest

from tests.support.codeblocks import included_modules


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
