"""What the built HTML of every page decides, read from the files (no browser): the pages are the
nav's, every link with an anchor lands on an id, every image is there with Chinese alt text,
every link and button has a name and no id is used twice (what axe reads from the content; axe
itself runs on the pages that show every kind of element), and a chapter's pages are named by
their chapter.

The browser suite (tests/browser/) keeps what needs a layout engine or a click.
"""

from __future__ import annotations

import re
from functools import cache
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlparse

import pytest

from sitebuild.config import nav_pages
from tests.support.builtpage import replay

NAV = nav_pages()
NAV_URLS = [url for _, _, url in NAV]
CJK = re.compile(r"[\u4e00-\u9fff]")
BASE = "http://site.test/"  # built pages' links resolved against a stand-in origin


VOID = {"img", "input", "br", "hr", "meta", "link", "source", "wbr", "col", "area", "base", "embed"}


class _Page(HTMLParser):
    """Ids, links, images, <title> and the header's and nav's labels of one built page."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[str] = []
        self.images: list[dict] = []
        self.title = ""
        self.in_article = False  # inside the article (<article class="md-content__inner …">)
        self.header = ""  # the phone header's topic: the page's name
        self.nav_labels: list[str] = []
        self.lang = ""
        self.repeated_ids: list[str] = []
        self.unnamed: list[str] = []  # links and buttons without an accessible name
        self._in: list[str] = []  # what the text being read belongs to
        self._naming: list[list] = []  # open links and buttons: [depth, description, name parts]

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            if a["id"] in self.ids:
                self.repeated_ids.append(a["id"])
            self.ids.add(a["id"])
        if tag == "a" and a.get("name"):
            self.ids.add(a["name"])
        if tag == "html":
            self.lang = a.get("lang") or ""
        if tag == "article" and "md-content__inner" in (a.get("class") or ""):
            self.in_article = True
        # Pygments' line anchors (<a id=x href=#x>, empty, one per code line) link to themselves:
        # axe's link-name passes over them too
        self_anchor = a.get("href") == f"#{a.get('id')}"
        if (tag == "a" and a.get("href") and not self_anchor or tag == "button") and a.get("aria-hidden") != "true":
            self._naming.append([len(self._in), f"<{tag} {a.get('href') or a.get('class') or ''}>",
                                 [a.get("aria-label") or "", a.get("title") or ""]])
        elif tag == "img" and self._naming:
            self._naming[-1][2].append(a.get("alt") or "")
        if tag == "a" and a.get("href"):
            self.links.append(a["href"])
        if tag == "img":
            self.images.append({"src": a.get("src", ""), "alt": a.get("alt"), "content": self.in_article})
        if tag == "title":
            self._in.append("title")
        elif "md-header__topic" in (a.get("class") or "") and a.get("data-md-component") == "header-topic":
            self._in.append("header")
        elif tag == "a" and "md-nav__link" in (a.get("class") or "") or (
                tag == "div" and "md-footer__title" in (a.get("class") or "")):
            self._in.append("nav")
        else:
            self._in.append("")
        if tag in VOID:
            self.handle_endtag(tag)

    def handle_startendtag(self, tag, attrs):  # <img ... />: once, not as a start and an end tag
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.handle_endtag(tag)

    def handle_endtag(self, tag):
        if tag == "article":
            self.in_article = False
        if self._in:
            self._in.pop()
        if self._naming and self._naming[-1][0] == len(self._in):
            _, what, parts = self._naming.pop()
            if not "".join(parts).strip():
                self.unnamed.append(what)

    def handle_data(self, data):
        for frame in self._naming:
            frame[2].append(data)
        if "title" in self._in:
            self.title += data
        if "header" in self._in:
            self.header += data
        if "nav" in self._in and data.strip():
            self.nav_labels.append(data.strip())


@cache
def _read(site: Path, url: str) -> _Page | None:
    file = site / (url + "index.html" if url.endswith("/") or not url else url)
    if not file.is_file():
        return None
    return replay(_Page(), file)


def _site_url(base_url: str, href: str) -> tuple[str, str] | None:
    """(site-relative path, fragment) of a link, or None for another host or a non-page scheme."""
    u = urlparse(urljoin(base_url, href))
    if u.scheme not in ("http", "https") or u.netloc != urlparse(BASE).netloc:
        return None
    return u.path[1:], unquote(u.fragment)


def test_every_nav_page_is_in_the_sitemap(built_site):
    """The pages these tests read (mkdocs.yml's nav) are exactly the pages the site has."""
    text = (built_site / "sitemap.xml").read_text(encoding="utf-8")
    sitemap = {urlparse(loc).path.lstrip("/") for loc in re.findall(r"<loc>\s*([^<\s]+)\s*</loc>", text)}
    # the sitemap names the pages under site_url's path; compare the part after the site's root
    root = min(sitemap, key=len)
    assert {p[len(root):] for p in sitemap} == set(NAV_URLS), "nav and sitemap.xml differ"
    kinds = {src.rsplit(".", 1)[-1] for _, src, _ in NAV}
    assert {"md", "ipynb"} <= kinds, "the nav should hold the notebook pages too"


def test_every_link_with_an_anchor_lands_on_an_id(built_site, built_pages):
    """Each link to #id, on its page or another page of the site, finds that id in the built HTML
    (mkdocs --strict checks Markdown links; this also covers what hooks and templates write)."""
    broken = []
    checked = 0
    for url in NAV_URLS:
        page = _read(built_site, url)
        for href in page.links:
            target = _site_url(BASE + url, href)
            if target is None or not target[1]:
                continue
            path, fragment = target
            other = _read(built_site, path)
            if other is None:
                continue  # a file, not a page: the build's own link check covers it
            checked += 1
            if fragment not in other.ids:
                broken.append(f"{url}: {href}")
    assert checked > 1000, f"only {checked} anchored links found: the parser misses links"
    assert not broken, f"{len(broken)} links to missing ids, e.g. {broken[:10]}"


def test_a_missing_anchor_is_found(tmp_path):
    """The anchor check sees a link to an id the target page lacks."""
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "index.html").write_text('<h2 id="here">x</h2><a href="#nowhere">y</a>', encoding="utf-8")
    page = _Page()
    page.feed((tmp_path / "a" / "index.html").read_text(encoding="utf-8"))
    assert "here" in page.ids and "nowhere" not in page.ids and page.links == ["#nowhere"]


def test_every_image_is_there_and_every_figure_has_chinese_alt_text(built_site, built_pages):
    """Every <img> of every page points at a file of the site (or data:), and every image in an
    article has alt text in Chinese that says what it shows."""
    missing, no_alt, figures = [], [], 0
    for url in NAV_URLS:
        for img in _read(built_site, url).images:
            src = img["src"]
            if src.startswith("data:"):
                continue
            target = urlparse(urljoin(BASE + url, src))
            assert target.netloc == urlparse(BASE).netloc, f"{url}: image from another host: {src}"
            if not (built_site / unquote(target.path[1:])).is_file():
                missing.append(f"{url}: {src}")
            if img["content"]:
                figures += 1
                if not (img["alt"] and CJK.search(img["alt"])):
                    no_alt.append(f"{url}: {src} alt={img['alt']!r}")
    assert figures > 20, f"only {figures} images in articles: the parser misses them"
    assert not missing, missing
    assert not no_alt, no_alt


def test_every_link_and_button_has_a_name_and_no_id_is_used_twice(built_site, built_pages):
    """What axe's rules read from a page's content, on every built page: the page's language,
    a name for every link and button (its text, an image's alt, aria-label or title), and
    ids used once."""
    found = []
    for url in NAV_URLS:
        page = _read(built_site, url)
        if page.lang != "zh":
            found.append(f"{url}: <html lang={page.lang!r}>")
        found += [f"{url}: unnamed {what}" for what in page.unnamed[:5]]
        found += [f"{url}: id {i!r} used twice" for i in page.repeated_ids[:5]]
    assert not found, "\n".join(found)


def test_an_unnamed_link_and_a_repeated_id_are_found():
    """The check sees an icon link with no name and an id used twice; a title or an alt names one."""
    page = _Page()
    page.feed('<html lang="zh"><body><a href="/x"><svg></svg></a><a href="/y" title="下一页"><svg></svg></a>'
              '<a href="/z"><img src="a.png" alt="图"></a><button class="b"></button>'
              '<h2 id="a">x</h2><p id="a">y</p></body></html>')
    assert page.lang == "zh"
    assert page.unnamed == ["<a /x>", "<button b>"]
    assert page.repeated_ids == ["a"]


CHAPTER_PAGE = re.compile(r"chapters/(\d\d)-[^/]+/(index|[a-z0-9-]+)\.md|notebooks/ch(\d\d)-")


@pytest.mark.parametrize(("nav_title", "src", "url"), [n for n in NAV if CHAPTER_PAGE.match(n[1])],
                         ids=[n[2] or "home" for n in NAV if CHAPTER_PAGE.match(n[1])])
def test_chapter_pages_are_named_by_their_chapter(built_site, built_pages, nav_title, src, url):
    """<title> and the phone header name the chapter ("第 03 章 · 推导" on a section page), and no
    nav or footer label is a bare "正文"."""
    m = CHAPTER_PAGE.match(src)
    chapter = f"第 {m.group(1) or m.group(3)} 章"
    page = _read(built_site, url)
    first = src.endswith("/index.md") or src.startswith("notebooks/")
    expected = chapter if first else chapter + " · "
    assert page.title.strip().startswith(expected), page.title
    assert " ".join(page.header.split()).startswith(expected.strip()), page.header
    if first:
        assert nav_title.startswith(chapter), f"mkdocs.yml's nav label {nav_title!r} should start with {chapter!r}"
    bare = [label for label in page.nav_labels if re.fullmatch(r"(上一页|下一页)?\s*正文", label)]
    assert not bare, bare
