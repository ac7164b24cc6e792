"""What the browser tests share: one Chromium, page visits recorded once per palette, search, budgets.

The pytest fixtures that use these live in tests/browser/conftest.py. Chromium is Debian's
(``$CHROMIUM``, default /usr/bin/chromium); never ``playwright install``.
"""

from __future__ import annotations

import contextlib
import re
import time
from pathlib import Path
from urllib.parse import urljoin, urlparse

from sitebuild.config import nav_pages, page_name
from tests.support.elementkinds import covering_pages
from tests.support.shared import once, try_once

ROOT = Path(__file__).resolve().parents[2]

OUTPUT = ROOT / "test-output"
SCREENSHOTS = OUTPUT / "screenshots"
AXE_JS = ROOT / "node_modules" / "axe-core" / "axe.min.js"
DESKTOP = {"width": 1280, "height": 900}
MOBILE = {"width": 390, "height": 844}
SCHEMES = ("light", "dark")

# --------------------------------------------------------------------------------------
# Which pages the site has: the nav of mkdocs.yml (known before the build, so tests can be
# parametrised at collection time) and, after the build, its sitemap.xml.
# --------------------------------------------------------------------------------------


def evaluate_within(page, js: str, arg=None, seconds: float = 120):
    """``page.evaluate(js, arg)`` for an async check, failing after ``seconds``.

    Playwright waits for an evaluated promise without a limit: one that never settles (a frame
    that is never drawn, an image that never decodes, a worker that never answers) would keep
    its worker, and every worker waiting on that one's page visit, idle until CI gives up.
    """
    bounded = f"""async ([arg, ms]) => {{
      const run = ({js});
      let timer;
      const limit = new Promise((_, fail) => {{
        timer = setTimeout(() => fail(new Error('no result within ' + ms + ' ms')), ms);
      }});
      try {{ return await Promise.race([run(arg), limit]); }} finally {{ clearTimeout(timer); }}
    }}"""
    return page.evaluate(bounded, [arg, int(seconds * 1000)])


def page_id(url: str) -> str:
    """A short test id for a site-relative URL: '' -> 'home', 'chapters/01-x/' -> '01-x',
    'chapters/01-x/rnn/' -> '01-x-rnn' (sitebuild.config.page_name)."""
    return page_name(url)


NAV = nav_pages()
NAV_URLS = [url for _, _, url in NAV]
CHAPTER_URLS = [url for url in NAV_URLS if url.startswith("chapters/")]


def sitemap_urls(site_dir: Path, site_url: str) -> list[str]:
    """Site-relative URLs listed in the built sitemap.xml."""
    text = (site_dir / "sitemap.xml").read_text(encoding="utf-8")
    locs = re.findall(r"<loc>\s*([^<\s]+)\s*</loc>", text)
    base = urlparse(site_url).path
    return [urlparse(loc).path[len(base):] for loc in locs]


# --------------------------------------------------------------------------------------
# Chromium
# --------------------------------------------------------------------------------------


def new_context(browser, scheme: str = "light", viewport: dict | None = None, **kw):
    """A fresh context (empty cache and storage) in the given palette.

    The palette follows Material's media-query palette entries, which is what a reader
    whose system is in dark mode gets on the first visit.
    """
    return browser.new_context(
        color_scheme="dark" if scheme == "dark" else "light",
        viewport=viewport or DESKTOP,
        locale="zh-CN",
        service_workers="block",
        **kw,
    )


class Recorder:
    """Everything a page says on the side: console errors, failed loads, every request.

    Made before the page is sent to its URL. Only the requests of the document that URL loads
    count: a tab that goes on from another page may still have that page's requests in flight,
    or start new ones (a font for a block that the new viewport brings into view) until the
    new document commits; they end during this visit, aborted.
    """

    def __init__(self, page):
        self.console_errors: list[str] = []
        self.requests: list = []
        self.bad_responses: list[str] = []
        self._page = page
        self._committed = False
        self._on = [
            (page, "console", self._console),
            (page, "pageerror", lambda exc: self.console_errors.append(f"pageerror: {exc}")),
            (page, "framenavigated", self._navigated),
            (page.context, "request", self._request),
            (page.context, "requestfailed", self._failed),
            (page.context, "response", self._response),
        ]
        for target, event, handler in self._on:
            target.on(event, handler)

    def _navigated(self, frame) -> None:
        if frame == self._page.main_frame:
            self._committed = True

    def _request(self, request) -> None:
        if self._committed or request.is_navigation_request():
            self.requests.append(request)

    def _own(self, request) -> bool:
        return any(request is r for r in self.requests)

    def _failed(self, request) -> None:
        # net::ERR_ABORTED is the browser cancelling a load itself (a page left while its font was
        # in flight), never a file the site lacks: that is an HTTP 404, recorded in _response.
        if self._own(request) and "ERR_ABORTED" not in (request.failure or ""):
            self.bad_responses.append(f"{request.url} ({request.failure})")

    def _response(self, response) -> None:
        if response.status >= 400 and self._own(response.request):
            self.bad_responses.append(f"{response.url} (HTTP {response.status})")

    def detach(self) -> None:
        """Stop recording (the tab goes on to another page)."""
        for target, event, handler in self._on:
            target.remove_listener(event, handler)
        self._on = []

    def _console(self, msg):
        if msg.type == "error":
            loc = msg.location or {}
            self.console_errors.append(f"{msg.text} [{loc.get('url', '')}:{loc.get('lineNumber', '')}]")

    def foreign_requests(self, allowed_hosts=("127.0.0.1",)) -> list[str]:
        """Requests that leave the site: any http(s)/ws host but ``allowed_hosts``."""
        out = []
        for r in self.requests:
            u = urlparse(r.url)
            if u.scheme in ("data", "blob", "about", "file", "chrome-extension"):
                continue
            if u.hostname not in allowed_hosts:
                out.append(r.url)
        return out


def wait_for_page(page) -> None:
    """Loaded and set up by Material at this URL, fonts in.

    page-init.js marks <body data-page-ready="URL"> in Material's document$ subscription, which
    also fires after every instant-navigation page switch. Anything else a test needs (the
    sitemap Material fetches before it intercepts clicks, the search index) it waits for itself,
    on that request or response: never on a fixed sleep or a swallowed timeout.
    """
    page.wait_for_load_state("load")
    # a ceiling, not a speed check: a 1 MB page next to a PDF print on 2 shared cores is slow
    page.wait_for_function("() => document.body.dataset.pageReady === location.href", timeout=90_000)
    evaluate_within(page, "() => document.fonts.ready.then(() => true)")


@contextlib.contextmanager
def opened(browser, url: str, **context):
    """A fresh context's page at ``url``, ready (:func:`wait_for_page`); closed afterwards."""
    ctx = new_context(browser, **context)
    try:
        page = ctx.new_page()
        page.goto(url)
        wait_for_page(page)
        yield page
    finally:
        ctx.close()


def goto_ready_for_instant_navigation(page, url: str) -> None:
    """Open ``url`` and wait until Material intercepts link clicks: it does so only once it has
    fetched the site's sitemap.xml (instant navigation), which it asks for after its bundle
    starts. A click before that reloads the page."""
    with page.expect_response(lambda r: r.url.endswith("/sitemap.xml") and r.ok, timeout=90_000):
        page.goto(url)
    wait_for_page(page)


# extra.css gives the article's blocks content-visibility: auto, so blocks far from the
# viewport are neither laid out nor painted. A full-page screenshot, an overflow measurement
# or axe's colour checks need every block rendered: this turns it off for the visit.
SHOW_EVERYTHING_CSS = ".md-content__inner > * { content-visibility: visible !important; }"


def show_everything(page, width: dict) -> None:
    """Render every block of the page, then lay it out at ``width`` (another width than the
    current one): the width change makes page-init.js check which formulas and tables scroll
    sideways, which it otherwise checks only near the viewport. Blocks rendered for the first
    time load the KaTeX fonts they use, which widen their formulas after that check: page-init.js
    checks again when the fonts are in, and so this waits for them."""
    assert width["width"] != page.viewport_size["width"], "a width change is what page-init.js reacts to"
    page.evaluate("""css => { const s = document.createElement('style'); s.id = 'show-everything';
                      s.textContent = css; document.head.append(s); }""", SHOW_EVERYTHING_CSS)
    set_width(page, width)
    evaluate_within(page, "() => document.fonts.ready.then(() => true)")
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")


# Text nodes under these are not prose: code, rendered math, scripts, the search UI.
_NOT_PROSE = "pre, code, script, style, noscript, textarea, template, .katex, .md-search, .md-code__nav"

MATH_JS = """(notProse) => {
  const q = s => document.querySelectorAll(s).length;
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const text = [];
  while (walker.nextNode()) {
    const n = walker.currentNode;
    if (n.parentElement && !n.parentElement.closest(notProse)) text.push(n.nodeValue);
  }
  return {
    // math is typeset at build time: no page loads KaTeX or auto-render
    scripts: [...document.scripts].map(s => s.src).filter(src => /[/](katex([.]min)?[.]m?js|auto-render[^/]*)$/.test(src)),
    katex_global: typeof window.katex !== 'undefined' || typeof window.renderMathInElement !== 'undefined',
    arithmatex: q('.arithmatex'),
    katex: q('.katex'),
    mathml: q('.katex .katex-mathml math'),
    errors: [...document.querySelectorAll('.katex-error')].map(e => e.getAttribute('title') || e.textContent).slice(0, 10),
    // typeset by auto-render from text that arithmatex did not protect from Markdown
    unprotected: [...document.querySelectorAll('.md-content .katex')].filter(k => !k.closest('.arithmatex'))
      .map(k => (k.querySelector('annotation') || {}).textContent || '').slice(0, 10),
    prose: text.join(' '),
    scheme: document.body.getAttribute('data-md-color-scheme'),
  };
}"""

# TeX that KaTeX should have consumed. A dollar pair with TeX between is caught too.
RAW_TEX = re.compile(
    r"\$\$|\\\(|\\\)|\\\[|\\\]"
    r"|\\(?:frac|dfrac|sqrt|mathrm|mathbf|operatorname|left|right|sum|prod|partial|top|cdot|le|ge"
    r"|sigma|alpha|gamma|odot|times|text|max|min|exp|log)(?![A-Za-z])"
    r"|\$[^$\s][^$]{0,80}?[\\^_{}][^$]{0,80}?\$"
)


def raw_tex(prose: str) -> list[str]:
    """Snippets of prose around every raw TeX fragment left unrendered."""
    return [prose[max(0, m.start() - 30) : m.end() + 30].replace("\n", " ") for m in RAW_TEX.finditer(prose)][:10]


# Lines that start with Chinese closing punctuation right after inline math, a claim badge or
# a link: for each text run that starts with one of these characters, the thing just before
# it in document order (KaTeX's hidden MathML skipped) ends on an earlier line.
LINE_START_PUNCT_JS = r"""() => {
  const P = '。，；：、）」！？';
  const before = node => {  // the element or text node right before `node` in document order
    for (let e = node; e; e = e.parentElement) {
      let s = e.previousSibling;
      while (s && ((s.nodeType === 3 && !s.nodeValue.trim()) || (s.nodeType === 1 && s.matches('.katex-mathml'))))
        s = s.previousSibling;
      if (s) return s;
      if (e.parentElement && e.parentElement.matches('.md-content')) return null;
    }
    return null;
  };
  const lastRect = n => {
    let rects;
    if (n.nodeType === 3) { const r = document.createRange(); r.selectNodeContents(n); rects = r.getClientRects(); }
    else rects = n.getClientRects();
    return rects.length ? rects[rects.length - 1] : null;
  };
  const out = [];
  const walker = document.createTreeWalker(document.querySelector('.md-content'), NodeFilter.SHOW_TEXT);
  let checked = 0;
  while (walker.nextNode()) {
    const n = walker.currentNode;
    if (!n.nodeValue || !P.includes(n.nodeValue[0]) || n.parentElement.closest('pre, code, .katex-mathml')) continue;
    const prev = before(n);
    const owner = prev && (prev.nodeType === 1 ? prev : prev.parentElement);
    if (!owner || !owner.closest('.katex, .arithmatex, a')) continue;
    checked++;
    const r = document.createRange(); r.setStart(n, 0); r.setEnd(n, 1);
    const p = r.getClientRects()[0], l = lastRect(prev);
    if (p && l && p.left < l.right - 1 && p.top > l.top + 1)
      out.push((prev.textContent || '').slice(-20) + ' | ' + n.nodeValue.slice(0, 12));
  }
  return {checked, line_starts: out};
}"""

# Each table block's placeholder (its contain-intrinsic-size, sitebuild/hooks/contentblocks.py:
# table_placeholder) against the table's real height: asking for the wrapper's box lays a skipped
# block out without changing the page.
TABLE_PLACEHOLDERS_JS = """() => {
  const blocks = [...document.querySelectorAll('.md-content__inner > .table-block')];
  const short = [];
  for (const b of blocks) {
    const placeholder = parseFloat((b.getAttribute('style') || '').match(/contain-intrinsic-size:\\s*auto\\s+([\\d.]+)px/)?.[1] || 0);
    const real = b.firstElementChild.getBoundingClientRect().height;
    if (real > placeholder) short.push(`${b.textContent.trim().slice(0, 30)}: ${Math.round(real)} px, placeholder ${placeholder} px`);
  }
  return {checked: blocks.length, short};
}"""

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


# Rules whose outcome depends on the palette; the others need one run (light) per page.
AXE_COLOUR_RULES = ["color-contrast", "link-in-text-block"]
NOT_COLOUR = {"rules": {rule: {"enabled": False} for rule in AXE_COLOUR_RULES}}


def run_axe(page, rules: list[str] | dict | None = None, within: str | None = None) -> list[dict]:
    """axe-core's violations on the current page (or only in the element ``within`` selects),
    impact serious or critical: all default rules, only ``rules`` (a list), or the rules as axe's
    options say (a dict: ``NOT_COLOUR``)."""
    page.add_script_tag(path=str(AXE_JS))
    options = {"resultTypes": ["violations"]}
    if isinstance(rules, dict):
        options.update(rules)
    elif rules:
        options["runOnly"] = {"type": "rule", "values": rules}
    result = evaluate_within(
        page,
        """async ([options, within]) => {
          const r = await axe.run(within ? {include: [within]} : document, options);
          return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
            count: v.nodes.length,
            nodes: v.nodes.slice(0, 5).map(n => n.target.join(' ') + ' :: '
              + ((n.any[0] || n.all[0] || n.none[0] || {}).message || ''))}));
        }""",
        [options, within],
    )
    return [v for v in result if v["impact"] in ("serious", "critical")]


# Open the collapsed answers (<details>) and select the tab that hold an element.
REVEAL_JS = """el => {
  for (let e = el; e; e = e.parentElement) {
    if (e.tagName === 'DETAILS') e.open = true;
    if (e.parentElement && e.parentElement.classList.contains('tabbed-content')) {
      const set = e.parentElement.closest('.tabbed-set');
      const i = [...e.parentElement.children].indexOf(e);
      const input = set && set.querySelectorAll(':scope > input')[i];
      if (input) input.checked = true;
    }
  }
}"""


# How many copy buttons a visit clicks, spread over the page: Material's one copy script
# serves every block, so the first, the last and a few between show whether it copies the
# block's own text (a page with 150 blocks took two minutes to click through).
COPY_SAMPLE = 6


def sample_evenly(items: list, k: int) -> list:
    """At most ``k`` of ``items``: the first, the last and evenly spaced ones between."""
    if len(items) <= k:
        return list(items)
    return [items[round(i * (len(items) - 1) / (k - 1))] for i in range(k)]


def check_copy_buttons(page, targets: list[str]) -> tuple[int, list[str]]:
    """Click the copy buttons of ``targets``; the clipboard must hold exactly the block's text."""
    bad = []
    for target in targets:
        button = page.locator(f'.md-content [data-md-type=copy][data-clipboard-target="{target}"]').first
        button.evaluate(REVEAL_JS)
        page.evaluate("navigator.clipboard.writeText('')")
        button.scroll_into_view_if_needed()
        button.click()
        copied = page.evaluate("navigator.clipboard.readText()")
        expected = page.evaluate("t => document.querySelector(t).textContent.trimEnd()", target)
        if copied != expected:
            bad.append(f"{target}: copied {copied[:80]!r}... expected {expected[:80]!r}...")
    return len(targets), bad


# A block that scrolls sideways must take keyboard focus (or hold something that does), or a
# keyboard reader cannot scroll it: axe's scrollable-region-focusable, here at both widths and on
# every page, since which blocks scroll depends on the page's content and the width.
UNFOCUSABLE_SCROLLERS_JS = """() => {
  const focusable = 'a[href], button, input, select, textarea, [tabindex]:not([tabindex="-1"])';
  const out = [];
  let scrolling = 0;
  for (const el of document.querySelectorAll('.md-content *')) {
    if (el.scrollWidth <= el.clientWidth + 1) continue;
    const o = getComputedStyle(el).overflowX;
    if (o !== 'auto' && o !== 'scroll') continue;
    scrolling++;
    if (el.tabIndex >= 0 || el.querySelector(focusable)) continue;
    out.push(el.tagName.toLowerCase() + '.' + [...el.classList].join('.') + ' "' + el.textContent.trim().slice(0, 30) + '"');
  }
  return {scrolling, unfocusable: out.slice(0, 10)};
}"""


def layout(page) -> dict:
    """What a reader at the current width sees go wrong: sideways page scroll, formulas that
    scroll without a cue, blocks that scroll but take no focus, lines that start with closing
    punctuation, tables taller than the placeholder they take while skipped."""
    return {"overflow": page.evaluate(OVERFLOW_JS), "cue": page.evaluate(SCROLL_CUE_JS),
            "focus": page.evaluate(UNFOCUSABLE_SCROLLERS_JS), "punct": page.evaluate(LINE_START_PUNCT_JS),
            "tables": page.evaluate(TABLE_PLACEHOLDERS_JS)}


# Typesetting (issue 11; docs/assets/extra.css, sitebuild/hooks/abbrfirst.py), measured in px at the
# current width. Sizes: admonitions, <details> (the interview questions) with their <summary>
# titles, and tables, against the article's body size. Gaps: white between a display formula's
# ink box (.katex-html) and the glyph boxes of the paragraph just above / below it (inline math
# included: a tall inline matrix may come within a few px, never overlap). Abbreviations:
# per term, the first <abbr> on the page underlined (Material's dotted border), the rest not.
TYPESETTING_JS = r"""() => {
  const body = parseFloat(getComputedStyle(document.querySelector('.md-content .md-typeset')).fontSize);
  const px = el => parseFloat(getComputedStyle(el).fontSize);
  const name = el => el.tagName.toLowerCase() + [...el.classList].map(c => '.' + c).join('')
    + ' "' + el.textContent.trim().slice(0, 30) + '"';

  const kinds = {admonition: '.admonition', details: 'details', summary: 'details > summary',
                 table: 'table.table-prewrapped'};
  const sizes = {checked: {}, smallest: {}, offenders: []};
  for (const [kind, sel] of Object.entries(kinds)) {
    const els = [...document.querySelectorAll('.md-content ' + sel)].filter(el => !el.closest('.jupyter-wrapper'));
    sizes.checked[kind] = els.length;
    sizes.smallest[kind] = els.length ? Math.min(...els.map(px)) / body : null;
    for (const el of els) if (px(el) < 0.9 * body - 0.01) sizes.offenders.push(`${name(el)}: ${px(el)}px`);
  }

  const glyphs = el => { const r = document.createRange(); r.selectNodeContents(el);
    return [...r.getClientRects()].filter(x => x.width > 0 && x.height > 0); };
  const gaps = {checked: 0, largest: 0, smallest: null, offenders: []};
  for (const box of document.querySelectorAll('.md-content div.arithmatex')) {
    const ink = box.querySelector('.katex-display .katex-html');
    if (!ink) continue;
    const f = ink.getBoundingClientRect();
    const tex = ((box.querySelector('annotation') || {}).textContent || '').slice(0, 40);
    const sides = [['above', box.previousElementSibling], ['below', box.nextElementSibling]];
    for (const [side, el] of sides) {
      if (!el || el.tagName !== 'P') continue;
      const rects = glyphs(el);
      if (!rects.length) continue;
      const gap = side === 'above' ? f.top - Math.max(...rects.map(r => r.bottom))
                                   : Math.min(...rects.map(r => r.top)) - f.bottom;
      gaps.checked++;
      gaps.largest = Math.max(gaps.largest, gap);
      gaps.smallest = gaps.smallest === null ? gap : Math.min(gaps.smallest, gap);
      if (gap > 2 * body || gap < 0) gaps.offenders.push(`${side} ${Math.round(gap)}px: ${tex}`);
    }
  }

  const underlined = el => { const cs = getComputedStyle(el);
    return (cs.borderBottomStyle !== 'none' && parseFloat(cs.borderBottomWidth) > 0)
      || cs.textDecorationLine.includes('underline'); };
  const abbr = {terms: 0, repeats: 0, offenders: []};
  const seen = new Set();
  for (const el of document.querySelectorAll('.md-content abbr')) {
    const term = el.textContent.trim();
    const first = !seen.has(term);
    seen.add(term);
    if (first) abbr.terms++; else abbr.repeats++;
    if (underlined(el) !== first) abbr.offenders.push(`${term} (${first ? 'first use, no underline' : 'repeat, underlined'})`);
  }
  abbr.offenders = abbr.offenders.slice(0, 10);
  return {body, sizes, gaps, abbr};
}"""


def typesetting(page) -> dict:
    """Text sizes, the white around display formulas and abbreviation underlines at the current width."""
    return page.evaluate(TYPESETTING_JS)


def set_width(page, viewport: dict) -> None:
    """A new viewport, laid out (page-init.js re-marks the scrolling blocks on resize)."""
    page.set_viewport_size(viewport)
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")


def switch_palette(page, scheme: str) -> None:
    """The header's palette toggle, as a reader flips it; waits until the scheme is applied."""
    want = "slate" if scheme == "dark" else "default"
    # Material's toggle, or the site's own copy of it (docs/assets/overrides/partials/palette.html)
    page.locator("form[data-md-component=palette], form[data-md-palette]").locator("label:visible").first.click()
    page.wait_for_function("s => document.body.getAttribute('data-md-color-scheme') === s", arg=want,
                           timeout=10_000)
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")


class Site:
    """Visits each page of the served site once and keeps what it saw, for both palettes.

    One load per page (the suite runs on 2 shared cores and chapter pages are large), each worker
    in one tab that goes from page to page, as a reader does: the theme's scripts, styles and
    fonts come from the cache after the first page (a first visit's bytes are tested once, in
    test_template.py). At 390 px: the layout and the typesetting; then, on the pages that show
    every kind of element, the same at 1280 px, axe's rules in the light palette and its colour
    rules after the reader's toggle to dark.
    """

    def __init__(self, browser, base_url: str, site_dir: Path, shared: Path | None = None,
                 pages: list[str] | None = None):
        self.browser = browser
        self.base_url = base_url
        self.site_dir = site_dir
        self.shared = shared  # with a folder, one visit per run for all xdist workers
        self.pages = list(dict.fromkeys(pages or []))  # the pages this run's tests ask for, in order
        self._reports: dict[str, dict[str, dict]] = {}
        self._ids: dict[Path, set[str]] = {}
        # (page, seconds) of the visits made since the last test ended; the browser conftest
        # records them in the JUnit report, so tools/chapter_cost.py charges a visit
        # to its page's chapter, whichever test happened to make it
        self.visits: list[tuple[str, float]] = []
        self._failed: set[str] = set()  # pages whose visit for another test failed
        self._cover: list[str] | None = None
        self._tab = None  # this worker's tab, kept from visit to visit

    def axe_pages(self) -> list[str]:
        """The pages axe checks (all its rules in light, its colour rules in dark too): the fewest
        that together show every kind of element the site has (tests/support/elementkinds.py)."""
        if self._cover is None:
            urls = [u for u in NAV_URLS if (self.site_dir / u / "index.html").is_file()]
            self._cover = covering_pages(self.site_dir, urls)
        return self._cover

    def close(self) -> None:
        if self._tab is not None:
            self._tab.context.close()
            self._tab = None

    def url(self, path: str) -> str:
        return urljoin(self.base_url, path)

    def report(self, path: str, scheme: str = "light") -> dict:
        if path not in self._reports:
            self._reports[path] = self._shared_visit(path) if self.shared else self._visit(path)
        return self._reports[path][scheme]

    def _shared_visit(self, path: str) -> dict[str, dict]:
        """The visit of ``path``, made once per run. While another worker is making it, this one
        visits a page that some test of the run will ask for and no worker has visited yet,
        instead of waiting idle: otherwise the workers fall into step, all waiting on one visit
        (one busy core) for each page in turn."""
        while (got := try_once(self.shared, f"visit-{path}", lambda: self._visit(path))) is None:
            if not self._visit_another(path):
                return once(self.shared, f"visit-{path}", lambda: self._visit(path))
        return got[0]

    def _visit_another(self, busy: str) -> bool:
        """Make one visit that nobody has made or is making, from the pages after ``busy``;
        False if there is none left."""
        if busy not in self.pages:
            return False
        i = self.pages.index(busy)
        for other in self.pages[i + 1:] + self.pages[:i]:
            if other in self._reports or other in self._failed:
                continue
            try:
                got = try_once(self.shared, f"visit-{other}", lambda o=other: self._visit(o))
            except Exception:  # noqa: BLE001 - that page's own tests visit it again and fail with the error
                self._failed.add(other)
                return True
            if got is not None:
                self._reports[other] = got[0]
                if got[1]:
                    return True
        return False

    def _visit(self, path: str) -> dict[str, dict]:
        start = time.monotonic()
        try:
            return self._look(path)
        finally:
            self.visits.append((path, round(time.monotonic() - start, 3)))

    def _look(self, path: str) -> dict[str, dict]:
        """What only a layout engine can tell about this page's content: the layout and the
        typesetting at 390 px (and at 1280 px with axe, on the cover pages), and what the page said
        on the side (console, failed loads, requests)."""
        if self._tab is None:
            self._tab = new_context(self.browser, "light", viewport=DESKTOP).new_page()
        page = self._tab
        rec = Recorder(page)
        try:
            page.set_viewport_size(DESKTOP)
            page.goto(self.url(path), wait_until="load")
            wait_for_page(page)
            # every block painted (the layout and axe's colour checks need them), first at 390 px
            show_everything(page, MOBILE)
            light = {"layout": {"mobile": layout(page)}, "typesetting": {"mobile": typesetting(page)}, "axe": None}
            dark = {}
            # At 1280 px only the template decides (the column is twice as wide, and what could be
            # too wide scrolls in its own wrapper at both widths): the layout and the typesetting
            # there, and axe, on the pages that together show every kind of element.
            if path in self.axe_pages():
                set_width(page, DESKTOP)
                light["layout"]["desktop"] = layout(page)
                light["typesetting"]["desktop"] = typesetting(page)
                light["axe"] = run_axe(page)
                switch_palette(page, "dark")
                dark = {"scheme": page.evaluate("document.body.getAttribute('data-md-color-scheme')"),
                        "axe": run_axe(page, AXE_COLOUR_RULES)}
            # After axe and the palette switch, so that they are checked too.
            shared = {
                "path": path,
                "console_errors": list(rec.console_errors),
                "bad_responses": list(rec.bad_responses),
                "foreign_requests": rec.foreign_requests(),
                "request_count": len(rec.requests),
            }
            # the next page starts as a reader's first: light palette, nothing remembered
            page.evaluate("() => { localStorage.clear(); sessionStorage.clear(); }")
            return {"light": {**shared, **light}, "dark": {**shared, **dark}}
        except BaseException:
            self.close()  # a tab left mid-visit is not reused
            raise
        finally:
            rec.detach()


def save_screenshot(page, name: str, full_page: bool = True) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=full_page)
    return path


# --------------------------------------------------------------------------------------
# Search: the shipped Material worker, fed the built index, queried directly.
# --------------------------------------------------------------------------------------

SEARCH_WORKER_JS = """async ({queries, docs}) => {
  const config = JSON.parse(document.getElementById('__config').textContent);
  const base = new URL(config.base + '/', location.href);
  const index = await (await fetch(new URL('search/search_index.json', base))).json();
  if (docs) index.docs = docs;
  const worker = new Worker(new URL(config.search, base));
  const ask = msg => new Promise((resolve, reject) => {
    worker.onmessage = ev => resolve(ev.data);
    worker.onerror = ev => reject(new Error(ev.message));
    worker.postMessage(msg);
  });
  // Message types of Material's worker: 0 setup, 1 ready, 2 query, 3 result.
  const ready = await ask({type: 0, data: {config: index.config, docs: index.docs,
                                            options: {suggest: true}}});
  if (ready.type !== 1) throw new Error('search worker not ready: ' + JSON.stringify(ready));
  const out = {};
  for (const q of queries) {
    const res = await ask({type: 2, data: q});
    // title and (highlighted) text only for the first pages, the ones a reader sees
    out[q] = res.data.items.map((group, i) => group.map(item => i < 3
      ? {location: item.location, score: item.score, title: item.title, text: item.text}
      : {location: item.location, score: item.score}));
  }
  worker.terminate();
  return out;
}"""


def search_with_worker(page, queries: list[str], docs: list[dict] | None = None) -> dict[str, list[list[dict]]]:
    """For each query, the result groups (one per page, best first): lists of items with the
    location, and for the first three pages the title and (highlighted) text a reader sees.
    ``docs``: index entries to search instead of the site's (with the site's config)."""
    return evaluate_within(page, SEARCH_WORKER_JS, {"queries": queries, "docs": docs})


def type_search(page, query: str) -> list[str]:
    """Enter ``query`` in Material's search box as an IME commits a word (the whole word at once),
    then the key release Material reads the box on; return the result links shown.

    The box is emptied first and the results waited away, so the results waited for next can
    only be this query's: Material runs one query per key release."""
    label = page.locator("label.md-header__button[for='__search']")
    if label.is_visible():  # narrow screens: the search icon opens the box
        label.click()
    box = page.locator("input.md-search__input")
    box.click()
    box.fill("")
    page.keyboard.press("End")
    page.wait_for_function("() => document.querySelectorAll('.md-search-result__item').length === 0",
                           timeout=20_000)
    box.fill(query)
    page.keyboard.press("End")  # Material reads the box on keyup
    page.wait_for_function(
        "q => { const m = document.querySelector('.md-search-result__meta');"
        " return document.querySelector('input.md-search__input').value === q"
        " && document.querySelectorAll('.md-search-result__item a').length > 0 && m && /\\d/.test(m.textContent); }",
        arg=query,
        timeout=20_000,
    )
    return page.eval_on_selector_all(".md-search-result__item a", "els => els.map(a => a.href)")


# --------------------------------------------------------------------------------------
# Budgets: bytes a first visit transfers.
# --------------------------------------------------------------------------------------

BUDGET_TYPES = {"document", "stylesheet", "script", "font", "image"}


def first_load_bytes(browser, url: str) -> dict:
    """Bytes of a first visit (fresh context, cache disabled), by resource type.

    ``transfer`` is the response body size the browser saw (compressed, when the server
    compresses); ``raw`` is the decoded size of the same bodies.
    """
    ctx = new_context(browser)
    page = ctx.new_page()
    cdp = ctx.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send("Network.setCacheDisabled", {"cacheDisabled": True})
    finished = []
    ctx.on("requestfinished", lambda r: finished.append(r))
    try:
        page.goto(url, wait_until="load")
        wait_for_page(page)
        transfer: dict[str, int] = {}
        raw: dict[str, int] = {}
        files = []
        for req in finished:
            size = req.sizes()["responseBodySize"]
            response = req.response()
            # With the cache disabled Chromium may revalidate a preloaded font when the page uses
            # it: a 304 carries no body, and Playwright refuses to read one (a 3xx is a redirect to it).
            has_body = response is not None and not 300 <= response.status < 400
            body = len(response.body()) if has_body else 0
            transfer[req.resource_type] = transfer.get(req.resource_type, 0) + size
            raw[req.resource_type] = raw.get(req.resource_type, 0) + body
            files.append((size, body, req.resource_type, req.url))
        return {
            "transfer": sum(v for k, v in transfer.items() if k in BUDGET_TYPES),
            "raw": sum(v for k, v in raw.items() if k in BUDGET_TYPES),
            "transfer_all": sum(transfer.values()),
            "transfer_by_type": transfer,
            "raw_by_type": raw,
            "largest": sorted(files, reverse=True)[:8],
        }
    finally:
        ctx.close()
