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

from sitebuild.offline import build_offline
from tests.browser.helpers import (
    AXE_JS,
    CHAPTER_URLS,
    DESKTOP,
    LINE_START_PUNCT_JS,
    MOBILE,
    NAV,
    NAV_URLS,
    OUTPUT,
    Recorder,
    first_load_bytes,
    new_context,
    page_id,
    save_screenshot,
    search_with_worker,
    show_everything,
    type_search,
    wait_for_page,
)
from tests.support.build import tiny_site
from tests.support.search import load_queries

PAGES = [pytest.param(url, id=page_id(url)) for url in NAV_URLS]
PAGE_SCHEMES = [
    pytest.param(url, scheme, id=f"{page_id(url)}-{scheme}") for url in NAV_URLS for scheme in ("light", "dark")
]
CHAPTERS = [pytest.param(url, id=page_id(url)) for url in CHAPTER_URLS]
NOTEBOOK_URLS = {url for _, src, url in NAV if src.endswith(".ipynb")}
CJK = re.compile(r"[\u4e00-\u9fff]")
PAGE_BUDGET = 800 * 1024


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
    """The copy button of every code block puts exactly that block's text on the clipboard."""
    r = site.report(path, "light")
    code = r["code"]
    assert not r["copy_bad"], "\n".join(r["copy_bad"])
    assert r["copy_checked"] == len(code["buttons"])
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
    """Each query's page (and section) is in the top 3 results of the shipped search worker."""
    spec = load_queries()
    top = spec["top"]
    ctx = new_context(chromium_browser)
    page = ctx.new_page()
    try:
        page.goto(site_url)
        wait_for_page(page)
        results = search_with_worker(page, [q["q"] for q in spec["queries"]])
    finally:
        ctx.close()
    def found(groups: list[list[str]], target: str) -> bool:
        """target 'page' is among the first `top` pages; 'page#anchor' also among its first `top` sections."""
        page, _, anchor = target.partition("#")
        pages = [g[0].split("#")[0] for g in groups][:top]
        if page not in pages:
            return False
        sections = [unquote(loc.split("#", 1)[1]) for loc in groups[pages.index(page)] if "#" in loc][:top]
        return not anchor or anchor in sections

    misses, report = [], []
    for q in spec["queries"]:
        groups = results[q["q"]]
        expected = q["page"] + ("#" + q["anchor"] if q.get("anchor") else "")
        hit = any(found(groups, target) for target in [expected, *q.get("or", [])])
        report.append({"q": q["q"], "hit": hit, "expected": expected,
                       "top": [[unquote(loc) for loc in g[:top]] for g in groups[:top]]})
        if not hit:
            misses.append(f"{q['q']!r} ({q['kind']}): want {report[-1]['expected']}, got {report[-1]['top']}")
    _dump("search-recall.json", report)
    recall = 1 - len(misses) / len(spec["queries"])
    print(f"search recall {recall:.1%} ({len(spec['queries']) - len(misses)}/{len(spec['queries'])})")
    print("misses:\n  " + "\n  ".join(misses) if misses else "no misses")
    assert recall >= spec["min_recall"], "\n".join(misses)


# ---------------------------------------------------------------------------- chapters

OVERFLOW_JS = """() => {
  const vw = document.documentElement.clientWidth;
  const scrolls = el => { for (let e = el; e && e !== document.body; e = e.parentElement) {
      const o = getComputedStyle(e).overflowX; if (o === 'auto' || o === 'scroll' || o === 'hidden') return true; }
    return false; };
  const offenders = [];
  for (const el of document.querySelectorAll('.md-content *')) {
    const r = el.getBoundingClientRect();
    if (r.width && r.right > vw + 1 && !scrolls(el.parentElement)) {
      offenders.push(el.tagName.toLowerCase() + '.' + [...el.classList].join('.') + ' (' + Math.round(r.right) + 'px)');
      if (offenders.length >= 8) break;
    }
  }
  return {page: document.documentElement.scrollWidth - vw, offenders};
}"""


# A display formula wider than its column scrolls inside itself; the reader must see that it
# does: a scroll shadow (extra.css: gradients, the covers attached "local"), overflow-x auto.
SCROLL_CUE_JS = """() => {
  const wide = [], without_cue = [];
  for (const el of document.querySelectorAll('.md-content .katex-display')) {
    if (el.scrollWidth <= el.clientWidth + 1) continue;
    const cs = getComputedStyle(el);
    const tex = (el.querySelector('annotation') || {}).textContent || '';
    wide.push(tex.slice(0, 40));
    const cue = cs.overflowX === 'auto' && (cs.backgroundImage.match(/gradient/g) || []).length >= 4
      && /local/.test(cs.backgroundAttachment) && /scroll/.test(cs.backgroundAttachment);
    if (!cue) without_cue.push(tex.slice(0, 60));
  }
  return {wide: wide.length, without_cue};
}"""


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("path", CHAPTERS)
def test_chapter_screenshots(chromium_browser, site_url, path, scheme):
    """Full-page screenshots at 1280 px and 390 px; at 390 px nothing widens the page.

    At both widths every display formula that scrolls shows a scroll shadow, and no line
    starts with 。，；：、）」！？ right after inline math, a claim badge or a link.
    """
    for name, viewport in (("desktop", DESKTOP), ("mobile", MOBILE)):
        ctx = new_context(chromium_browser, scheme, viewport=viewport,
                          device_scale_factor=1, is_mobile=name == "mobile", has_touch=name == "mobile")
        page = ctx.new_page()
        try:
            page.goto(site_url + path)
            wait_for_page(page)
            show_everything(page)
            save_screenshot(page, f"{page_id(path)}-{scheme}-{name}")
            overflow = page.evaluate(OVERFLOW_JS)
            assert overflow["page"] <= 0, f"{name}: page scrolls sideways by {overflow['page']} px: {overflow['offenders']}"
            cue = page.evaluate(SCROLL_CUE_JS)
            assert not cue["without_cue"], f"{name}: display formulas that scroll without a scroll shadow: {cue}"
            punct = page.evaluate(LINE_START_PUNCT_JS)
            assert punct["checked"] > 0
            assert not punct["line_starts"], f"{name}: lines that start with punctuation: {punct['line_starts']}"
        finally:
            ctx.close()


CHAPTER_PAGES = [pytest.param(url, title, id=page_id(url)) for title, src, url in NAV
                 if re.match(r"(chapters/\d\d-[^/]+/index\.md|notebooks/ch\d\d-)", src)]


@pytest.mark.parametrize(("path", "nav_title"), CHAPTER_PAGES)
def test_chapter_pages_are_named_by_their_chapter(chromium_browser, site_url, path, nav_title):
    """<title>, the nav label and the phone header (390 px) name the chapter, never a bare "正文"."""
    number = re.search(r"(?:chapters/|notebooks/ch)(\d\d)", path).group(1)
    chapter = f"第 {number} 章"
    assert nav_title.startswith(chapter), f"mkdocs.yml's nav label {nav_title!r} should start with {chapter!r}"
    ctx = new_context(chromium_browser, viewport=MOBILE, is_mobile=True, has_touch=True)
    page = ctx.new_page()
    try:
        page.goto(site_url + path)
        wait_for_page(page)
        names = page.evaluate("""() => ({
          title: document.title,
          header: document.querySelector('.md-header__topic[data-md-component=header-topic] .md-ellipsis').textContent.trim(),
          active: [...document.querySelectorAll('nav.md-nav--primary a.md-nav__link--active')]
                    .filter(a => !a.closest('.md-nav--secondary'))  // the TOC's current heading
                    .map(a => a.textContent.trim()).filter(Boolean),
          bare: [...document.querySelectorAll('nav.md-nav a.md-nav__link, .md-footer__title')]
                  .map(a => a.textContent.trim()).filter(s => /^(上一页|下一页)?\\s*正文$/.test(s)),
        })""")
    finally:
        ctx.close()
    assert names["title"].startswith(chapter), names
    assert names["header"].startswith(chapter), names
    assert names["active"] and all(label.startswith(chapter) for label in names["active"]), names
    assert not names["bare"], names


@pytest.mark.parametrize("path", CHAPTERS)
def test_first_load_budget(chromium_browser, gzip_site_url, path):
    """A first visit (no cache) transfers ≤ 800 KB of HTML, CSS, JS, fonts and images.

    Served with gzip, as GitHub Pages serves it; the uncompressed size is printed too.
    """
    b = first_load_bytes(chromium_browser, gzip_site_url + path)
    budgets_file = OUTPUT / "budgets.json"
    budgets = json.loads(budgets_file.read_text(encoding="utf-8")) if budgets_file.is_file() else {}
    budgets[path] = b
    _dump("budgets.json", budgets)
    summary = (
        f"{path}: {b['transfer']} bytes transferred for HTML+CSS+JS+fonts+images ({b['raw']} uncompressed), "
        f"{b['transfer_all']} with the search index; by type {b['transfer_by_type']}; largest: "
        + "; ".join(f"{t} ({r} raw) {kind} {u.rsplit('/', 1)[-1] or u.rsplit('/', 2)[-2]}"
                    for t, r, kind, u in b["largest"])
    )
    print(summary)
    assert b["transfer"] <= PAGE_BUDGET, f"over the {PAGE_BUDGET}-byte budget: {summary}"


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
