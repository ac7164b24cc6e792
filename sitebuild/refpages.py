"""The reference pages, one page per chapter: the verification list (验证清单) and the question bank (面试题库).

Each is an index page that people write (``docs/verification.md``, ``docs/interview.md``: what
the list is, then a few lines per chapter with counts and a link) and one page per chapter of
the nav that nobody writes:

* ``verification/chNN/``: the chapter's claims (``docs/generated/verification-chNN.md``, written by
  ``make figures`` from the claim markers in tests/, :mod:`sitebuild.generate.claims`);
* ``interview/chNN/``: the chapter's questions with their one-line cores
  (``docs/generated/question-bank-chNN.md``, from its questions.md,
  :mod:`sitebuild.generate.render.page_questionbank`).

As one page the claims were 11,600 elements at six chapters of the thirteen planned, past the
~10,000 a phone parses without blocking taps for long, and every chapter made it longer.

:mod:`sitebuild.hooks.refpages` adds the chapter pages to every build (a frame of three lines,
:func:`page_markdown`, around the generated file) and sends the old anchors of the index pages
(``verification/#ch01-c03``, ``interview/#q-2-4``) on to the page that holds them. The chapter
pages stay out of the sidebar, where every entry is on every page: the index pages and each
page's own line of links lead to them. :func:`sitebuild.config.nav_pages` lists them right after
their index, so the PDF, the tests and the tools see every page of the site.

A new chapter needs nothing here: its pages follow from its ``chapters/NN-slug/index.md`` in the nav.
"""

from __future__ import annotations

import re
from typing import NamedTuple


class Reference(NamedTuple):
    index: str  # the index page, docs-relative: "verification.md"
    folder: str  # its chapter pages' folder: "verification" (verification/ch01.md)
    name: str  # "验证清单"
    generated: str  # a chapter page's Markdown, in docs/generated/: "verification-{key}.md"


REFERENCES = (
    Reference("verification.md", "verification", "验证清单", "verification-{key}.md"),
    Reference("interview.md", "interview", "面试题库", "question-bank-{key}.md"),
)
VERIFICATION, QUESTION_BANK = REFERENCES
PAGE = re.compile(r"^(verification|interview)/(ch\d\d)\.md$")


def page_src(ref: Reference, key: str) -> str:
    """The docs-relative source of a chapter's page: ``verification/ch01.md``."""
    return f"{ref.folder}/{key}.md"


def claim_page(claim_id: str) -> str:
    """The page that lists a claim: ``ch01-c03`` -> ``verification/ch01.md`` (its chapter is in its id)."""
    return page_src(VERIFICATION, claim_id[:4])


def question_page(chapter: int) -> str:
    """The question bank's page of chapter ``chapter``: 2 -> ``interview/ch02.md``."""
    return page_src(QUESTION_BANK, f"ch{chapter:02d}")


def of_page(src: str) -> tuple[Reference, str] | None:
    """(reference, chapter key) for a chapter page's source (``interview/ch02.md``), else None."""
    m = PAGE.match(src)
    return (next(r for r in REFERENCES if r.folder == m[1]), m[2]) if m else None


def page_title(ref: Reference, chapter_title: str) -> str:
    return f"{ref.name} · {chapter_title}"


def page_markdown(ref: Reference, key: str, chapter_title: str) -> str:
    """What a chapter page's source would be: its title, its heading, its generated Markdown."""
    title = page_title(ref, chapter_title)
    return (f"---\ntitle: {title}\n---\n\n# {title}\n\n"
            f'--8<-- "docs/generated/{ref.generated.format(key=key)}"\n')


def with_chapter_pages(pages: list[tuple[str, str]], chapters: dict[str, tuple[str, str]]) -> list[tuple[str, str]]:
    """The nav's ``[(title, source)]`` with each reference's chapter pages right after its index.

    ``chapters``: :func:`sitebuild.config.chapters` (``{"ch01": (title, first page)}``)."""
    out: list[tuple[str, str]] = []
    for title, src in pages:
        out.append((title, src))
        for ref in REFERENCES:
            if src == ref.index:
                out += [(page_title(ref, chapter_title), page_src(ref, key))
                        for key, (chapter_title, _) in chapters.items()]
    return out


def neighbours(ref: Reference, key: str, chapters: dict[str, tuple[str, str]]) -> str:
    """A chapter page's line of links (docs-relative, from anywhere): all chapters, previous, next."""
    keys = list(chapters)
    at = keys.index(key)
    parts = [f"[全部章节](/{ref.index})"]
    if at > 0:
        parts.append(f"上一章：[{chapters[keys[at - 1]][0]}](/{page_src(ref, keys[at - 1])})")
    if at + 1 < len(keys):
        parts.append(f"下一章：[{chapters[keys[at + 1]][0]}](/{page_src(ref, keys[at + 1])})")
    return " · ".join(parts) + "\n{: .reference-pages }\n"
