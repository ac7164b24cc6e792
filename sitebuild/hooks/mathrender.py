"""MkDocs hook (``hooks:`` in mkdocs.yml and mkdocs-offline.yml): math is typeset at build time.

Every formula a page holds is rendered to KaTeX's HTML + MathML while the site builds, so a
reader sees typeset math with the first paint and the pages load no math JavaScript at all:

* arithmatex's ``<span class="arithmatex">\\(…\\)</span>`` / ``<div class="arithmatex">\\[…\\]</div>``
  (every Markdown page);
* the TeX that Material copies from a heading into the nav/TOC labels (``\\(…\\)``);
* the notebook pages (mkdocs-jupyter keeps ``$…$`` / ``$$…$$`` in the Markdown cells): their
  text outside ``pre``/``code``/``script``/``style``, split as KaTeX's auto-render would.

Rendering runs in ``on_post_page``, after the search plugin has read the page, so KaTeX's
glyph text and MathML stay out of the search index. One long-lived Node process per build
(:data:`SCRIPT`, the site's own ``node_modules/katex``, so the HTML cannot drift from the
served CSS and fonts) answers one JSON line per page. Typeset formulas are kept between builds
in :data:`CACHE_DIR`, one file per KaTeX version and script (:func:`cache_file`): a build
starts Node only for formulas no earlier build typeset. A formula KaTeX rejects fails the build,
naming the page and the formula; a Node process that stops answering fails it after
:data:`TIMEOUT_S` seconds.
"""

from __future__ import annotations

import atexit
import hashlib
import html
import json
import os
import queue
import re
import shutil
import subprocess
import threading
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.utils import get_relative_url

from sitebuild.hooks.contentblocks import first_screen

ROOT = Path(__file__).resolve().parents[2]
KATEX = ROOT / "node_modules" / "katex"
SCRIPT = Path(__file__).resolve().parent / "katex_render.mjs"
TIMEOUT_S = 60.0
CACHE_DIR = ROOT / ".cache" / "katex"  # .cache/ is git-ignored
# KaTeX's fonts are font-display: block. A page preloads the two every page needs first and every
# other font that the formulas of its first screen use (fonts_used of contentblocks.first_screen):
# a font that arrives after the first paint makes the browser lay out again what it has drawn.
# A font used only further down is not preloaded: those blocks are content-visibility: auto, laid
# out when the reader nears them, and a preload would take the slow network from the first
# screen's stylesheets and fonts (the A/B measurement: tools/history.md, 2026-12-03).
PRELOAD_FONTS = ("KaTeX_Main-Regular.woff2", "KaTeX_Math-Italic.woff2")
# The classes of KaTeX's HTML that select another of its fonts (katex.min.css's font-family rules).
FONT_OF_CLASS = {
    "mathnormal": "Math-Italic", "mathit": "Main-Italic", "textit": "Main-Italic",
    "mathbf": "Main-Bold", "textbf": "Main-Bold", "boldsymbol": "Math-BoldItalic",
    "amsrm": "AMS-Regular", "mathbb": "AMS-Regular", "textbb": "AMS-Regular",
    "mathcal": "Caligraphic-Regular", "mathfrak": "Fraktur-Regular", "textfrak": "Fraktur-Regular",
    "mathboldfrak": "Fraktur-Bold", "textboldfrak": "Fraktur-Bold",
    "mathtt": "Typewriter-Regular", "texttt": "Typewriter-Regular",
    "mathscr": "Script-Regular", "textscr": "Script-Regular",
    "mathsf": "SansSerif-Regular", "textsf": "SansSerif-Regular",
    "mathboldsf": "SansSerif-Bold", "textboldsf": "SansSerif-Bold",
    "mathitsf": "SansSerif-Italic", "mathsfit": "SansSerif-Italic", "textitsf": "SansSerif-Italic",
    "small-op": "Size1-Regular", "large-op": "Size2-Regular",
    "delim-size1": "Size1-Regular", "delim-size4": "Size4-Regular",
}
CLASSES = re.compile(r'class="([^"]*)"')

ARITHMATEX = re.compile(r'<(span|div) class="arithmatex">(.*?)</\1>', re.S)
INLINE = re.compile(r"\\\((.+?)\\\)", re.S)
DISPLAY = re.compile(r"\\\[(.+?)\\\]", re.S)
# A nav/TOC label (Material's md-ellipsis spans) with TeX copied from a heading.
LABEL = re.compile(r'(<span class="md-ellipsis">)(.*?)(</span>)', re.S)
# Chinese punctuation that must not start a line. After an inline formula or a claim badge
# (inline-blocks, after which Chrome always allows a break, word joiner or not) the formula or
# badge and the punctuation are kept together in a no-wrap span.
NO_LINE_START = "。，；：、）」！？"
PUNCT_RUN = re.compile(f"[{NO_LINE_START}]+")
CLAIM_PUNCT = re.compile(f'(<a [^>]*class="claim"[^>]*>(?:(?!</a>).)*</a>)([{NO_LINE_START}]+)', re.S)
NOBR = '<span class="cjk-nobr">'
# Notebook pages: text between tags; these elements' text is never math (as in auto-render).
TAG = re.compile(r"<!--.*?-->|<[^>]*>", re.S)
SKIP = {"pre", "code", "script", "style", "textarea", "noscript", "option"}
DOLLARS = re.compile(r"\$\$(.+?)\$\$|(?<![\\$])\$(?!\$)((?:\\\$|[^$])+?)\$", re.S)


class KatexError(Exception):
    """KaTeX rejected a formula: ``formula`` is its TeX, ``message`` KaTeX's words."""

    def __init__(self, formula: str, message: str):
        super().__init__(f"{message}\n  formula: {formula}")
        self.formula, self.message = formula, message


def cache_file() -> Path:
    """Where typeset formulas are kept: one file per KaTeX version and render script (its options)."""
    version = json.loads((KATEX / "package.json").read_text(encoding="utf-8"))["version"]
    script = hashlib.sha256(SCRIPT.read_bytes()).hexdigest()[:12]
    return CACHE_DIR / f"katex-{version}-{script}.json"


def _read_cache(path: Path | None) -> dict[tuple[str, bool], str]:
    try:
        stored = json.loads(path.read_text(encoding="utf-8")) if path else {}
    except (OSError, ValueError):  # none yet, or unreadable: typeset again
        return {}
    return {(key[1:], key[0] == "D"): value for key, value in stored.items()}


class Renderer:
    """One Node process, started at the first formula not cached; :meth:`render` sends a batch of
    formulas and waits (with a timeout) for the HTML. With ``cache``, typeset formulas are read from
    and (on :meth:`close`) added to that file."""

    def __init__(self, timeout: float = TIMEOUT_S, cache: Path | None = None):
        self.node = shutil.which("node")
        if self.node is None:
            raise PluginError("mathrender: `node` is not on PATH (math is typeset at build time)")
        if not (KATEX / "package.json").is_file():
            raise PluginError(f"mathrender: no KaTeX at {KATEX}; run `make setup` (npm ci)")
        self.timeout = timeout
        self.proc: subprocess.Popen | None = None
        self.cache_path = cache
        self.cache = _read_cache(cache)
        self._stored = len(self.cache)
        self.count = 0
        self._id = 0

    def _start(self) -> None:
        self.proc = subprocess.Popen([self.node, str(SCRIPT), str(KATEX)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, encoding="utf-8", bufsize=1)
        self.lines: queue.Queue[str] = queue.Queue()
        self.stderr: list[str] = []
        threading.Thread(target=self._pump, args=(self.proc.stdout, self.lines.put), daemon=True).start()
        threading.Thread(target=self._pump, args=(self.proc.stderr, self.stderr.append), daemon=True).start()

    def exited(self) -> bool:
        """Node was started and has stopped (a new Renderer is needed)."""
        return self.proc is not None and self.proc.poll() is not None

    @staticmethod
    def _pump(stream, put):
        for line in stream:
            put(line)
        put("")  # end of stream

    def render(self, items: list[tuple[str, bool]]) -> list[str]:
        """``[(tex, display)]`` -> KaTeX HTML for each, in order (cached by TeX and mode)."""
        todo = sorted({item for item in items if item not in self.cache})
        if todo:
            if self.proc is None:
                self._start()
            self._id += 1
            request = {"id": self._id, "items": [{"tex": t, "display": d} for t, d in todo]}
            try:
                self.proc.stdin.write(json.dumps(request, ensure_ascii=False) + "\n")
                self.proc.stdin.flush()
            except OSError as exc:
                raise PluginError(f"mathrender: the KaTeX process is gone ({exc}): {''.join(self.stderr)}") from exc
            try:
                line = self.lines.get(timeout=self.timeout)
            except queue.Empty:
                self.close()
                raise PluginError(f"mathrender: no answer from KaTeX within {self.timeout:.0f} s") from None
            if not line:
                raise PluginError(f"mathrender: the KaTeX process exited: {''.join(self.stderr)}")
            answer = json.loads(line)
            if answer.get("id") != self._id:
                raise PluginError(f"mathrender: answer {answer.get('id')} to request {self._id}")
            if "error" in answer:
                err = answer["error"]
                raise KatexError(todo[err["index"]][0] if err["index"] >= 0 else "", err["message"])
            self.cache.update(zip(todo, answer["html"]))
        self.count += len(items)
        return [self.cache[item] for item in items]

    def close(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._save()

    def _save(self) -> None:
        """Add this build's new formulas to the cache file (merged: another build may have written it)."""
        if self.cache_path is None or len(self.cache) == self._stored:
            return
        merged = {**_read_cache(self.cache_path), **self.cache}
        data = {("D" if display else "I") + tex: value for (tex, display), value in sorted(merged.items())}
        self.cache_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.cache_path.with_name(f"{self.cache_path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, self.cache_path)  # readers see the old file or the new one, never half of one
        self._stored = len(self.cache)


# ---------------------------------------------------------------------------- the page


def _arithmatex(output: str) -> tuple[list[tuple[str, bool]], list[tuple[int, int, str, bool]]]:
    """arithmatex's spans/divs: the formulas and where they are (start, end, tag, display)."""
    items, spots = [], []
    for m in ARITHMATEX.finditer(output):
        tag, body = m.group(1), m.group(2).strip()
        math = (DISPLAY if tag == "div" else INLINE).fullmatch(body)
        if math is None:
            raise KatexError(body, f"arithmatex <{tag}> without its \\( \\) or \\[ \\] delimiters")
        items.append((html.unescape(math.group(1)).strip(), tag == "div"))
        spots.append((m.start(), m.end(), tag))
    return items, spots


def _text_segments(output: str, start: int, end: int):
    """(start, end) of each text run in ``output[start:end]`` outside SKIP elements."""
    depth, pos = 0, start
    for m in TAG.finditer(output, start, end):
        if depth == 0 and m.start() > pos:
            yield pos, m.start()
        pos = m.end()
        tag = re.match(r"<(/?)([a-zA-Z0-9]+)", m.group(0))
        if tag and tag.group(2).lower() in SKIP and not m.group(0).endswith("/>"):
            depth += -1 if tag.group(1) else 1
            depth = max(depth, 0)
    if depth == 0 and end > pos:
        yield pos, end


def render_page(output: str, renderer: Renderer, notebook: bool = False) -> tuple[str, int]:
    """The page's HTML with every formula typeset, and how many formulas there were."""
    edits: list[tuple[int, int, list[str | tuple[str, bool]]]] = []  # (start, end, pieces)
    items, spots = _arithmatex(output)
    for (start, end, tag), item in zip(spots, items):
        # auto-render's structure: the rendering in a <span> inside arithmatex's element
        punct = PUNCT_RUN.match(output, end) if tag == "span" else None
        if punct:  # the punctuation is glued to the formula's last part (see glue_punctuation)
            item = (item[0], item[1], punct.group(0))
            end = punct.end()
        edits.append((start, end, [f'<{tag} class="arithmatex"><span>', item, f"</span></{tag}>"]))
    for m in LABEL.finditer(output):
        pattern = DOLLARS if notebook else INLINE
        if not pattern.search(m.group(2)):
            continue
        pieces: list = [m.group(1)]
        pieces += _split(m.group(2), pattern)
        pieces.append(m.group(3))
        edits.append((m.start(), m.end(), pieces))
    if notebook:
        wrapper = output.find('<div class="jupyter-wrapper"')
        taken = [(s, e) for s, e, _ in edits]
        if wrapper >= 0:
            for s, e in _text_segments(output, wrapper, len(output)):
                if "$" in output[s:e] and not any(a <= s < b for a, b in taken):
                    edits.append((s, e, _split(output[s:e], DOLLARS)))
    edits.sort(key=lambda x: x[0])
    formulas = [p for _, _, pieces in edits for p in pieces if isinstance(p, tuple)]
    rendered = iter(renderer.render([f[:2] for f in formulas]))
    out, pos = [], 0
    for start, end, pieces in edits:
        out.append(output[pos:start])
        for p in pieces:
            if isinstance(p, tuple):
                out.append(glue_punctuation(next(rendered), p[2]) if len(p) > 2 else next(rendered))
            else:
                out.append(p)
        pos = end
    out.append(output[pos:])
    return CLAIM_PUNCT.sub(NOBR + r"\1\2</span>", "".join(out)), len(formulas)


def fonts_used(html: str) -> list[str]:
    """The woff2 files of KaTeX's fonts that the typeset formulas in ``html`` select, the two
    preloaded on every page first."""
    fonts = set()
    for attr in CLASSES.findall(html):
        classes = attr.split()
        fonts.update(FONT_OF_CLASS[c] for c in classes if c in FONT_OF_CLASS)
        if "delimsizing" in classes:  # .delimsizing.sizeN: a big delimiter
            fonts.update(f"Size{n}-Regular" for n in "1234" if f"size{n}" in classes)
    extra = sorted(f"KaTeX_{f}.woff2" for f in fonts)
    return list(PRELOAD_FONTS) + [f for f in extra if f not in PRELOAD_FONTS]


def glue_punctuation(katex_html: str, punct: str) -> str:
    """An inline formula followed by 。，；… : the punctuation joins the formula's last part.

    Chrome may break a line after any inline-block, and KaTeX's parts (``.base``) are
    inline-blocks, so ``$x$，`` could leave "，" at the start of the next line. The last part
    moves into a second ``katex-html`` (still aria-hidden) inside a no-wrap span, followed by
    the punctuation as ordinary text; the formula still breaks between its other parts.
    """
    tail = "</span></span>"  # closes katex-html and katex
    last = katex_html.rfind('<span class="base">')
    if last < 0 or not katex_html.endswith(tail):
        raise KatexError(katex_html[:80], "unexpected KaTeX HTML for an inline formula")
    return (katex_html[:last] + '</span><span class="cjk-nobr"><span class="katex-html" aria-hidden="true">'
            + katex_html[last:-len(tail)] + f'</span><span class="cjk-punct">{punct}</span></span></span>')


def _split(text: str, pattern: re.Pattern) -> list:
    """Text around formulas (kept as is) and ``(tex, display)`` for each formula."""
    pieces: list = []
    pos = 0
    for m in pattern.finditer(text):
        pieces.append(text[pos:m.start()])
        if pattern is DOLLARS:
            tex, display = (m.group(1), True) if m.group(1) is not None else (m.group(2), False)
        else:
            tex, display = m.group(1), False
        pos = m.end()
        punct = None if display else PUNCT_RUN.match(text, pos)
        if punct:  # as for arithmatex's inline spans
            pieces.append((html.unescape(tex).strip(), display, punct.group(0)))
            pos = punct.end()
        else:
            pieces.append((html.unescape(tex).strip(), display))
    pieces.append(text[pos:])
    return pieces


# ---------------------------------------------------------------------------- MkDocs events

_renderer: Renderer | None = None


def _get_renderer() -> Renderer:
    global _renderer
    if _renderer is None or _renderer.exited():
        _renderer = Renderer(cache=cache_file())
    return _renderer


def _close(**kwargs):
    global _renderer
    if _renderer is not None:
        _renderer.close()
        _renderer = None


atexit.register(_close)
on_post_build = _close
on_build_error = _close


def _offline(config) -> bool:
    return any(name.split("/")[-1] == "offline" for name in config["plugins"])


def on_post_page(output: str, page, config, **kwargs) -> str:
    notebook = page.file.src_uri.endswith(".ipynb")
    try:
        output, _count = render_page(output, _get_renderer(), notebook=notebook)
    except KatexError as exc:
        raise PluginError(f"mathrender: {page.file.src_uri}: KaTeX cannot typeset a formula: {exc}") from None
    # Over file:// a CORS font preload is refused with a console error: online only.
    if not _offline(config) and "</head>" in output:
        links = "".join(
            f'<link rel="preload" href="{get_relative_url("assets/katex/fonts/" + font, page.url)}" '
            'as="font" type="font/woff2" crossorigin>'
            for font in fonts_used(first_screen(output))
        )
        output = output.replace("</head>", links + "</head>", 1)
    return output
