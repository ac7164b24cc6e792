"""A chapter is several pages (sitebuild/hooks/chapterpages.py): its first page lists them, and every
anchor the one-page chapter had still lands, through the map in the first page's <head>."""

from __future__ import annotations

import html
import json
import re
from collections import Counter
from pathlib import Path

from sitebuild.hooks import claimanchors
from sitebuild.hooks.contentblocks import PAINT_ID
from sitebuild.config import nav_pages
from tests.support.build import ROOT
from tests.support.sections import DOCS

ID = re.compile(r'\bid="([^"]+)"')
MAP = re.compile(r"<script>\(function\(\)\{var m=\{\},t=(\{.*?\});for")


def chapters() -> dict[str, list[str]]:
    """{"chapters/01-why-attention": [site URLs of its Markdown pages, in nav order]}."""
    out: dict[str, list[str]] = {}
    for _, src, url in nav_pages():
        if claimanchors.chapter_of(src) and src.endswith(".md"):
            out.setdefault(claimanchors.chapter_of(src), []).append(url)
    return out


def _html(site, url: str) -> str:
    return (site / url / "index.html").read_text(encoding="utf-8")


def _ids(page_html: str) -> set[str]:
    """The article's anchors; not code line numbers (``__``) nor the id contentblocks gives the first
    screen's last block (every page may have one, and no link points at it)."""
    article = page_html[page_html.index("<article"):page_html.index("</article>")]
    return {html.unescape(i) for i in ID.findall(article) if not i.startswith("__") and i != PAINT_ID}


def test_every_chapter_has_several_pages_and_its_first_page_lists_them(built_site):
    found = chapters()
    assert len(found) >= 6 and all(len(urls) >= 4 for urls in found.values()), found
    for chapter, urls in found.items():
        first = _html(built_site, urls[0])
        line = re.search(r'<p[^>]*\bclass="chapter-pages"[^>]*>(.*?)</p>', first, re.S)
        assert line, f"{chapter}: no list of its pages on its first page"
        links = re.findall(r'<a href="([^"]+)"', line[1])
        assert [urls[0] + link for link in links] == urls[1:], (chapter, links)
        assert f"本章共 {len(urls)} 页" in line[1]


def test_old_anchors_of_a_chapter_land_on_the_page_that_holds_them(built_site):
    for chapter, urls in chapters().items():
        first = _html(built_site, urls[0])
        # the map sits after the charset, which must stay within the first 1024 bytes
        assert first.encode("utf-8").index(b'<meta charset="utf-8">') < 1024, chapter
        m = MAP.search(first)
        assert m and m.start() > first.index('<meta charset="utf-8">'), f"{chapter}: no anchor map"
        targets = json.loads(m[1])
        own = _ids(first)
        mapped = Counter(i for ids in targets.values() for i in ids)
        assert not [i for i, n in mapped.items() if n > 1], f"{chapter}: an anchor mapped twice"
        for rel, ids in targets.items():
            page = _ids(_html(built_site, urls[0] + rel))
            assert set(ids) <= page, (chapter, rel, sorted(set(ids) - page)[:5])
            assert not set(ids) & own, (chapter, rel)
        # every anchor on a later page is reachable from the first page's URL
        for url in urls[1:]:
            missing = _ids(_html(built_site, url)) - own - set(mapped)
            assert not missing, (url, sorted(missing)[:5])
        assert "q-" + chapter.split("/")[1][:2].lstrip("0") + "-1" in mapped, chapter


def test_a_split_section_page_sends_the_anchors_it_lost_on(built_site):
    """A page with ``split_from:`` in its front matter came off another section page: that page's
    <head> maps every id that moved to the new page, and nothing else."""
    splits = []
    for _, src, url in nav_pages():
        md = (ROOT / "docs" / src).read_text(encoding="utf-8") if (ROOT / "docs" / src).is_file() else ""
        m = re.match(r"---\n(?:.*\n)*?split_from: (\S+)\n(?:.*\n)*?---\n", md)
        if m:
            origin = str(Path(src).parent / m[1])
            origin_url = next(u for _, s_, u in nav_pages() if s_ == origin)
            splits.append((url, origin_url))
    assert ("chapters/03-scaled-dot-product/derivation-softmax/", "chapters/03-scaled-dot-product/derivation/") in splits
    for url, origin_url in splits:
        origin = _html(built_site, origin_url)
        m = MAP.search(origin)
        assert m, f"{origin_url}: no anchor map"
        targets = json.loads(m[1])
        moved = _ids(_html(built_site, url)) - _ids(origin)
        assert list(targets) == ["../" + url.rstrip("/").rsplit("/", 1)[1] + "/"], targets
        assert set(next(iter(targets.values()))) == moved and moved, (origin_url, moved)


def test_badges_are_numbered_across_a_chapters_pages(tmp_path):
    docs = tmp_path / "docs"
    (docs / "chapters/01-x").mkdir(parents=True)
    badge = "[✔ C03](/verification.md#ch01-c03){ .claim }\n"
    for name in ("index.md", "a.md", "b.md"):
        (docs / "chapters/01-x" / name).write_text(badge * (2 if name == "a.md" else 1), encoding="utf-8")
    (docs / "other.md").write_text(badge, encoding="utf-8")
    srcs = ["other.md", "chapters/01-x/index.md", "chapters/01-x/a.md", "chapters/01-x/b.md"]
    starts = [claimanchors.start_counts(srcs, s, docs)["ch01-c03"] for s in srcs]
    assert starts == [0, 0, 1, 3]
    _, badges = claimanchors.page_badges("chapters/01-x/b.md", docs, claimanchors.start_counts(srcs, srcs[3], docs))
    assert [b.anchor for b in badges] == ["claim-ch01-c03-4"]


def test_every_experiments_page_links_how_to_read_it():
    """Each chapter's 代码与实验 page links 「怎样读本书的实验」 from its experiment section."""
    missing = []
    for page in sorted(DOCS.glob("chapters/*/code.md")):
        text = page.read_text(encoding="utf-8")
        split_off = page.with_name("experiments.md")  # a chapter whose experiments have a page of their own
        experiments = split_off.read_text(encoding="utf-8") if split_off.is_file() else text[text.find("\n## 实验"):]
        if "](../../reading-experiments.md)" not in experiments:
            missing.append(page.parent.name)
    assert missing == []
