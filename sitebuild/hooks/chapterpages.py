"""MkDocs hook (``hooks:`` in mkdocs.yml and mkdocs-offline.yml): a chapter is several pages.

A chapter lives in ``docs/chapters/NN-slug/``: ``index.md`` (导读: the questions the chapter
answers, what to know first, the paper's text) and section pages (``derivation.md``,
``code.md``, ``interview.md``, …), listed under the chapter in the nav of mkdocs.yml. Short
pages keep a phone's main thread free: a chapter on one page was 15,000–52,000 elements, and
its load blocked taps for over a second (``make audit``).

This hook does two things for every chapter:

* **The chapter's pages, on its first page.** Before the first ``##`` heading of ``index.md``
  it writes one line that links every page of the chapter in nav order, so a reader sees at
  once how the chapter is laid out (the nav and Material's footer links do the rest).
* **Old anchors still land.** Until the split, every section of a chapter was an anchor of
  ``chapters/NN-slug/`` (``#kv-cache``, ``#claim-ch02-kv-cache-1``, ``#q-2-3``). The built
  index page gets a small script in its ``<head>``: for an anchor that now lives on another of
  the chapter's pages it replaces the location with that page and the same anchor, before the
  page paints. The map is read from the built pages themselves (every id on every section page
  that the index page lacks), so it cannot drift from what the build wrote. A section page that
  was itself split says so in its front matter (``split_from: derivation.md``): the page it came
  from gets the same kind of map, for the ids that moved (``derivation/#masks`` lands on
  ``derivation-softmax/#masks``).
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

from mkdocs.utils import get_relative_url

from sitebuild.hooks.claimanchors import chapter_of

ID = re.compile(r'\bid="([^"]+)"')
ARTICLE = re.compile(r"<article\b.*?</article>", re.S)
# Ids the old one-page chapter never had, or that every page has: code line numbers, tabs.
SKIP = re.compile(r"^__")
FIRST_H2 = re.compile(r"^## ", re.M)
CHARSET = '<meta charset="utf-8">'

_nav: list = []  # the nav's pages, in order
_ids: dict[str, tuple[str, list[str]]] = {}  # src -> (page url, ids in its article)
_split_from: dict[str, str] = {}  # src of a page split off -> src of the page it came from

REDIRECT_JS = (
    "(function(){{var m={{}},t={targets};for(var u in t)t[u].forEach(function(i){{m[i]=u}});"
    "function go(){{var h=location.hash.slice(1);try{{h=decodeURIComponent(h)}}catch(e){{}}"
    "if(m[h])location.replace(m[h]+location.hash)}}go();addEventListener('hashchange',go)}})();"
)


def chapter_pages(src: str) -> list:
    """The nav's pages of ``src``'s chapter (Markdown pages only), in nav order."""
    chapter = chapter_of(src)
    return [p for p in _nav if chapter and chapter_of(p.file.src_uri) == chapter and p.file.src_uri.endswith(".md")]


def page_list(src: str) -> str:
    """The line that links the chapter's pages: "本章共 N 页：导读（本页）→ [推导](derivation.md) → …"."""
    pages = chapter_pages(src)
    parts = ["导读（本页）" if p.file.src_uri == src else f"[{p.title}]({Path(p.file.src_uri).name})" for p in pages]
    return f'**本章共 {len(pages)} 页**：{" → ".join(parts)}\n{{: .chapter-pages }}\n\n'


def on_nav(nav, config, files, **kwargs):
    _nav[:] = list(nav.pages)
    _ids.clear()
    _split_from.clear()
    return nav


def on_page_markdown(markdown: str, page, config, files, **kwargs) -> str:
    src = page.file.src_uri
    if chapter_of(src) is None or not src.endswith("/index.md") or len(chapter_pages(src)) < 2:
        return markdown
    m = FIRST_H2.search(markdown)
    at = m.start() if m else len(markdown)
    return markdown[:at] + page_list(src) + markdown[at:]


def article_ids(output: str) -> list[str]:
    """The ids in a built page's article, in page order (code line numbers and tabs left out)."""
    article = ARTICLE.search(output)
    ids = [html.unescape(i) for i in ID.findall(article.group(0) if article else "")]
    return [i for i in ids if not SKIP.match(i)]


def on_post_page(output: str, page, config, **kwargs) -> str:
    if chapter_of(page.file.src_uri) is not None:
        _ids[page.file.src_uri] = (page.url, article_ids(output))
        if page.meta.get("split_from"):
            _split_from[page.file.src_uri] = str(Path(page.file.src_uri).parent / page.meta["split_from"])
    return output


def redirects(page_src: str, sources: list[str] | None = None) -> dict[str, list[str]]:
    """{relative URL of another page of the chapter: [ids that live there and not on page_src]}.

    For a chapter's first page, every other page; ``sources``: only these (the page that was
    split gets a map of the pages split off it)."""
    page_url, own = _ids[page_src]
    seen = set(own)
    out: dict[str, list[str]] = {}
    for p in chapter_pages(page_src):
        src = p.file.src_uri
        if src == page_src or src not in _ids or (sources is not None and src not in sources):
            continue
        url, ids = _ids[src]
        new = [i for i in dict.fromkeys(ids) if i not in seen]
        seen.update(new)
        if new:
            out[get_relative_url(url, page_url)] = new
    return out


def on_post_build(config, **kwargs):
    site = Path(config["site_dir"])
    maps = {src: redirects(src) for src in _ids if src.endswith("/index.md") and len(chapter_pages(src)) >= 2}
    for origin in sorted(set(_split_from.values())):
        if origin not in _ids:
            raise RuntimeError(f"chapterpages: split_from names {origin}, which is not a page of the nav")
        maps[origin] = redirects(origin, [src for src, o in _split_from.items() if o == origin])
    for src, map_ in maps.items():
        add_anchor_map(site, _ids[src][0], map_)


def add_anchor_map(site: Path, url: str, targets: dict[str, list[str]]) -> None:
    """Give the built page at ``url`` the script that sends its moved anchors on:
    ``targets`` is {URL relative to that page: [ids that now live there]}."""
    path = site / (url + "index.html" if url.endswith("/") or not url else url)
    text = path.read_text(encoding="utf-8")
    mapped = json.dumps(targets, ensure_ascii=False, separators=(",", ":"))
    script = "<script>" + REDIRECT_JS.format(targets=mapped.replace("</", "<\\/")) + "</script>"
    # Right after the charset (which must stay in the first 1024 bytes), before any
    # stylesheet: an inline script after a stylesheet link would wait for it to load.
    at = text.find(CHARSET)
    if at < 0:
        raise RuntimeError(f"chapterpages: no {CHARSET} in {path}")
    at += len(CHARSET)
    path.write_text(text[:at] + script + text[at:], encoding="utf-8")
