"""Docs code blocks (pytest --codeblocks): a block that only includes sections of snippets/
(``--8<-- "snippets/x.py:name"``) is skipped, since its code runs in the snippet's own tests and,
page by page, in tests/site/test_pages.py. Every other ```python block runs.

It lives at the root so that ``pytest --codeblocks docs`` alone skips them too.

docs/generated/ is not collected: the build writes it from results/ and tests/ (its code blocks are
the claim tests' sources, shown as ``text``, and run as the tests they are), and its largest page
is past pytest-codeblocks' 10,000-line limit.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.codeblocks import included_modules

GENERATED = Path(__file__).parent / "docs" / "generated"


def pytest_ignore_collect(collection_path, config):
    if collection_path == GENERATED or GENERATED in collection_path.parents:
        return True
    return None


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
