"""The site's effective configuration, read exactly as ``mkdocs build`` reads it, and its pages in nav order."""

from __future__ import annotations

import os
import re
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@cache
def load(name: str = "mkdocs.yml"):
    """``mkdocs.config.load_config``: resolves ``INHERIT``, ``!ENV`` and the nav as the build does."""
    from mkdocs.config import load_config

    os.environ.setdefault("NO_MKDOCS_2_WARNING", "1")
    return load_config(str(ROOT / name))


@cache
def _yaml(name: str) -> dict:
    """The config file as ``load_config`` reads it (``INHERIT``, ``!ENV``) without loading the plugins:
    the nav needs no plugin, and mkdocs-jupyter's imports alone take seconds in every process."""
    from mkdocs.utils.yaml import yaml_load

    with open(ROOT / name, encoding="utf-8") as f:
        return yaml_load(f)


def _flatten(nav) -> list[tuple[str, str]]:
    """[(title, docs-relative source path)] in nav order (external links left out)."""
    out: list[tuple[str, str]] = []
    for item in nav or []:
        if isinstance(item, str):
            out.append((item, item))
        elif isinstance(item, dict):
            for title, value in item.items():
                if isinstance(value, str):
                    if "://" not in value:
                        out.append((title, value))
                else:
                    out.extend(_flatten(value))
    return out


def src_to_url(src: str, directory_urls: bool = True) -> str:
    """docs-relative source path -> site-relative URL, as MkDocs writes it."""
    stem = re.sub(r"\.(md|ipynb)$", "", src)
    if not directory_urls:
        return stem + ".html"
    if stem == "index":
        return ""
    return stem[: -len("index")] if stem.endswith("/index") else stem + "/"


def page_name(url: str) -> str:
    """A short name for a site-relative URL, unique on the site (file names, test ids, ``PAGES=``):
    '' -> 'home', 'interview/' -> 'interview', 'chapters/03-x/' -> '03-x',
    'chapters/03-x/derivation/' -> '03-x-derivation', 'notebooks/ch01-x/' -> 'ch01-x'."""
    parts = [p for p in re.sub(r"^(chapters|notebooks)/", "", url.strip("/")).split("/") if p]
    return "-".join(parts) or "home"


def picked(url: str, wanted: list[str]) -> bool:
    """``PAGES="03-x interview"``: a page whose name is one of these, or a chapter's page
    whose name starts with one ("03-x" takes all of chapter 03's pages). No names: every page."""
    name = page_name(url)
    return not wanted or any(name == w or name.startswith(w + "-") for w in wanted)


def nav_pages(name: str = "mkdocs.yml") -> list[tuple[str, str, str]]:
    """[(nav title, source path, site-relative URL)] for every page of the site, in reading order: the
    nav's pages, and right after the verification list and the question bank their chapter pages,
    which the build adds outside the sidebar (:mod:`sitebuild.refpages`)."""
    from sitebuild.refpages import with_chapter_pages

    cfg = _yaml(name)
    pages = with_chapter_pages(_flatten(cfg["nav"]), chapters(name))
    return [(t, s, src_to_url(s, cfg.get("use_directory_urls", True))) for t, s in pages]


def chapters(name: str = "mkdocs.yml") -> dict[str, tuple[str, str]]:
    """{"ch01": (chapter title, "chapters/01-…/index.md")} from the nav, in order.

    The title is the page's first heading (``# 第 01 章 …``), so the claims page names a
    chapter as the chapter does.
    """
    return chapters_of(_flatten(_yaml(name)["nav"]), ROOT / "docs")


def chapters_of(pages: list[tuple[str, str]], docs: Path) -> dict[str, tuple[str, str]]:
    """:func:`chapters` for a nav's ``[(title, source)]`` over the docs folder ``docs``."""
    out = {}
    for _, src in pages:
        m = re.fullmatch(r"chapters/(\d{2})-[^/]+/index\.md", src)
        if m:
            text = (docs / src).read_text(encoding="utf-8")
            heading = next((ln[2:].strip() for ln in text.splitlines() if ln.startswith("# ")), src)
            out[f"ch{m.group(1)}"] = (re.split(r"[：:]|——", heading.replace("\u3000", " "), maxsplit=1)[0], src)
    return out
