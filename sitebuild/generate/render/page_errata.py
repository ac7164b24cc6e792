"""docs/errata.yml → docs/generated/errata.md: the errata page (勘误), one entry per correction.

The data file, not the results, is the input: ``results`` is ignored. The file is validated
against docs/errata.schema.json (draft 2020-12) before anything is written; an invalid file
stops the build with the entry and the field. The commit of an entry is its ``commit`` field,
else the first commit that added its id to docs/errata.yml (``git log -S``), else 「未提交」.
"""

from __future__ import annotations

import functools
import json
import re
import subprocess
from pathlib import Path

import jsonschema
import yaml

from sitebuild.config import nav_pages
from sitebuild.refpages import claim_page

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "docs" / "errata.yml"
SCHEMA = ROOT / "docs" / "errata.schema.json"
UNCOMMITTED = "未提交"


class ErrataError(ValueError):
    pass


def load(path: Path = DATA, schema_path: Path = SCHEMA) -> dict:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    schema = json.loads(schema_path.read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        where = "/".join(str(p) for p in e.absolute_path) or "(top)"
        raise ErrataError(f"{path.name}: {where}: {e.message}")
    ids = [entry["id"] for entry in data["entries"]]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise ErrataError(f"{path.name}: duplicate ids {duplicates}")
    return data


@functools.lru_cache(maxsize=8)
def _first_commits(path: Path) -> dict[str, str]:
    """For each entry id in the history of ``path``, the first commit whose diff adds ``id: <id>``
    (one ``git log -p`` for all entries; empty without git)."""
    try:
        log = subprocess.run(["git", "log", "--reverse", "--format=@@%h", "-p", "--", str(path)],
                             cwd=ROOT, capture_output=True, text=True, check=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    first: dict[str, str] = {}
    commit = None
    for line in log.splitlines():
        if line.startswith("@@") and not line.startswith("@@ "):
            commit = line[2:]
        elif commit and (m := ADDED_ID.match(line)):
            first.setdefault(m.group(1), commit)
    return first


ADDED_ID = re.compile(r"^\+\s*-?\s*id:\s*(\S+)\s*$")


def commit_of(entry: dict, path: Path = DATA) -> str:
    """The commit that added this entry, or 「未提交」 when git has no such commit (or no git)."""
    if entry.get("commit"):
        return entry["commit"][:10]
    return _first_commits(path).get(entry["id"], UNCOMMITTED)


# A file path or a test id (tests/ch09/test_x.py::test_y) has no space to wrap at: in a phone's
# column its table would scroll sideways on every row. <wbr> lets such a run break after / . _ ::
# without adding a character that a reader copying the test id would get (a zero-width space would).
LONG_RUN = re.compile(r"[^\s，。；、（）：「」`$]{24,}")
BREAK_AFTER = re.compile(r"(::|[/_\[(,]|\.(?=[A-Za-z]))(?=\S)")


def _cell(text: str) -> str:
    text = text.replace("|", "\\|").replace("\n", " ").strip()
    return LONG_RUN.sub(lambda m: m.group(0) if "](" in m.group(0) else BREAK_AFTER.sub(r"\1<wbr>", m.group(0)), text)


def _link(place: str, labels: dict[str, str]) -> str:
    """``chapters/NN-x/page.md#anchor`` as a link named by the chapter and the page's nav label
    (the glossary by its own)."""
    page, _, anchor = place.partition("#")
    label = labels.get(page, page.rsplit("/", 1)[-1])
    if not page.startswith("chapters/"):
        return f"[{label}]({place})"
    question = "（面试题）" if anchor.startswith("q-") else ""
    return f"[第 {page.split('/')[1][:2]} 章 · {label}{question}]({place})"


def render_markdown(data: dict, commit=commit_of, labels: dict[str, str] | None = None) -> str:
    if labels is None:
        # a chapter's first page is titled 「第 NN 章 标题」 in the nav: the link names the chapter already
        labels = {src: re.sub(r"^第 \d{2} 章\s*", "", title) for title, src, _ in nav_pages()}
    # by date, then chapter; entries of one chapter on one day keep their order in the file
    entries = sorted(data["entries"], key=lambda e: (e["date"], e["id"][:4]))  # id: chNN-…
    lines = [f"共 {len(entries)} 条，按日期排列，同一天的按章节顺序。每条的编号是永久的，可以直接链接（`errata.md#编号`）。", ""]
    for entry in entries:
        where = _link(entry["page"], labels)
        if entry.get("also"):
            where += "；同样的更正也在 " + "、".join(_link(p, labels) for p in entry["also"])
        claim = (f"[{entry['claim']}]({claim_page(entry['claim'])}#{entry['claim']})" if entry.get("claim") else "—")
        lines += [
            f"### {entry['id']} {{#{entry['id']}}}",
            "",
            "| | |",
            "|---|---|",
            f"| 日期 | {entry['date']} |",
            f"| 提交 | `{commit(entry)}` |",
            f"| 位置 | {where} |",
            f"| 论断 | {claim} |",
            f"| 原来写的 | {_cell(entry['was'])} |",
            f"| 现在写的 | {_cell(entry['now'])} |",
            f"| 为什么 | {_cell(entry['why'])} |",
            f"| 依据 | {_cell(entry['source'])} |",
            "",
        ]
    return "\n".join(lines)


def render_errata(results: list[dict], out_dir: Path) -> None:
    """Renderer entry point: ``results`` is ignored; the input is docs/errata.yml."""
    (out_dir / "errata.md").write_text(render_markdown(load()), encoding="utf-8")


RENDERERS = [render_errata]
