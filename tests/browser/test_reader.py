"""Reader-grade checks of the built site in Chromium.

Every page in both palettes: math (with MathML), no console errors, images with Chinese alt
text, in-page anchors, the code copy button, axe-core. Then search quality against
search_queries.json through Material's own search worker, screenshots of each chapter at
desktop and phone widths, byte budgets, and the offline edition over file:// (built from a
tiny docs tree, so that the suite builds the real site only once).
"""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path
from urllib.parse import unquote

import pytest

from sitebuild.editions.offline import build_offline
from tests.browser.helpers import (
    AXE_JS,
    CHAPTER_URLS,
    COPY_SAMPLE,
    NAV,
    NAV_URLS,
    OUTPUT,
    Recorder,
    first_load_bytes,
    new_context,
    page_id,
    search_with_worker,
    type_search,
    wait_for_page,
)
from tests.support.build import tiny_site
from tests.support.search import chapter_groups, evaluate, load_queries, raw_markup

PAGES = [pytest.param(url, id=page_id(url)) for url in NAV_URLS]
PAGE_SCHEMES = [
    pytest.param(url, scheme, id=f"{page_id(url)}-{scheme}") for url in NAV_URLS for scheme in ("light", "dark")
]
CHAPTERS = [pytest.param(url, id=page_id(url)) for url in CHAPTER_URLS]
NOTEBOOK_URLS = {url for _, src, url in NAV if src.endswith(".ipynb")}
CJK = re.compile(r"[\u4e00-\u9fff]")
PAGE_BUDGET = 400 * 1024


def _dump(name: str, data) -> None:
    OUTPUT.mkdir(parents=True, exist_ok=True)
    (OUTPUT / name).write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")


# ---------------------------------------------------------------------------- every page


@pytest.mark.parametrize(("path", "scheme"), PAGE_SCHEMES)
def test_math_renders_in_palette(site, path, scheme):
    """Light and dark: the palette is applied, every formula is typeset and keeps its MathML."""
    r = site.report(path, scheme)
    math = r["math"]
    assert math["scheme"] == ("slate" if scheme == "dark" else "default")
    assert not math["scripts"] and not math["katex_global"], f"a page loads KaTeX's script: {math['scripts']}"
    assert math["katex"] >= math["arithmatex"]
    assert math["mathml"] == math["katex"], "KaTeX output without MathML: screen readers get nothing"
    assert not math["errors"], math["errors"]
    assert not r["raw_tex"], r["raw_tex"]
    if path not in NOTEBOOK_URLS:  # notebook markdown has no arithmatex; its math is raw $...$
        assert not math["unprotected"], (
            "math typeset from text that arithmatex did not protect, so Markdown may have eaten "
            f"backslashes (e.g. \\! -> !); put display math on its own lines: {math['unprotected']}"
        )


@pytest.mark.parametrize(("path", "scheme"), PAGE_SCHEMES)
def test_no_console_errors(site, path, scheme):
    """No console error, uncaught exception, failed or 4xx/5xx load, axe and copy clicks included."""
    r = site.report(path, scheme)
    assert not r["console_errors"], "\n".join(r["console_errors"])
    assert not r["bad_responses"], "\n".join(r["bad_responses"])


@pytest.mark.parametrize("path", PAGES)
def test_images_load_and_have_chinese_alt(site, path):
    """Every <img> loads with a non-zero natural size; every figure has Chinese alt text."""
    images = site.report(path)["images"]
    broken = [i["src"] for i in images if not i["ok"]]
    assert not broken, f"images that did not load: {broken}"
    figures = [i for i in images if i["content"]]
    no_alt = [f"{i['src']} alt={i['alt']!r}" for i in figures if not (i["alt"] and CJK.search(i["alt"]))]
    assert not no_alt, f"figures without Chinese alt text: {no_alt}"


@pytest.mark.parametrize("path", PAGES)
def test_anchor_links_land(site, path):
    """Each same-page link lands on an existing id; links to other pages' #ids too."""
    r = site.report(path)["anchors"]
    assert not r["broken"], f"in-page links to missing ids: {r['broken']}"
    missing = []
    for url in sorted(set(r["other"])):
        ids = site.ids_on_disk(url.split("#")[0])
        target = unquote(url.split("#", 1)[1])
        if ids is not None and target not in ids:
            missing.append(url)
    assert not missing, f"links to missing ids on other pages: {missing}"


@pytest.mark.parametrize("path", PAGES)
def test_code_copy_button_copies_the_block(site, path):
    """Copy buttons put exactly their block's text on the clipboard (a sample of COPY_SAMPLE per
    page, first and last included); every code block has a button."""
    r = site.report(path, "light")
    code = r["code"]
    assert not r["copy_bad"], "\n".join(r["copy_bad"])
    assert r["copy_checked"] == min(len(code["buttons"]), COPY_SAMPLE)
    if path not in NOTEBOOK_URLS:
        assert code["without_button"] == 0, f"{code['without_button']} code blocks without a copy button"


@pytest.mark.parametrize(("path", "scheme"), PAGE_SCHEMES)
def test_axe_no_serious_violations(site, path, scheme):
    """axe-core (node_modules) finds no serious or critical violation, in either palette."""
    assert AXE_JS.is_file(), "run `make setup` (npm ci) for axe-core"
    violations = site.report(path, scheme)["axe"]
    lines = [f"[{v['impact']}] {v['id']}: {v['help']} ({v['count']}x) e.g. {v['nodes'][:3]}" for v in violations]
    print("\n".join(lines))
    assert not violations, "\n".join(lines)


# ---------------------------------------------------------------------------- search


def test_search_recall(chromium_browser, site_url, built_site):
    """Each query's page (and section) is in the top 3 results of the shipped search worker; the
    queries marked `first` find their chapter section before any other page; the results a
    reader is shown (titles and previews) hold no TeX, ¶, "In [ ]:" or "Copied!"."""
    spec = load_queries()
    ctx = new_context(chromium_browser)
    page = ctx.new_page()
    try:
        page.goto(site_url)
        wait_for_page(page)
        results = search_with_worker(page, [q["q"] for q in spec["queries"]])
    finally:
        ctx.close()
    locations = {q: [[item["location"] for item in group] for group in chapter_groups(groups)]
                 for q, groups in results.items()}
    ev = evaluate(spec, locations)
    _dump("search-recall.json", ev["report"])
    shown = [item for groups in results.values() for group in groups[: spec["top"]] for item in group]
    markup = raw_markup(shown)
    n = len(spec["queries"])
    print(f"search recall {ev['recall']:.1%} ({n - len(ev['misses'])}/{n}); "
          f"first page right for {ev['first_rate']:.1%}; ranking misses {len(ev['rank_misses'])}/{ev['ranked']}")
    print("misses:\n  " + "\n  ".join(ev["misses"]) if ev["misses"] else "no misses")
    assert not markup, "raw markup in search results:\n" + "\n".join(sorted(set(markup))[:20])
    assert not ev["rank_misses"], "\n".join(ev["rank_misses"])
    assert ev["recall"] >= spec["min_recall"], "\n".join(ev["misses"])


# ---------------------------------------------------------------------------- chapters

@pytest.mark.parametrize("width", ["desktop", "mobile"])
@pytest.mark.parametrize("path", PAGES)
def test_layout_fits_the_width(site, path, width):
    """At 1280 px and at 390 px nothing widens the page; every display formula that scrolls shows
    a scroll shadow; no line starts with 。，；：、）」！？ right after inline math, a claim badge
    or a link. (The palette does not change the layout. Screenshots to look at: `make screenshots`.)"""
    r = site.report(path)["layout"][width]
    overflow, cue, punct = r["overflow"], r["cue"], r["punct"]
    assert overflow["page"] <= 0, f"{width}: page scrolls sideways by {overflow['page']} px: {overflow['offenders']}"
    assert not cue["without_cue"], f"{width}: display formulas that scroll without a scroll shadow: {cue}"
    assert not punct["line_starts"], f"{width}: lines that start with punctuation: {punct['line_starts']}"


def test_layout_checks_see_what_they_check(site):
    """The punctuation check looked at the places where such a line could start (chapter 1's
    pages have hundreds), and the scroll-cue check saw formulas that scroll at 390 px."""
    reports = [site.report(url)["layout"] for url in CHAPTER_URLS if url.startswith(CHAPTER_URLS[0])]
    for width in ("desktop", "mobile"):
        assert sum(r[width]["punct"]["checked"] for r in reports) > 200, [r[width]["punct"] for r in reports]
    assert sum(r["mobile"]["cue"]["wide"] for r in reports) > 0, [r["mobile"]["cue"] for r in reports]


CHAPTER_PAGES = [pytest.param(url, title, id=page_id(url)) for title, src, url in NAV
                 if re.match(r"(chapters/\d\d-[^/]+/index\.md|notebooks/ch\d\d-)", src)]
SECTION_PAGES = [pytest.param(url, id=page_id(url)) for _, src, url in NAV
                 if re.fullmatch(r"chapters/\d\d-[^/]+/(?!index\.md)[a-z0-9-]+\.md", src)]


@pytest.mark.parametrize(("path", "nav_title"), CHAPTER_PAGES)
def test_chapter_pages_are_named_by_their_chapter(site, path, nav_title):
    """<title>, the nav label and the phone header name the chapter, never a bare "正文"."""
    number = re.search(r"(?:chapters/|notebooks/ch)(\d\d)", path).group(1)
    chapter = f"第 {number} 章"
    assert nav_title.startswith(chapter), f"mkdocs.yml's nav label {nav_title!r} should start with {chapter!r}"
    names = site.report(path)["names"]
    assert names["title"].startswith(chapter), names
    assert names["header"].startswith(chapter), names
    assert names["active"] and all(label.startswith(chapter) for label in names["active"]), names
    assert not names["bare"], names


@pytest.mark.parametrize("path", PAGES)
def test_pages_open_with_their_first_blocks_rendered(site, path):
    """The blocks a page opens on (1280 × 900 and a 390 × 844 phone) are rendered in the first
    frame, not skipped and drawn a frame later (content-visibility in extra.css), which moved the
    section pages that open on a formula by 0.26-0.44 (make audit's CLS)."""
    for width, first in site.report(path)["first_screen"].items():
        assert first["blocks"] > 0 and not first["late"], (width, first)



@pytest.mark.parametrize("path", PAGES)
def test_the_first_paint_shows_the_first_screen_whole(site, path):
    """The first paint waits until the blocks a phone opens on are parsed (sitebuild/hooks/contentblocks.py:
    <link rel="expect" blocking="render">), rather than showing the header and laying the article
    out a few blocks a frame, each frame a long task on a phone. A notebook page, one block too
    long to wait for, paints as before."""
    first = site.report(path)["first_frame"]
    assert first is not None, "no animation frame ran before the page was ready"
    if path in NOTEBOOK_URLS:
        assert first["target"] is None, first
        return
    assert first["target"] and first["parsed"], first
    assert first["target_index"] is not None and first["blocks"] > first["target_index"] >= 0, first


@pytest.mark.parametrize("path", PAGES)
def test_tables_are_wrapped_at_build_time(site, path):
    """sitebuild/hooks/contentblocks.py counted the article's blocks as the browser does: the page has its
    rule (<style id="cv-blocks">), and every table of the article sits in a div.table-block, with
    Material's scroll wrapper inside it rather than among the blocks."""
    b = site.report(path)["blocks"]
    assert b["count"] >= 4 and b["rules"] == 1, b
    assert b["bare_tables"] == [], b
    assert b["wrapped_tables"] == b["table_blocks"], b


@pytest.mark.parametrize("path", PAGES)
def test_colours_read_right_before_the_blocks_are_shown(site, path):
    """axe's colour checks on a 390 px phone right after load, most blocks still skipped, as
    Lighthouse runs them: no violation. Asked where a word in a skipped block is, Chromium lays the
    block out taller than its placeholder, into the footer at the end of the page; unless the
    footer stacks above the article (extra.css), axe read that text on the footer's colour."""
    assert site.report(path)["axe_at_load"] == []


@pytest.mark.parametrize("path", PAGES)
def test_pages_preload_exactly_the_katex_fonts_their_formulas_use(site, path):
    """Every KaTeX font a page loads, everything shown and every question open, was preloaded
    (sitebuild/hooks/mathrender.py: fonts_used reads them from KaTeX's classes), and every preloaded
    font is used, but for the two every page preloads. A font requested when its first formula
    was laid out arrived after the first paint and made the phone lay out the page again."""
    fonts = site.report(path)["fonts"]
    loaded, preloaded = set(fonts["loaded"]), set(fonts["preloaded"])
    assert loaded - preloaded == set(), fonts
    assert preloaded - loaded <= {"KaTeX_Main-Regular.woff2", "KaTeX_Math-Italic.woff2"}, fonts

@pytest.mark.parametrize("path", SECTION_PAGES)
def test_section_pages_are_named_by_their_chapter(site, path):
    """A chapter's other pages ("推导" in the nav, under the chapter) carry the chapter in <title>
    and in the phone header ("第 03 章 · 推导"), and sit in the chapter's nav section."""
    number = re.search(r"chapters/(\d\d)", path).group(1)
    chapter = f"第 {number} 章"
    names = site.report(path)["names"]
    assert names["title"].startswith(chapter + " · "), names
    assert names["header"].startswith(chapter + " · "), names
    assert names["section"].startswith(chapter), names
    assert not names["bare"], names


@pytest.mark.parametrize("path", CHAPTERS)
def test_first_load_budget(chromium_browser, gzip_site_url, path):
    """A first visit (no cache) transfers ≤ 400 KB in all: HTML, CSS, JS, fonts, images and
    anything fetched, the search index included if the page asked for it (it does not: it
    waits until the reader reaches for search, see the next test).

    Served with gzip, as GitHub Pages serves it; the uncompressed size is printed too.
    """
    b = first_load_bytes(chromium_browser, gzip_site_url + path)
    budgets_file = OUTPUT / "budgets.json"
    budgets = json.loads(budgets_file.read_text(encoding="utf-8")) if budgets_file.is_file() else {}
    budgets[path] = b
    _dump("budgets.json", budgets)
    summary = (
        f"{path}: {b['transfer_all']} bytes transferred in all ({b['raw']} uncompressed for HTML+CSS+JS+fonts+images);"
        f" by type {b['transfer_by_type']}; largest: "
        + "; ".join(f"{t} ({r} raw) {kind} {u.rsplit('/', 1)[-1] or u.rsplit('/', 2)[-2]}"
                    for t, r, kind, u in b["largest"])
    )
    print(summary)
    assert not [u for *_, u in b["largest"] if "search_index" in u], f"the search index came with the page: {summary}"
    assert b["transfer_all"] <= PAGE_BUDGET, f"over the {PAGE_BUDGET}-byte budget: {summary}"


def test_search_index_arrives_when_the_reader_reaches_for_search(chromium_browser, gzip_site_url):
    """On a phone: no index with the page; a tap on the search button asks for it, and typing
    finds chapter sections. On a desktop, a page opened from a search result (?h=) asks for it
    at once, so that the terms can be highlighted."""
    ctx = new_context(chromium_browser, viewport={"width": 390, "height": 844})
    page = ctx.new_page()
    asked = []
    page.on("request", lambda r: asked.append(r.url) if "search_index" in r.url else None)
    try:
        page.goto(gzip_site_url + CHAPTER_URLS[1], wait_until="load")
        wait_for_page(page)
        page.wait_for_timeout(1000)
        assert asked == [], asked
        links = type_search(page, "梯度消失")
        assert len(asked) == 1, asked
        assert any("/chapters/" in link for link in links), links
        asked.clear()
        page.goto(gzip_site_url + CHAPTER_URLS[0] + "?h=softmax", wait_until="load")
        wait_for_page(page)
        page.wait_for_timeout(500)
        assert len(asked) == 1, asked
    finally:
        ctx.close()


# ---------------------------------------------------------------------------- offline


TINY_CHAPTER = """# 第 {n} 章

梯度消失（vanishing gradient）出现在第 {n} 章。

$$
\\frac{{\\partial h_t}}{{\\partial h_k}}=\\prod_{{i=k+1}}^{{t}}\\operatorname{{diag}}(1-h_i^2)\\,W_{{hh}}
$$

行内公式 $a_{{{n}}}^2$、$\\sqrt{{d_k}}$、$e^{{x}}$、$\\gamma$、$\\sigma$、$n$、$d$、$k$、$x$、$y$、$z$ 也要排版。
"""


@pytest.fixture(scope="session")
def offline_site(tmp_path_factory) -> Path:
    """The offline edition of a tiny site (the real configs, two chapters), zipped as `make offline`
    does and unzipped elsewhere. The real site's content is checked on the served build above."""
    tmp = tmp_path_factory.mktemp("offline")
    root = tiny_site(tmp / "src", {"index.md": "# 首页\n\n离线版：$e^{i\\pi}+1=0$。\n",
                                   "ch1.md": TINY_CHAPTER.format(n=1), "ch2.md": TINY_CHAPTER.format(n=2)})
    zip_path = tmp / "dist" / "site-offline.zip"
    proc = build_offline(tmp / "site-offline", zip_path, config_dir=root)
    assert proc.returncode == 0, f"offline build failed:\n{proc.stdout}\n{proc.stderr}"
    with zipfile.ZipFile(zip_path) as zf:
        zf.extractall(tmp / "unzipped")
    return tmp / "unzipped" / "site-offline"


def test_offline_edition_over_file_url(chromium_browser, offline_site):
    """From the unzipped folder over file://: math renders, search finds 梯度消失, nav works."""
    assert (offline_site / "search" / "search_index.js").is_file()
    ctx = new_context(chromium_browser)
    page = ctx.new_page()
    rec = Recorder(page)
    try:
        page.goto((offline_site / "index.html").as_uri())
        wait_for_page(page)
        assert page.evaluate("document.querySelectorAll('.katex .katex-mathml').length") > 0

        links = type_search(page, "梯度消失")
        chapter = "ch1.html"
        assert any(link.split("?")[0].endswith(chapter) for link in links), links
        page.keyboard.press("Escape")

        page.evaluate("window.__marker = 1")
        page.locator(f"nav.md-nav--primary a.md-nav__link[href$='{chapter}']").first.click()
        page.wait_for_url(f"**/{chapter}")
        wait_for_page(page)
        assert page.evaluate("window.__marker") is None, "offline pages load whole (no instant navigation)"
        assert page.evaluate("document.querySelectorAll('.katex').length") > 10

        # and on to the other chapter, by its link in the nav
        second = "ch2.html"
        page.locator(f"nav.md-nav--primary a.md-nav__link[href$='{second}']").first.click()
        page.wait_for_url(f"**/{second}")
        wait_for_page(page)
        assert page.evaluate("document.querySelectorAll('.katex').length") > 10

        assert not rec.foreign_requests(allowed_hosts=()), rec.foreign_requests(allowed_hosts=())
        assert not rec.console_errors, rec.console_errors
        assert not rec.bad_responses, rec.bad_responses
    finally:
        ctx.close()
