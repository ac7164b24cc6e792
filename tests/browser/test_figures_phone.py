"""Generated figures are readable where the page shows them: no SVG text below 11 CSS px.

A template check: figures are laid out by CSS alone, so one page (the chapter page with the most
figures) stands for all. tests/site/test_figures.py checks every figure's text from its SVG and
the phone column it is drawn for; this checks, in a browser, that a figure really is shown that wide.

A figure is an ``<img>`` of an SVG, so its text is scaled with the image: a text element of
``font-size: f`` in an SVG whose viewBox is ``V`` wide, shown ``W`` CSS px wide, reads at
``f * W / V`` px. Each chapter page is loaded once, at the phone width (390 px), measured,
then measured again after the viewport is widened to 1280 px (the layout follows; a second
load would only cost time). The figures' geometry is pure CSS, so the page's script files,
fonts and search index are not fetched: Material's bundle working through a ~40,000-element
chapter would more than double the cost and gives the same widths (checked when this was written).
Only the figures are rendered for the measurement (they are lifted out of
``content-visibility: auto``). Only the light variants are measured: the ``-dark.svg`` files
differ from them in colours only (tests/site/test_figures.py checks that).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sitebuild.generate.render._style import MIN_TEXT_PX
from sitebuild.config import nav_pages
from tests.browser.helpers import DESKTOP, MOBILE, ROOT, evaluate_within, new_context


def _most_figures() -> str:
    """The chapter page whose Markdown shows the most generated figures."""
    def count(src: str) -> int:
        path = ROOT / "docs" / src
        return path.read_text(encoding="utf-8").count("generated/") if src.endswith(".md") else 0
    return max((url for _, src, url in nav_pages() if url.startswith("chapters/")),
               key=lambda url: count(next(s for _, s, u in nav_pages() if u == url)))


FIGURE_PAGES = [_most_figures()]

VIEWPORTS = (MOBILE, DESKTOP)  # the first is the one the page is loaded at
SHOW_FIGURES_CSS = ".md-content__inner > figure { content-visibility: visible !important; }"
NOT_NEEDED = re.compile(r"[.](js|woff2?|ttf|json)([?#].*)?$")  # scripts, fonts, the search index

# For every shown <img> of a generated SVG: its rendered width, the SVG's viewBox width, and
# the smallest font-size (inherited through <g>/<text>/<tspan>) of any element holding text.
FIGURE_TEXT_JS = """async () => {
  const imgs = [...document.querySelectorAll('.md-content img')]
    .filter(img => /[/]generated[/][^/]+[.]svg([#?].*)?$/.test(img.getAttribute('src')));
  for (const img of imgs) img.loading = 'eager';
  await Promise.all(imgs.map(img => img.decode().catch(() => null)));
  const svgs = window.__figureSvgs = window.__figureSvgs || {};  // fetched once per page
  const size = el => {
    for (let e = el; e && e.nodeType === 1; e = e.parentElement) {
      const style = e.getAttribute('style') || '';
      const m = style.match(/font-size:\\s*([0-9.]+)px/) || style.match(/font:\\s*(?:[a-z]+\\s+)*([0-9.]+)px/);
      if (m) return parseFloat(m[1]);
      if (e.getAttribute('font-size')) return parseFloat(e.getAttribute('font-size'));
    }
    return 16;  // the SVG default
  };
  const out = [];
  for (const img of imgs) {
    const rect = img.getBoundingClientRect();
    if (!rect.width || getComputedStyle(img).display === 'none') continue;  // the other palette's variant
    const src = img.src.replace(/[#?].*$/, '');
    if (!svgs[src]) {
      const svg = new DOMParser().parseFromString(await (await fetch(src)).text(), 'image/svg+xml').documentElement;
      const vb = (svg.getAttribute('viewBox') || '').split(/[\\s,]+/).map(Number);
      let min = Infinity, smallest = '';
      for (const el of svg.querySelectorAll('text, tspan')) {
        const own = [...el.childNodes].filter(n => n.nodeType === 3).map(n => n.nodeValue).join('').trim();
        if (!own) continue;
        const f = size(el);
        if (f < min) { min = f; smallest = own; }
      }
      svgs[src] = {viewbox: vb.length === 4 ? vb[2] : parseFloat(svg.getAttribute('width')), min, smallest};
    }
    const {viewbox, min, smallest} = svgs[src];
    const a = img.closest('a[href]');
    out.push({src: img.getAttribute('src').replace(/[#?].*$/, ''), width: rect.width, viewbox,
              min_px: min * rect.width / viewbox, smallest, link: a ? a.getAttribute('href') : null});
  }
  return out;
}"""


# Captions slanted by the browser (Chinese has no italic face: Material's figcaption italic would
# be a synthetic slant), and provenance lines, on the page as loaded.
CAPTIONS_JS = """() => [...document.querySelectorAll('.md-content :is(figcaption, p.provenance)')]
  .filter(el => getComputedStyle(el).fontStyle !== 'normal').map(el => el.textContent.slice(0, 40))"""


@pytest.fixture(scope="module")
def measured(chromium_browser, site_url) -> dict:
    """{(page, viewport width): [one dict per shown figure]}, one page load per page measured."""
    out = {}
    ctx = new_context(chromium_browser, "light", viewport=VIEWPORTS[0])
    ctx.route(NOT_NEEDED, lambda route: route.abort())
    page = ctx.new_page()
    try:
        for path in FIGURE_PAGES:
            page.set_viewport_size(VIEWPORTS[0])
            page.goto(site_url + path, wait_until="load")
            page.add_style_tag(content=SHOW_FIGURES_CSS)
            for viewport in VIEWPORTS:
                page.set_viewport_size(viewport)
                out[(path, viewport["width"])] = evaluate_within(page, FIGURE_TEXT_JS)
            out[(path, "slanted")] = page.evaluate(CAPTIONS_JS)
    finally:
        ctx.close()
    return out


@pytest.mark.parametrize("path", FIGURE_PAGES)
@pytest.mark.parametrize("width", [v["width"] for v in VIEWPORTS])
def test_figure_text_is_at_least_11_css_px(measured, path, width):
    figures = measured[(path, width)]
    small = [f"{Path(f['src']).name}: {f['min_px']:.1f} px ({f['smallest']!r}; shown {f['width']:.0f} px wide, "
             f"viewBox {f['viewbox']:.0f})" for f in figures if f["min_px"] < MIN_TEXT_PX]
    assert not small, f"figure text below {MIN_TEXT_PX} px at {width} px:\n" + "\n".join(small)


@pytest.mark.parametrize("path", FIGURE_PAGES)
def test_figures_open_full_size_and_captions_are_upright(measured, path):
    """A tap on a figure opens its SVG (the light one, which reads on the browser's white); no caption
    or provenance line is in (synthetic) italics."""
    for f in measured[(path, VIEWPORTS[0]["width"])]:
        assert f["link"] == f["src"], f"{f['src']}: the image should link to its own SVG, not {f['link']!r}"
    assert measured[(path, "slanted")] == []


def test_the_page_measured_shows_figures(measured):
    """The page chosen shows figures at both widths, or the checks above check nothing."""
    for viewport in VIEWPORTS:
        assert all(measured[(path, viewport["width"])] for path in FIGURE_PAGES), measured
