"""Claims: which test proves which sentence on which page.

A test declares the claim it proves with ``@pytest.mark.claim("ch01-c03", paper="§…",
text="…")``; a page cites it with a link to ``verification.md#ch01-c03``. This module
reads both (tests through ``ast``, pages through a regular expression, nothing is
imported or run) and writes ``docs/generated/verification-table.md``, which
``docs/verification.md`` includes. The site tests use the same readers to fail the
suite when a page cites an unknown id or a claim test is cited nowhere. The chapters
and their titles come from the nav of mkdocs.yml.

Run: ``python -m sitebuild.claims``.
"""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

from sitebuild.config import chapters

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
TESTS = ROOT / "tests"
OUT = DOCS / "generated" / "verification-table.md"

CLAIM_ID = re.compile(r"^ch\d{2}-[a-z0-9][a-z0-9-]*$")
PAGE_REF = re.compile(r"verification\.md#(ch\d{2}-[a-z0-9][a-z0-9-]*)")

@dataclass
class Claim:
    id: str
    paper: str
    text: str
    test_file: str  # relative to the repo root
    test_name: str  # e.g. "test_x" or "TestY::test_x"
    source: str  # the decorated test function, dedented
    results: str | None = None
    pages: list[str] = field(default_factory=list)

    @property
    def nodeid(self) -> str:
        return f"{self.test_file}::{self.test_name}"


def _claim_call(decorator: ast.expr) -> ast.Call | None:
    """Return the Call node if the decorator is ``pytest.mark.claim(...)`` (or ``mark.claim``)."""
    if isinstance(decorator, ast.Call) and isinstance(decorator.func, ast.Attribute):
        if decorator.func.attr == "claim":
            return decorator
    return None


def _literal(node: ast.expr | None) -> str | None:
    if node is None:
        return None
    value = ast.literal_eval(node) if isinstance(node, ast.Constant) else None
    if not isinstance(value, str):
        raise TypeError(f"line {node.lineno}: claim arguments must be string literals (the claims page reads "
                        f"them without running the test), got {ast.unparse(node)}")
    return value


def _functions(tree: ast.Module):
    """Yield (qualified name, function node) for module-level tests and tests in classes."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node.name, node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    yield f"{node.name}::{item.name}", item


def collect_claims(tests_dir: Path = TESTS) -> list[Claim]:
    """Every ``@pytest.mark.claim`` in ``tests/**/*.py``, in file and line order."""
    claims: list[Claim] = []
    for path in sorted(tests_dir.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text, filename=str(path))
        lines = text.splitlines()
        for name, func in _functions(tree):
            for decorator in func.decorator_list:
                call = _claim_call(decorator)
                if call is None:
                    continue
                if not call.args:
                    raise ValueError(f"{path}:{call.lineno}: claim() needs an id as its first argument")
                kwargs = {kw.arg: kw.value for kw in call.keywords}
                start = min(d.lineno for d in func.decorator_list)
                source = textwrap.dedent("\n".join(lines[start - 1 : func.end_lineno]))
                try:
                    claims.append(
                        Claim(
                            id=_literal(call.args[0]),
                            paper=_literal(kwargs.get("paper")) or "",
                            text=_literal(kwargs.get("text")) or "",
                            results=_literal(kwargs.get("results")),
                            test_file=path.relative_to(tests_dir.parent).as_posix(),
                            test_name=name,
                            source=source,
                        )
                    )
                except TypeError as exc:
                    raise TypeError(f"{path.relative_to(tests_dir.parent)}: {exc}") from None
    return claims


def collect_page_refs(docs_dir: Path = DOCS) -> dict[str, list[str]]:
    """Claim id -> pages (relative to docs/) that cite it. Generated files are skipped."""
    refs: dict[str, list[str]] = {}
    for path in sorted(docs_dir.rglob("*.md")):
        rel = path.relative_to(docs_dir).as_posix()
        if rel.startswith("generated/"):
            continue
        for claim_id in PAGE_REF.findall(path.read_text(encoding="utf-8")):
            pages = refs.setdefault(claim_id, [])
            if rel not in pages:
                pages.append(rel)
    return refs


def _page_links(rel: str) -> list[str]:
    """Markdown links to the built pages where a source file's citations appear.

    ``questions.md`` is not a page of its own: it is included into its chapter and
    into the question bank, so a citation there appears on both.
    """
    if rel.endswith("/questions.md"):
        chapter = chapters()["ch" + rel.split("/")[1][:2]]
        return [f"[{chapter[0]} · 面试追问](/{chapter[1]})", "[面试题库](/interview.md)"]
    for title, page in chapters().values():
        if rel == page:
            return [f"[{title}](/{page})"]
    title = {"index.md": "首页", "guide.md": "阅读指南", "interview.md": "面试题库"}.get(rel, rel)
    return [f"[{title}](/{rel})"]


def render(claims: list[Claim], refs: dict[str, list[str]]) -> str:
    by_chapter: dict[str, list[Claim]] = {}
    for claim in claims:
        claim.pages = refs.get(claim.id, [])
        by_chapter.setdefault(claim.id[:4], []).append(claim)

    out = [f"共 {len(claims)} 个论断，全部由 `make test` 运行的测试证明。", ""]
    for chapter in sorted(by_chapter):
        title, _ = chapters().get(chapter, (chapter, None))
        items = sorted(by_chapter[chapter], key=lambda c: c.id)
        out += [f"## {title}", "", "| 编号 | 论断 | 论文 | 测试 |", "|---|---|---|---|"]
        for c in items:
            out.append(f"| [{c.id}](#{c.id}) | {c.text} | {c.paper} | `{c.test_name}` |")
        out.append("")
        for c in items:
            links = [link for page in c.pages for link in _page_links(page)]
            pages = "、".join(dict.fromkeys(links)) or "（无）"
            out += [f"### {c.id} {{#{c.id}}}", "", f"**论断**：{c.text}  ", f"**论文**：{c.paper}  "]
            out += [f"**测试**：`{c.nodeid}`  ", f"**出现在**：{pages}  "]
            if c.results:
                out.append(f"**结果文件**：`{c.results}`  ")
            out += [
                "",
                '??? example "测试源码"',
                '    <!--pytest.mark.skip(reason="test source shown for reference; pytest runs it from tests/")-->',
                "    ```python",
                textwrap.indent(c.source, "    "),
                "    ```",
                "",
            ]
    return "\n".join(out) + "\n"


def main() -> None:
    claims = collect_claims()
    ids = [c.id for c in claims]
    bad = [i for i in ids if not CLAIM_ID.match(i)]
    if bad:
        raise SystemExit(f"malformed claim ids: {bad}")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(render(claims, collect_page_refs()), encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)} ({len(claims)} claims)")


if __name__ == "__main__":
    main()
