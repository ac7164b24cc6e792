"""Claims: which test proves which sentence on which page, and when it last passed.

A test declares the claim it proves with ``@pytest.mark.claim("ch01-c03", paper="§…",
text="…")`` (``title="…"`` optional); a page cites it with a badge linking to
``/verification.md#ch01-c03``. This module reads both (tests through ``ast``, pages as text,
nothing is imported or run) and writes, into ``docs/generated/``, a page body per chapter of the
nav (``verification-ch01.md``: the page ``verification/ch01/`` that sitebuild/hooks/refpages.py
adds, :mod:`sitebuild.refpages`), the list of chapters ``docs/verification.md`` includes
(``verification-index.md``), and every claim in one file, which a release attaches
(``verification-table.md``). Each entry has:

* a title: the badge's text and a human title (the marker's ``title=``, else the heading, question
  or bold lead its first badge sits under), with the id as a small label;
* the claim text, its plain formula notation (``h_{T−k}``, ``0.9^k``) set as sub/superscripts;
* "出现在": a link to every badge that cites it, by the id :mod:`sitebuild.hooks.claimanchors`
  gives that badge in the build (the same function numbers both);
* the last recorded run: ``test-output/junit.xml`` (``make test``, ``--junitxml``) and the
  ``run.json`` that tests/conftest.py writes beside it (commit, date, torch). Without them the
  page says 「尚无运行记录」 and reports no result;
* the test source, collapsed.

The site tests use the same readers to fail the suite when a page cites an unknown id or a
claim test is cited nowhere. The chapters and their titles come from the nav of mkdocs.yml.

Run: ``python -m sitebuild.generate.claims`` (``make figures`` runs it).
"""

from __future__ import annotations

import ast
import json
import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from xml.etree import ElementTree

from sitebuild.hooks import claimanchors
from sitebuild.config import chapters, nav_pages
from sitebuild.refpages import VERIFICATION, neighbours, page_src

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
TESTS = ROOT / "tests"
# Every claim in one file (a release attaches it); the site shows them a chapter a page (sitebuild/refpages.py).
OUT = DOCS / "generated" / "verification-table.md"
INDEX = "verification-index.md"  # the list of chapters docs/verification.md includes
# The last `make test` run: pytest's junit XML and the commit/date/torch record tests/conftest.py writes.
JUNIT = ROOT / "test-output" / "junit.xml"
RUN_RECORD = ROOT / "test-output" / "run.json"

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
    title: str | None = None  # optional: claim(..., title="…"); else the heading the badge sits under
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
        if ".claim(" not in text:  # no decorator of the form above: spare the parse
            continue
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
                            title=_literal(kwargs.get("title")),
                            test_file=path.relative_to(tests_dir.parent).as_posix(),
                            test_name=name,
                            source=source,
                        )
                    )
                except TypeError as exc:
                    raise TypeError(f"{path.relative_to(tests_dir.parent)}: {exc}") from None
    return claims


def collect_page_refs(docs_dir: Path = DOCS) -> dict[str, list[str]]:
    """Claim id -> source files (relative to docs/) that cite it. Generated files are skipped."""
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


@dataclass
class Occurrence:
    page: str  # the built page's source, relative to docs/
    anchor: str  # the badge's id on that page
    label: str  # the badge's text, e.g. "C03" or "多头参数"
    context: str  # the heading or question the badge sits under


BOLD_LEAD = re.compile(r"^[ \t]*(?:[-*+]|\d+\.)?[ \t]*\*\*([^*\n]{2,30})\*\*[：:]")
HEADING = re.compile(r'^#{2,4} +(.+?)(?: *\{[^}\n]*\})? *#*$|^[ \t]*\?\?\?\+? +\w+ +"(.+)"[ \t]*$', re.M)


def collect_occurrences(docs_dir: Path = DOCS) -> dict[str, list[Occurrence]]:
    """Claim id -> every badge that cites it, on the built pages in nav order, with its id.

    The ids come from :func:`sitebuild.hooks.claimanchors.page_badges`, the numbering the build
    itself applies, so a link made here lands on the badge.
    """
    out: dict[str, list[Occurrence]] = {}
    srcs = [src for _, src, _ in nav_pages()]
    for src in srcs:
        if not src.endswith(".md") or not (docs_dir / src).is_file():
            continue
        if src == "verification.md":  # the page this module writes lists claims; it cites none
            continue
        text, badges = claimanchors.page_badges(src, docs_dir, claimanchors.start_counts(srcs, src, docs_dir))
        headings = [(m.start(), (m[1] or m[2]).strip()) for m in HEADING.finditer(text)]
        for badge in badges:
            line = text[text.rfind("\n", 0, badge.pos) + 1 : badge.pos]
            lead = BOLD_LEAD.match(line)
            context = lead[1] if lead else next((h for pos, h in reversed(headings) if pos < badge.pos), "")
            out.setdefault(badge.claim, []).append(Occurrence(src, badge.anchor, badge.label, context))
    return out


# --- the last recorded test run (junit XML + run.json, both written by `make test`) ---------


@dataclass
class Run:
    date: str  # "2026-12-01 03:40 UTC", or "" when unknown
    commit: str  # short sha ("" when not recorded), "+" appended for a dirty tree
    torch: str
    outcomes: dict[str, list[str]]  # junit "classname::name" without parameters -> outcomes


def _junit_key(classname: str, name: str) -> str:
    return f"{classname}::{name.split('[', 1)[0]}"


def _claim_key(claim: Claim) -> str:
    """The junit XML's address of a claim test (pytest writes tests/ch01/x.py::C::t as tests.ch01.x.C / t)."""
    module = claim.test_file.removesuffix(".py").replace("/", ".")
    *classes, name = claim.test_name.split("::")
    return _junit_key(".".join([module, *classes]), name)


def read_run(junit: Path = JUNIT, record: Path = RUN_RECORD) -> Run | None:
    """The run that wrote ``junit`` (None if there is none). ``run.json`` counts only if written with it."""
    if not junit.is_file():
        return None
    root = ElementTree.parse(junit).getroot()
    outcomes: dict[str, list[str]] = {}
    for case in root.iter("testcase"):
        kinds = {child.tag for child in case}
        outcome = ("failed" if kinds & {"failure", "error"} else "skipped" if "skipped" in kinds else "passed")
        outcomes.setdefault(_junit_key(case.get("classname", ""), case.get("name", "")), []).append(outcome)
    meta = {}
    if record.is_file() and abs(record.stat().st_mtime - junit.stat().st_mtime) < 120:
        meta = json.loads(record.read_text(encoding="utf-8"))
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    date = meta.get("date") or (suite.get("timestamp", "")[:16].replace("T", " ") if suite is not None else "")
    commit = (meta.get("commit") or "")[:7] + ("+" if meta.get("dirty") else "")
    return Run(date=date, commit=commit, torch=meta.get("torch", ""), outcomes=outcomes)


def claim_status(claim: Claim, run: Run | None) -> str:
    """passed / failed / skipped, or "none" when the run did not include the claim's test."""
    results = run.outcomes.get(_claim_key(claim), []) if run else []
    if not results:
        return "none"
    if "failed" in results:
        return "failed"
    return "passed" if "passed" in results else "skipped"


STATUS_TEXT = {"passed": "✔ 通过", "failed": "✘ 未通过", "skipped": "跳过", "none": "尚无运行记录"}
COUNT_WORDS = {"passed": "通过", "failed": "未通过", "skipped": "跳过", "none": "尚无运行记录"}


def _run_words(run: Run) -> str:
    commit = f"提交 `{run.commit.rstrip('+')}`" + ("（含未提交的改动）" if run.commit.endswith("+") else "") \
        if run.commit else "提交未记录"
    return "，".join(w for w in (run.date or "日期未记录", commit, f"PyTorch {run.torch}" if run.torch else "") if w)


# --- the page --------------------------------------------------------------------------------

SUBSCRIPT = re.compile(r"(?<=[^\s_^])([_^])(\{[^{}\n]*\}|[A-Za-z0-9α-ω]+|[−\-+]?[0-9]+)")
CODE_WORD = re.compile(r"[A-Za-z][\w.]*_[\w.]*(?:\([^)\s]*\)?|=[A-Za-z]\w*)?")


MATH_HEADS = {"head", "log", "tanh", "diag", "exp"}


def _is_code(word: str) -> bool:
    """``masked_fill``, ``norm_first=True``, ``n_kv_heads``: code; ``d_model``, ``W_hh``, ``log_k``: a symbol."""
    head = word.split("_", 1)[0]
    return (word.count("_") > 1 or "." in head or "=" in word
            or (len(head) >= 3 and head.isascii() and head.islower() and head not in MATH_HEADS))


def readable(text: str) -> str:
    """A claim's plain-text formula notation as HTML: h_{T−20} → h<sub>T−20</sub>, 0.9^k → 0.9<sup>k</sup>.

    Identifiers such as ``masked_fill`` or ``norm_first=True`` become inline code instead.
    """
    out = []
    for part in re.split(r"(\$[^$\n]+\$|`[^`\n]*`)", text.replace("|", r"\|")):
        if not part.startswith(("$", "`")):
            part = CODE_WORD.sub(lambda m: f"`{m[0]}`" if _is_code(m[0]) else m[0], part)
            part = "".join(p if p.startswith("`") else SUBSCRIPT.sub(_script, p) for p in re.split(r"(`[^`]*`)", part))
        out.append(part)
    return "".join(out)


def _script(m: re.Match) -> str:
    body = m[2][1:-1] if m[2].startswith("{") else m[2]
    tag = "sub" if m[1] == "_" else "sup"
    return f"<{tag}>{body}</{tag}>"


def _title(claim: Claim, occurrences: list[Occurrence]) -> str:
    """"C03 · tanh RNN：梯度消失的充分条件": the badge's own text, then a title, in that order of
    preference: the marker's ``title=``, else the bold lead, heading or question that the first badge
    with one (on a chapter page, if any) sits under."""
    ordered = [o for o in occurrences if o.page.startswith("chapters/")] + occurrences
    label = ordered[0].label if ordered else claim.id.split("-", 1)[1].upper()
    context = next((o.context for o in ordered if o.context), "")
    context = re.sub(r"^[\d.]+\s*", "", context.replace("\u3000", " "))  # a question's number
    title = claim.title or context
    if title == label or not title:
        return label
    return f"{label} · {readable(title)}"


def _page_titles() -> dict[str, str]:
    """{docs-relative source: the title its "出现在" links show}: a chapter's 导读 page by the
    chapter's title, any other page by its nav title (read once per render: the nav is parsed anew
    on every call)."""
    titles = {src: title for title, src, _ in nav_pages()}
    titles.update({src: title for title, src in chapters().values()})
    return titles


def _where(occurrences: list[Occurrence], titles: dict[str, str]) -> str:
    """"出现在" links: one per page, to its first badge; further badges on that page numbered."""
    by_page: dict[str, list[Occurrence]] = {}
    for o in occurrences:
        by_page.setdefault(o.page, []).append(o)
    links = []
    for page, items in by_page.items():
        link = f"[{titles.get(page, page)}](/{page}#{items[0].anchor})"
        if len(items) > 1:
            link += "（另见 " + "、".join(f"[第 {i} 处](/{page}#{o.anchor})" for i, o in enumerate(items[1:], 2)) + "）"
        links.append(link)
    return "；".join(links) or "（无）"


def _summary(claims: list[Claim], status: dict[str, str], run: Run | None, whole: str) -> list[str]:
    """The opening lines: how many claims, and the last recorded run (or that there is none)."""
    passed = sum(status[c.id] == "passed" for c in claims)
    out = [f"{whole}共 {len(claims)} 个论断，每个都由 `make test` 运行的测试证明。", ""]
    if run is None:
        out += ["!!! info \"尚无运行记录\"",
                "    构建本站时没有找到测试运行记录（`make test` 会写下 `test-output/junit.xml`），"
                "所以下面每个论断都标为「尚无运行记录」：本页不替没有记录的运行报结果。", ""]
    else:
        out += [f"**最近一次记录的测试运行**：{_run_words(run)}。其中 {passed} 个论断的测试通过，"
                f"{sum(status[c.id] == 'failed' for c in claims)} 个未通过，"
                f"{sum(status[c.id] == 'none' for c in claims)} 个不在这次运行里（尚无运行记录）。", ""]
    return out


def _entries(items: list[Claim], occurrences: dict[str, list[Occurrence]], status: dict[str, str],
             run: Run | None, level: str, titles: dict[str, str]) -> list[str]:
    """One chapter's claims: a table of them, then an entry per claim under a ``level`` heading
    (``titles``: :func:`_page_titles`)."""
    heads = {c.id: _title(c, occurrences.get(c.id, [])) for c in items}
    out = ["| 论断 | 编号 | 最近一次运行 |", "|---|---|---|"]
    for c in items:
        out.append(f"| [{heads[c.id]}](#{c.id}) | `{c.id}` | {STATUS_TEXT[status[c.id]]} |")
    out.append("")
    for c in items:
        state = STATUS_TEXT[status[c.id]]
        if run is not None and status[c.id] != "none":
            state += f"（{_run_words(run)}）"
        out += [f"{level} {heads[c.id]} {{ #{c.id} }}", "",
                f'<span class="claim-id">{c.id}</span>', "",
                f"**论断**：{readable(c.text)}  ", f"**论文**：{c.paper}  ",
                f"**最近一次运行**：{state}  ",
                f"**出现在**：{_where(occurrences.get(c.id, []), titles)}  ",
                f"**测试**：`{c.nodeid}`  "]
        if c.results:
            out.append(f"**结果文件**：`{c.results}`  ")
        out += [
            "",
            '<details class="claim-source" markdown>',
            "<summary>测试源码</summary>",
            "",
            # Plain text, not Python: 150 highlighted sources made the claims 31,000 spans
            # and 1.4 MB, heavy on a phone, for code shown folded, for reference.
            "```text",
            c.source,
            "```",
            "",
            "</details>",
            "",
        ]
    return out


def _by_chapter(claims: list[Claim], occurrences: dict[str, list[Occurrence]]) -> dict[str, list[Claim]]:
    """Chapter key -> its claims, sorted by id; every chapter of the nav, then any other a claim names."""
    out: dict[str, list[Claim]] = {key: [] for key in chapters()}
    for claim in claims:
        claim.pages = list(dict.fromkeys(o.page for o in occurrences.get(claim.id, [])))
        out.setdefault(claim.id[:4], []).append(claim)
    return {key: sorted(items, key=lambda c: c.id) for key, items in out.items()}


def render(claims: list[Claim], occurrences: dict[str, list[Occurrence]], run: Run | None) -> str:
    """Every claim in one file, chapter by chapter: ``verification-table.md``, the table a release
    attaches (the site shows the same entries a chapter a page, :func:`render_pages`)."""
    status = {c.id: claim_status(c, run) for c in claims}
    out = _summary(claims, status, run, "")
    titles, pages = chapters(), _page_titles()
    for key, items in _by_chapter(claims, occurrences).items():
        if items:
            out += [f"## {titles.get(key, (key, None))[0]}", ""]
            out += _entries(items, occurrences, status, run, "###", pages)
    return "\n".join(out) + "\n"


def render_pages(claims: list[Claim], occurrences: dict[str, list[Occurrence]],
                 run: Run | None) -> dict[str, str]:
    """{file name in docs/generated/: Markdown}: the index's list of chapters (``verification-index.md``,
    included by docs/verification.md) and a page's body per chapter (``verification-ch01.md``, the
    page sitebuild/hooks/refpages.py adds as ``verification/ch01/``)."""
    status = {c.id: claim_status(c, run) for c in claims}
    titles, pages = chapters(), _page_titles()
    out: dict[str, str] = {}
    index = _summary(claims, status, run, "")
    for key, items in _by_chapter(claims, occurrences).items():
        if key not in titles:  # a chapter not in the nav yet has no page (its claims are in the table)
            continue
        title = titles[key][0]
        page = page_src(VERIFICATION, key)
        counts = "，".join(f"{n} 个{words}" for s, words in COUNT_WORDS.items()
                          if (n := sum(status[c.id] == s for c in items)))
        index += [f"## {title}", "",
                  f"[本章的 {len(items)} 个论断](/{page})" + (f"（{counts}）" if counts else "") + "：" +
                  (" · ".join(f"[{_title(c, occurrences.get(c.id, [])).split(' · ')[0]}](/{page}#{c.id})"
                              for c in items) or "尚无论断。"), ""]
        body = [neighbours(VERIFICATION, key, titles), ""]
        body += _summary(items, status, run, "本章")
        body += _entries(items, occurrences, status, run, "##", pages) if items else ["本章尚无论断。", ""]
        out[VERIFICATION.generated.format(key=key)] = "\n".join(body) + "\n"
    out[INDEX] = "\n".join(index) + "\n"
    return out


def written(name: str) -> bool:
    """A file of docs/generated/ that this module writes (every time, so the figures' stamp leaves it out)."""
    return name == OUT.name or name == INDEX or re.fullmatch(VERIFICATION.generated.format(key=r"ch\d\d"), name) is not None


def main() -> None:
    claims = collect_claims()
    ids = [c.id for c in claims]
    bad = [i for i in ids if not CLAIM_ID.match(i)]
    if bad:
        raise SystemExit(f"malformed claim ids: {bad}")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    occurrences, run = collect_occurrences(), read_run()
    OUT.write_text(render(claims, occurrences, run), encoding="utf-8")
    pages = render_pages(claims, occurrences, run)
    for name, text in pages.items():
        (OUT.parent / name).write_text(text, encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)} ({len(claims)} claims) and its {len(pages) - 1} chapter pages")


if __name__ == "__main__":
    main()
