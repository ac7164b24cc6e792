"""The site builds with --strict, fails on broken links and anchors, and loads nothing from other hosts."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import pytest

from sitebuild.config import nav_pages
from tests.support.build import ROOT, mkdocs_builds, tiny_site
from tests.support.builtpage import replay
from tests.support.shared import once


def test_strict_build_succeeds(built_site):
    assert (built_site / "index.html").is_file()
    assert (built_site / "chapters/01-why-attention/index.html").is_file()
    assert (built_site / "search/search_index.json").is_file()


GLOSSARY = "# 术语表\n\n## 一节 {#one}\n"
# Tiny trees with the real configuration (tests/support/build.py), built in one interpreter.
TINY_SITES = {
    "good": {"index.md": "# 首页\n\n[好锚点](glossary.md#one)\n", "glossary.md": GLOSSARY},
    "broken": {"index.md": "# 首页\n\n[坏链接](no-such-page.md)\n\n[坏锚点](glossary.md#no-such-anchor)\n",
               "glossary.md": GLOSSARY},
    "bad-formula": {"index.md": "# 首页\n\n$e^{i\\pi}+1=0$\n",
                    "bad.md": "# 坏公式\n\n正常的 $x^2$，然后：\n\n$$\n\\frac{a}{b\n$$\n"},
}


@pytest.fixture(scope="module")
def tiny_builds(shared) -> dict:
    """{name: {"returncode", "log"}} of each tiny site's strict build, once per run (xdist workers share it)."""
    def build_all() -> dict:
        where = shared / "tiny-sites"
        roots = {name: tiny_site(where / name, pages) for name, pages in TINY_SITES.items()}
        procs = mkdocs_builds([(root, where / f"{name}-site") for name, root in roots.items()])
        return {name: {"returncode": p.returncode, "log": p.stdout + p.stderr} for name, p in zip(roots, procs)}

    return once(shared, "tiny-builds", build_all)


@pytest.mark.slow  # three tiny strict builds in a fresh interpreter (tiny_builds)
def test_strict_build_fails_on_broken_links_and_anchors(tiny_builds):
    """A tiny tree with the real configuration: the good version builds, the broken one fails, naming both."""
    assert tiny_builds["good"]["returncode"] == 0, tiny_builds["good"]["log"]
    broken = tiny_builds["broken"]
    assert broken["returncode"] != 0, "a broken reference must fail mkdocs build --strict"
    assert "no-such-page.md" in broken["log"]
    assert "no-such-anchor" in broken["log"]


class _ResourceCollector(HTMLParser):
    """Every URL the browser would *load* (scripts, stylesheets, icons, images, media, fonts)."""

    def __init__(self):
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in {"script", "img", "iframe", "source", "audio", "video", "embed"} and a.get("src"):
            self.urls.append(a["src"])
        if tag == "link" and a.get("href"):
            rel = (a.get("rel") or "").lower()
            if any(r in rel for r in ("stylesheet", "icon", "preload", "modulepreload", "manifest", "prefetch")):
                self.urls.append(a["href"])
        if tag == "img" and a.get("srcset"):
            self.urls += [part.split()[0] for part in a["srcset"].split(",")]
        if a.get("style"):
            self.urls += re.findall(r"url\(\s*['\"]?([^'\")]+)", a["style"])


def _is_external(url: str) -> bool:
    return bool(re.match(r"^(https?:)?//", url)) and not re.match(r"^(https?:)?//(127\.0\.0\.1|localhost)[:/]", url)


def test_built_html_and_css_reference_no_other_host(built_site, built_pages):
    offenders = []
    for html in built_pages:
        collector = replay(_ResourceCollector(), html)
        offenders += [f"{html.relative_to(built_site)}: {u}" for u in collector.urls if _is_external(u)]
    for css in built_site.rglob("*.css"):
        for url in re.findall(r"url\(\s*['\"]?([^'\")]+)", css.read_text(encoding="utf-8", errors="replace")):
            if _is_external(url):
                offenders.append(f"{css.relative_to(built_site)}: {url}")
    assert offenders == []


def test_katex_fonts_are_woff2_only(built_site):
    fonts = list((built_site / "assets/katex/fonts").iterdir())
    assert fonts, "KaTeX fonts must be served by the site"
    assert {f.suffix for f in fonts} == {".woff2"}


def _dictionary_terms() -> list[str]:
    lines = (ROOT / "docs/jieba-dict.txt").read_text(encoding="utf-8").splitlines()
    return [line.split()[0] for line in lines if line.strip()]


REQUIRED_TERMS = [
    "梯度消失", "梯度爆炸", "自注意力", "多头注意力", "位置编码", "链式法则", "反向传播",
    "雅可比矩阵", "循环神经网络", "长短期记忆", "遗忘门", "细胞状态", "时间复杂度",
    "最大路径长度", "并行计算", "掩码", "交叉注意力", "编码器", "解码器",
]


def test_dictionary_covers_required_terms():
    assert set(REQUIRED_TERMS) <= set(_dictionary_terms())


def test_search_index_keeps_terms_whole(built_site):
    """jieba with the user dictionary keeps each domain term one token in the index.

    Material separates segmented words with U+200B (zero-width space) in the index text,
    so a whole term shows up as a run bounded by separators.
    """
    index = json.loads((built_site / "search/search_index.json").read_text(encoding="utf-8"))
    text = "\u200b".join(doc["title"] + "\u200b" + doc["text"] for doc in index["docs"])
    tokens = set(re.split(r"[\u200b\s，。、；：（）()“”\"'！？,.;:!?<>/\[\]{}|=+*^$\\-]+", text))
    present = [term for term in REQUIRED_TERMS if term in text]
    assert len(present) >= 10, f"too few domain terms on the site yet: {present}"
    split = [term for term in present if term not in tokens]
    assert split == [], f"terms split by the tokenizer: {split}"


# ---------------------------------------------------------------------------- build-time math


def test_math_is_typeset_at_build_time_and_no_page_loads_katex(built_site):
    """Every page holds its formulas typeset (HTML + MathML), no raw arithmatex TeX, no KaTeX script;
    the served KaTeX stylesheet names only the woff2 fonts the site ships."""
    typeset, offenders = 0, []
    for page in built_site.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        name = str(page.relative_to(built_site))
        if re.search(r"<script[^>]+src=[\"'][^\"']*/(katex(\.min)?\.m?js|auto-render[^\"'/]*)[\"']", text):
            offenders.append(f"{name}: loads a KaTeX script")
        left = re.findall(r'<(?:span|div) class="arithmatex">\s*\\[(\[]', text)
        if left:
            offenders.append(f"{name}: {len(left)} arithmatex formulas left as TeX")
        katex, mathml = text.count('<span class="katex">'), text.count('<span class="katex-mathml">')
        if katex != mathml:
            offenders.append(f"{name}: {katex} formulas, {mathml} with MathML")
        typeset += katex
    assert offenders == []
    assert typeset > 1000
    assert not list((built_site / "assets/katex").rglob("*.js")), "KaTeX's scripts are not shipped"
    css = (built_site / "assets/katex/katex.min.css").read_text(encoding="utf-8")
    urls = re.findall(r"url\(([^)]+)\)", css)
    assert urls and all(u.endswith(".woff2") and (built_site / "assets/katex" / u).is_file() for u in urls)


def test_scripts_start_after_the_load_event(built_site):
    """No page runs a script file while it is parsed: Material's bundle and the site's scripts wait
    in <template id="__scripts">, the bundle first, for partials/late-scripts.js to start them
    after the load event; <html> gets the bundle's classes in <head> (partials/script-classes.js).
    Run at the end of the page, the bundle's start-up styled and laid out everything parsed since
    the last frame inside one task (make audit: the longest task of a section page)."""
    offenders, checked = [], 0
    for page in built_site.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        name = str(page.relative_to(built_site))
        if "</body>" not in text or 'id="__config"' not in text:
            continue  # not a Material page (a notebook's raw download, an include)
        checked += 1
        held = re.search(r'<template id="__scripts">(.*?)</template>', text, re.S)
        outside = re.sub(r'<template id="__scripts">.*?</template>', "", text, flags=re.S)
        if held is None:
            offenders.append(f"{name}: no held scripts")
            continue
        files = re.findall(r'<script[^>]+src="([^"]+)"', held.group(1))
        if not files or not re.search(r"/bundle\.\w+\.min\.js$", files[0]):
            offenders.append(f"{name}: the bundle is not the first held script: {files}")
        if re.search(r'<script[^>]+src="[^"]', outside):  # (a notebook page keeps mkdocs-jupyter's empty one)
            offenders.append(f"{name}: a script file outside the template")
        if 'dispatchEvent(new Event("DOMContentLoaded"))' not in outside:
            offenders.append(f"{name}: no late-scripts loader")
        head = outside.split("</head>", 1)[0]
        if 'classList.add("js-focus-visible")' not in head:
            offenders.append(f"{name}: <html> does not get the bundle's classes in <head>")
    assert offenders == []
    assert checked >= len(nav_pages()), f"only {checked} Material pages found"


def test_math_stays_out_of_the_search_index(built_site):
    """Formulas are typeset after the search plugin read the page: no KaTeX markup in the index."""
    index = (built_site / "search/search_index.json").read_text(encoding="utf-8")
    assert "katex" not in index and "MathML" not in index


@pytest.mark.slow  # three tiny strict builds in a fresh interpreter (tiny_builds)
def test_bad_formula_fails_the_build_naming_page_and_formula(tiny_builds):
    proc = tiny_builds["bad-formula"]
    assert proc["returncode"] != 0, "a formula KaTeX cannot parse must fail the build"
    out = proc["log"]
    assert "bad.md" in out and "\\frac{a}{b" in out and "KaTeX" in out


def test_no_page_links_into_a_file_the_build_excludes(_site_build):
    """mkdocs only logs, at INFO even under --strict, a link into an excluded file (a chapter's
    questions.md, which is included into its interview page): such a link is dead on the site."""
    dead = [line for line in _site_build["log"].splitlines() if "excluded from the built site" in line]
    assert not dead, "\n".join(dead[:10])


def test_pages_preload_the_katex_fonts_their_first_screen_selects(built_site):
    """fonts_used reads KaTeX's font classes; a built page preloads what the formulas of its first
    screen need (contentblocks.first_screen), not the fonts only later formulas use."""
    from sitebuild.hooks.contentblocks import first_screen
    from sitebuild.hooks.mathrender import fonts_used

    base = ["KaTeX_Main-Regular.woff2", "KaTeX_Math-Italic.woff2"]
    assert fonts_used("<p>no math</p>") == base
    html = ('<span class="mord mathbb">R</span><span class="mop op-symbol large-op">∑</span>'
            '<span class="delimsizing size3">(</span><span class="sizing reset-size6 size1">x</span>'
            '<span class="mord mathnormal">x</span><span class="mord mathbf">W</span>')
    assert fonts_used(html) == base + ["KaTeX_AMS-Regular.woff2", "KaTeX_Main-Bold.woff2",
                                       "KaTeX_Size2-Regular.woff2", "KaTeX_Size3-Regular.woff2"]
    page = (built_site / "chapters/02-architecture/derivation/index.html").read_text(encoding="utf-8")
    preloaded = re.findall(r'<link rel="preload" href="[^"]*/(KaTeX_[\w-]+\.woff2)" as="font"', page)
    assert preloaded == fonts_used(first_screen(page)) and len(preloaded) >= 2
    assert set(fonts_used(page)) > set(preloaded), "the page's later formulas use fonts its first screen does not"


def test_render_page_typesets_labels_notebooks_and_keeps_punctuation_on_the_line():
    """The hook itself, on a hand-written page: arithmatex, a TOC label, a notebook cell, and the
    punctuation after an inline formula or a badge glued to it (no line may start with it)."""
    from sitebuild.hooks.mathrender import Renderer, render_page

    page = ('<span class="md-ellipsis">门也依赖 \\(c_{t-1}\\)</span>'
            '<p>设 <span class="arithmatex">\\(a&lt;b\\)</span>，则 <a class="claim" href="#x">✔ C01</a>。</p>'
            '<div class="arithmatex">\\[\\frac{1}{2}\\]</div>')
    notebook = ('<div class="jupyter-wrapper"><p>若 $x_1$，则 $$y=2$$</p>'
                '<pre>cost = $5 and $6</pre><code>$z$</code></div>')
    renderer = Renderer()
    try:
        out, n = render_page(page, renderer)
        nb_out, nb_n = render_page(notebook, renderer, notebook=True)
    finally:
        renderer.close()
    assert n == 3 and out.count('<span class="katex">') == 3 and out.count('class="katex-mathml"') == 3
    assert "\\(" not in out and "\\[" not in out and "&lt;" not in out.split('class="katex-mathml"')[0]
    assert 'class="katex-display"' in out
    # the formula's last part and "，" share a no-wrap span; so do the badge and "。"
    assert '<span class="cjk-punct">，</span></span>' in out
    assert '<span class="cjk-nobr"><a class="claim" href="#x">✔ C01</a>。</span>' in out
    assert nb_n == 2 and 'class="katex-display"' in nb_out and "<pre>cost = $5 and $6</pre>" in nb_out
    assert "<code>$z$</code>" in nb_out and '<span class="cjk-punct">，</span>' in nb_out


def test_typeset_formulas_are_kept_between_builds_and_bad_ones_still_fail(tmp_path):
    """A second build takes a formula from the cache file without starting Node, with the same HTML;
    a formula KaTeX rejects is never cached, so it fails every build."""
    from sitebuild.hooks.mathrender import KatexError, Renderer, cache_file

    cache = tmp_path / "katex.json"
    first = Renderer(cache=cache)
    try:
        html = first.render([("\\sqrt{d_k}", False), ("x^2", True)])
    finally:
        first.close()
    second = Renderer(cache=cache)
    try:
        assert second.render([("x^2", True), ("\\sqrt{d_k}", False)]) == html[::-1]
        assert second.proc is None, "every formula was cached: Node must not start"
        with pytest.raises(KatexError):
            second.render([("\\frac{a}{b", False)])
        assert second.proc is not None
    finally:
        second.close()
    assert "\\frac{a}{b" not in cache.read_text(encoding="utf-8")
    assert cache_file().name.startswith("katex-0.") and cache_file().parent.name == "katex"
