"""MkDocs hook (``hooks:`` in mkdocs.yml and mkdocs-offline.yml): every claim badge gets its own id.

A badge is ``[✔ C03](/verification.md#ch01-c03){ .claim }``. The n-th badge of claim
``ch01-c03`` on a page gets ``id="claim-ch01-c03-n"``, counted in the page's Markdown after
its ``--8<--`` includes are expanded (a chapter's questions.md is part of the chapter page), so
the verification page can link to the very sentence. The same pass points the badge at the
page that lists its claim, its chapter's ``/verification/ch01.md#ch01-c03``
(:func:`sitebuild.refpages.claim_page`): pages keep one spelling, wherever they are included,
and the old page's URL still lands through the map :mod:`sitebuild.hooks.refpages` gives it.

:func:`number_badges` is the one place that numbers badges. The build calls it from a
Markdown preprocessor that runs after pymdownx.snippets has expanded the includes and
superfences has stashed the code blocks; :mod:`sitebuild.generate.claims` calls it through
:func:`page_badges` on the page sources (same expansion, code blocks dropped). MkDocs'
anchor validation (``validation.links.anchors`` under ``--strict``) fails the build if the
two ever disagree, because the verification page links to every id.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import NamedTuple

from markdown import Extension
from markdown.preprocessors import Preprocessor

from sitebuild.refpages import claim_page

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

BADGE = re.compile(
    r"(\[✔ ([^\]\n]+)\]\((?:[^)\s#]*/)?verification\.md#(ch\d{2}-[a-z0-9][a-z0-9-]*)\))\{ *\.claim *\}"
)
# pymdownx.snippets' one-line form, as the pages use it (base_path is the repo root).
INCLUDE = re.compile(r'^([ \t]*)--8<-- "([^"\n]+\.md)"[ \t]*$', re.M)
FENCE = re.compile(r"^([ \t]*)(`{3,}|~{3,}).*?^\1\2[ \t]*$", re.S | re.M)
# After snippets (32) and superfences' fence stash (25), before the HTML block stash (20).
PRIORITY = 24


class Badge(NamedTuple):
    claim: str  # "ch01-c03"
    anchor: str  # "claim-ch01-c03-1"
    label: str  # the badge's text after ✔: "C03"
    pos: int  # offset of the badge in the text it was found in


def anchor(claim_id: str, n: int) -> str:
    """The id of the n-th (1-based) badge of ``claim_id`` on a page."""
    return f"claim-{claim_id}-{n}"


def number_badges(markdown: str, start: Counter | None = None) -> tuple[str, list[Badge]]:
    """Give each badge in ``markdown`` its id and its claim's page: (rewritten text, the badges in page order).
    ``start``: the badges counted on the chapter's earlier pages."""
    counts: Counter[str] = Counter(start or {})
    found: list[Badge] = []

    def label(m: re.Match) -> str:
        claim = m[3]
        counts[claim] += 1
        found.append(Badge(claim, anchor(claim, counts[claim]), m[2].strip(), m.start()))
        return f"[✔ {m[2]}](/{claim_page(claim)}#{claim}){{ .claim #{found[-1].anchor} }}"

    return BADGE.sub(label, markdown), found


def expand_includes(markdown: str, root: Path = ROOT, depth: int = 0) -> str:
    """Inline ``--8<-- "docs/….md"`` lines as pymdownx.snippets does (indentation kept)."""
    if depth > 8:
        raise ValueError("claimanchors: --8<-- includes nested more than 8 deep")

    def inline(m: re.Match) -> str:
        path = root / m[2]
        if not path.is_file():
            raise FileNotFoundError(f"claimanchors: included file {m[2]} does not exist")
        text = expand_includes(path.read_text(encoding="utf-8"), root, depth + 1)
        return "\n".join(m[1] + line if line else line for line in text.splitlines())

    return INCLUDE.sub(inline, markdown)


def page_badges(src: str, docs: Path = DOCS, start: Counter | None = None) -> tuple[str, list[Badge]]:
    """The page made from ``docs/<src>`` as the badge numbering sees it (includes expanded,
    code blocks dropped), and its badges in page order (``Badge.pos`` indexes that text)."""
    text = FENCE.sub("", expand_includes((docs / src).read_text(encoding="utf-8"), docs.parent))
    return text, number_badges(text, start)[1]


def chapter_of(src: str) -> str | None:
    """``chapters/01-why-attention`` for any page of that chapter; None for other pages."""
    parts = src.split("/")
    return "/".join(parts[:2]) if len(parts) == 3 and parts[0] == "chapters" else None


def start_counts(srcs: list[str], src: str, docs: Path = DOCS) -> Counter:
    """The badges on the pages of ``src``'s chapter that come before it in ``srcs`` (nav order)."""
    chapter, counts = chapter_of(src), Counter()
    if chapter is None or src not in srcs:
        return counts
    for earlier in srcs[: srcs.index(src)]:
        if chapter_of(earlier) == chapter and earlier.endswith(".md"):
            counts.update(b.claim for b in page_badges(earlier, docs)[1])
    return counts


# The build renders one page at a time: on_page_markdown sets the counts its page starts from.
_start: Counter = Counter()
_nav_srcs: list[str] = []


class _BadgeIds(Preprocessor):
    def run(self, lines: list[str]) -> list[str]:
        return number_badges("\n".join(lines), _start)[0].split("\n")


class BadgeIdsExtension(Extension):
    def extendMarkdown(self, md):  # noqa: N802 (Markdown's API)
        md.preprocessors.register(_BadgeIds(md), "claim_badge_ids", PRIORITY)


def on_config(config, **kwargs):
    config.markdown_extensions.append(BadgeIdsExtension())
    return config


def on_nav(nav, config, files, **kwargs):
    _nav_srcs[:] = [page.file.src_uri for page in nav.pages]
    return nav


def on_page_markdown(markdown: str, page, config, files, **kwargs) -> str:
    global _start
    _start = start_counts(_nav_srcs, page.file.src_uri, Path(config["docs_dir"]))
    return markdown
