"""MkDocs hook (``hooks:`` in mkdocs.yml and mkdocs-offline.yml): a search index of prose.

Material's search plugin indexes the HTML it is given; this hook shapes that input and output
so that results show prose, read without TeX and put the explaining section first:

* :func:`on_page_context` (before the search plugin reads the page) marks code blocks and
  notebook code cells/outputs with Material's own ``data-search-exclude`` and hands the plugin
  them empty (the plugin skips them anyway; their highlighting spans were most of its parsing
  time); :func:`on_post_page` puts them back, so the served page is unchanged. Test source,
  notebook code, "In [ ]:" prompts and "Copied!" labels never reach the index; claim titles
  and texts do.
* :func:`on_post_build` (after the plugin wrote ``search/search_index.json``, before the
  offline plugin copies it into ``search_index.js``) rewrites each entry: TeX
  (``\\(…\\)``, ``\\[…\\]``, notebook ``$…$``) becomes plain text (``\\sqrt{d_k}`` → ``√d_k``,
  ``O(n^2)`` → ``O(n²)``), notebook ``¶`` anchors leave the titles, and a section whose title
  names a term in :data:`SPELLINGS` is also indexed under the spellings readers type
  (``kv缓存``, ``sqrt dk``); every entry gets its length (``tokens``) and pages that restate a
  chapter a boost below 1 (:data:`SECTION_BOOST`, :data:`PAGE_BOOST`), the served search
  worker gets its fixes and the ranking of ``search_rank.js`` (:data:`WORKER_FIXES`), and
  Material's bundle links a result to its first entry, the best section (:data:`BUNDLE_FIXES`).

Material's worker alone ranks with no length normalisation, so a section's score grows with every
repeat of a term: dropping code is what lets prose outrank test source.
"""

from __future__ import annotations

import fnmatch
import html
import json
import re
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority

# Elements whose text is code, not prose: every <pre> (code blocks, test source, notebook
# source and outputs) and the notebook cells' chrome: "In [ ]:" prompts, the copy button's
# hidden source copy and its "Copied!" label. Only leaf elements (no nested element of the
# same tag): Material's parser compares elements by tag, so an excluded <div> holding a <div>
# would end its exclusion at the inner one's closing tag.
CODE_BLOCK = re.compile(
    r'<(pre|div class="(?:jp-InputPrompt|jp-OutputPrompt|clipboard-copy-txt)[^"]*"|span class="notice")(?=[\s>])')
EXCLUDE = ' data-search-exclude="code"'

# Spellings readers type for a term, indexed with each chapter heading that names the term
# (title weight, in a hidden span, so the result list still shows the heading as written):
# every spelling then finds the section the heading spelling finds. The worker matches query
# words as prefixes of index tokens and does not split "kv缓存" or "根号dk" (Latin and Han with
# no space between), so such spellings have to be tokens of their own.
SPELLINGS: dict[str, list[str]] = {
    "KV 缓存": ["kv缓存", "KV cache", "键值缓存"],
    "√d_k": ["sqrt dk", "根号dk", "根号 d_k"],
    "d_k": ["dk"],
    "√d_model": ["sqrt dmodel", "根号dmodel", "根号 d_model"],
    "d_model": ["dmodel"],
}
SPELLING_PAGES = ("chapters",)
# A term of two or three Latin words in a chapter heading (Pre-LN, KV cache, warm up, top-k) is
# also indexed joined, as readers type it (preln, kvcache, warmup, topk): the worker reads a
# query word as one token and would find neither half.
LATIN_TERM = re.compile(r"(?<![A-Za-z0-9])[A-Za-z][A-Za-z0-9]*(?:[- ][A-Za-z][A-Za-z0-9]*){1,2}(?![A-Za-z0-9])")
JOINED_MAX = 14

# A glossary term is indexed with the heading of the section that explains it (its [详解] link
# in docs/glossary.md, else its 「首次出现」 link when that names a section of a page other than a
# chapter's 导读 or question page): the section a reader wants for the term then outranks the 导读
# and reference pages that only name it. The words are the term's Chinese and English names as the
# glossary spells them (one-word names only, see glossary_homes), each one index token (not cut by
# jieba), so the query 分组查询注意力 meets the section whose heading says 「从 MHA 到 MQA 与 GQA」
# and a query for 注意力 alone does not.
GLOSSARY_ROW = re.compile(r"^\|([^|]+)\|([^|]+)\|[^|]*\|([^|]*)\|\s*$")
GLOSSARY_LINK = re.compile(r"\]\((chapters/[^)]+)\)")

# Pages that restate what a chapter explains rank below the chapter: each entry's ``boost`` is the
# factor the worker's ranking (search_rank.js) multiplies its score by (lunr reads it too, but its
# score is replaced). A claim's or an erratum's title names its term while a chapter explains the
# term in a section's text, and a notebook section's title names the term its chapter's section
# explains; the cheat sheet, the glossary and the guide restate every chapter in brief, a chapter's
# question page asks about what its other pages explain, and a chapter's code page runs it; chapter
# 01's 2026 overview sums up what chapters 07-13 explain. A page's own entry: a notebook's title
# ("亲手改参数，重跑关键实验") names no topic of its own, and the reference pages' chapter pages
# (verification/ch01/, interview/ch01/, sitebuild/refpages.py) are titled after the chapter they
# list. Keys are page paths as in docs/ without the extension, ``*`` any part of a path ("notebooks"
# covers notebooks/*; "" is the home page); where two keys name an entry's page, the later one holds
# (interview/ch01/ is under "interview/*"). Measured: tools/history.md, 2026-12-04 (search ranking,
# eighth and tenth passes).
RESTATING = {"cheatsheet": 0.5, "glossary": 0.5, "guide": 0.5, "": 0.5, "chapters/*/view-2026": 0.7,
             "chapters/*/interview": 0.5, "chapters/*/code": 0.8,
             # a 代码与实验 page's parts that have a page of their own (chapter 12's experiments, the exercises
             # of chapters 01 and 12) keep the weight they had on it
             "chapters/*/experiments": 0.8, "chapters/*/exercises": 0.8}
SECTION_BOOST = {**RESTATING, "verification": 0.13, "errata": 0.13, "notebooks": 0.13}
PAGE_BOOST = {**RESTATING, "interview": 0.5, "notebooks": 0.4, "verification/*": 0.13, "interview/*": 0.06}
# The question bank includes every chapter's questions.md, which the chapter includes too:
# its sections are indexed once, in the chapter; the bank keeps its own page entry.
INCLUDED_ELSEWHERE = ("interview",)
# A chapter's 导读 page lists what the chapter answers (核心困惑), what it needs (前置知识, 需要的结论)
# and its notation (记号): together they name every term a later section explains, so they came
# before that section for the term's queries. They stay out of the index, and the 导读 page's own
# entry keeps its title only (the chapter is still found by what its title names); its 论文精读
# section, the paper read closely, stays.
LANDING_OVERVIEW = ("核心困惑", "前置知识", "记号", "需要的结论")


def _landing(location: str) -> bool:
    """The entry is on a chapter's 导读 page (chapters/NN-slug/, either URL style)."""
    return re.fullmatch(r"chapters/[^/#]+", _page_key(location.split("#")[0])) is not None


# An exercise notebook restates its chapter's 「动手练习」 section (both are written from the registry,
# tools/exercises.py): the page's entries find the exercise; the notebook keeps only its own page entry.
RESTATED_NOTEBOOKS = re.compile(r"notebooks/ch\d\d-exercises/#")


def _indexed(entry: dict) -> bool:
    location = entry["location"]
    if "#" in location and _under(location, INCLUDED_ELSEWHERE):
        return False
    if RESTATED_NOTEBOOKS.match(location):
        return False
    return not (_landing(location) and location.partition("#")[2] in LANDING_OVERVIEW)

GREEK = {
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε", "varepsilon": "ε",
    "zeta": "ζ", "eta": "η", "theta": "θ", "vartheta": "θ", "iota": "ι", "kappa": "κ",
    "lambda": "λ", "mu": "μ", "nu": "ν", "xi": "ξ", "pi": "π", "rho": "ρ", "sigma": "σ",
    "tau": "τ", "upsilon": "υ", "phi": "φ", "varphi": "φ", "chi": "χ", "psi": "ψ", "omega": "ω",
    "Gamma": "Γ", "Delta": "Δ", "Theta": "Θ", "Lambda": "Λ", "Xi": "Ξ", "Pi": "Π", "Sigma": "Σ",
    "Phi": "Φ", "Psi": "Ψ", "Omega": "Ω",
}
SYMBOLS = {
    **GREEK,
    "cdot": "·", "times": "×", "div": "÷", "pm": "±", "le": "≤", "leq": "≤", "ge": "≥",
    "geq": "≥", "ne": "≠", "neq": "≠", "approx": "≈", "sim": "~", "simeq": "≃", "equiv": "≡",
    "propto": "∝", "ll": "≪", "gg": "≫", "in": "∈", "notin": "∉", "subset": "⊂",
    "subseteq": "⊆", "cup": "∪", "cap": "∩", "to": "→", "rightarrow": "→", "leftarrow": "←",
    "Rightarrow": "⇒", "Longrightarrow": "⇒", "perp": "⊥", "bigcup": "∪", "bmod": "mod",
    "blacksquare": "∎", "Leftarrow": "⇐", "iff": "⇔", "implies": "⇒", "mapsto": "↦",
    "longrightarrow": "→", "infty": "∞", "sum": "Σ", "prod": "Π", "int": "∫", "partial": "∂",
    "nabla": "∇", "odot": "⊙", "otimes": "⊗", "oplus": "⊕", "circ": "∘", "ast": "*",
    "star": "⋆", "ell": "ℓ", "dots": "…", "ldots": "…", "cdots": "⋯", "vdots": "⋮",
    "ddots": "⋱", "mid": "|", "vert": "|", "lvert": "|", "rvert": "|", "Vert": "‖",
    "lVert": "‖", "rVert": "‖", "|": "‖", "langle": "⟨", "rangle": "⟩", "lfloor": "⌊",
    "rfloor": "⌋", "lceil": "⌈", "rceil": "⌉", "forall": "∀", "exists": "∃", "neg": "¬",
    "land": "∧", "lor": "∨", "emptyset": "∅", "top": "ᵀ", "prime": "′", "%": "%", "$": "$",
    "{": "{", "}": "}", "_": "_", "#": "#", "&": "&", "quad": " ", "qquad": " ", ",": " ",
    ";": " ", ":": " ", ">": " ", " ": " ", "!": "", "\\": "; ", "cr": "; ", "newline": "; ",
}
# Commands that only style or size what follows.
IGNORED = {
    "left", "right", "big", "Big", "bigg", "Bigg", "bigl", "bigr", "Bigl", "Bigr", "biggl",
    "biggr", "Biggl", "Biggr", "middle", "displaystyle", "textstyle", "scriptstyle", "limits",
    "nolimits", "nonumber", "notag", "hline", "tag",
}
# Commands whose argument is shown as is.
TEXT_ARG = {
    "text", "textrm", "textbf", "textit", "texttt", "mathrm", "mathbf", "mathit", "mathsf",
    "mathtt", "mathcal", "mathscr", "mathfrak", "operatorname", "boldsymbol", "bm", "hat",
    "widehat", "tilde", "widetilde", "bar", "overline", "underline", "vec", "dot", "ddot",
    "mbox", "hbox", "underbrace", "overbrace", "color", "boxed", "emph",
}
BLACKBOARD = {"R": "ℝ", "N": "ℕ", "Z": "ℤ", "Q": "ℚ", "C": "ℂ", "E": "𝔼"}
BIG_OPERATORS = ("Σ", "Π", "∫")
SUPERSCRIPT = str.maketrans("0123456789+-=()nTi", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁿᵀⁱ")
SUPERSCRIPTABLE = set("0123456789+-=()nTi")
COMMAND = re.compile(r"\\([A-Za-z]+|.)")


class _TeX:
    """A small reader of TeX math that writes the plain text a reader would type."""

    def __init__(self, source: str):
        self.s, self.i = source, 0

    def read(self, until: str | None = None) -> str:
        out: list[str] = []
        limits = False  # the last thing read was a big operator (or its lower limit)
        while self.i < len(self.s):
            c = self.s[self.i]
            if until and c == until:
                self.i += 1
                break
            if c == "{":
                self.i += 1
                out.append(self.read("}"))
            elif c == "}":  # unbalanced; skip
                self.i += 1
            elif c in "^_":
                self.i += 1
                arg = self.argument()
                if limits:  # Σ/Π/∫ limits (\prod_{i=1}^{T}) are not exponents
                    arg = arg.strip()
                    out.append(f"{c}{arg if len(arg) == 1 else f'({arg})'}" + (" " if c == "^" else ""))
                else:
                    out.append(_script(c, arg))
                limits = limits and c == "_"
                continue
            elif c == "\\":
                out.append(self.command())
                limits = out[-1] in BIG_OPERATORS
                continue
            elif c == "&":
                self.i += 1
                out.append(" ")
            elif c == "~":
                self.i += 1
                out.append(" ")
            elif c == "'":
                self.i += 1
                out.append("′")
            else:
                self.i += 1
                out.append(c)
            limits = False
        return "".join(out)

    def argument(self) -> str:
        """One argument: a braced group, a command, or a single character."""
        while self.i < len(self.s) and self.s[self.i] == " ":
            self.i += 1
        if self.i >= len(self.s):
            return ""
        c = self.s[self.i]
        if c == "{":
            self.i += 1
            return self.read("}")
        if c == "\\":
            return self.command()
        self.i += 1
        return c

    def optional(self) -> str | None:
        if self.i < len(self.s) and self.s[self.i] == "[":
            end = self.s.find("]", self.i)
            if end > 0:
                inner, self.i = self.s[self.i + 1:end], end + 1
                return _TeX(inner).read()
        return None

    def command(self) -> str:
        m = COMMAND.match(self.s, self.i)
        if not m:
            self.i += 1
            return ""
        self.i = m.end()
        name = m.group(1)
        if name in ("frac", "dfrac", "tfrac", "cfrac"):
            top, bottom = self.argument(), self.argument()
            return f"{_group(top)}/{_group(bottom)}"
        if name == "binom":
            top, bottom = self.argument(), self.argument()
            return f"C({top}, {bottom})"
        if name == "sqrt":
            degree = self.optional()
            root = _group(self.argument())
            return f"{degree or ''}√{root}"
        if name in ("begin", "end"):
            self.argument()
            if name == "begin" and self.i < len(self.s) and self.s[self.i] == "{":
                self.argument()  # array column spec
            return " "
        if name == "xrightarrow":  # an arrow labelled above: h_1 →(W_hh) h_2
            return f"→{_group(self.argument())} "
        if name == "mathbb":
            arg = self.argument()
            return BLACKBOARD.get(arg, arg)
        if name in TEXT_ARG:
            return self.argument()
        if name in IGNORED:
            return ""
        if name in SYMBOLS:
            return SYMBOLS[name]
        return name  # \max, \log, \softmax, \tanh, \mathcal… as their words


def _group(text: str) -> str:
    """Parenthesise a fraction's or root's operand unless it is one token."""
    text = text.strip()
    if re.fullmatch(r"√?(?:[\w.′ᵀ\u200b]+|[\w.]+_[\w.]+|\(.*\))", text):
        return text
    return f"({text})"


def _script(kind: str, arg: str) -> str:
    arg = arg.strip()
    if kind == "^":
        if arg and set(arg) <= SUPERSCRIPTABLE:
            return arg.translate(SUPERSCRIPT)
        if arg in ("ᵀ", "′", "*", "†"):
            return arg
        return f"^{arg}" if re.fullmatch(r"\w", arg) else f"^({arg})"
    return f"_{arg}" if re.fullmatch(r"[\w.,]+", arg) else f"_({arg})"


def tex_to_text(tex: str) -> str:
    """Plain text for a formula: ``\\frac{QK^\\top}{\\sqrt{d_k}}`` → ``QKᵀ/√d_k``."""
    text = _TeX(tex).read()
    return re.sub(r"[ \t\n]+", " ", text).strip()


# Math as the search plugin sees it: arithmatex's \(…\) / \[…\], notebook $…$ / $$…$$.
MATH = re.compile(r"\\\((.+?)\\\)|\\\[(.+?)\\\]|\$\$(.+?)\$\$|(?<![\\$\w])\$(?!\$)((?:\\\$|[^$])+?)\$", re.S)


def plain_math(markup: str) -> str:
    """Replace every formula in an index field (HTML-escaped text) by its plain text."""

    def replace(m: re.Match) -> str:
        tex = html.unescape(next(g for g in m.groups() if g is not None))
        return html.escape(tex_to_text(tex), quote=False)

    return MATH.sub(replace, markup)


def _plain(markup: str) -> str:
    return re.sub(r"<[^>]+>|\u200b", "", html.unescape(markup))


# jieba's zero-width spaces next to another separator (or a tag, where the worker's tokenizer
# splits anyway) change no token; dropping them saves 3 bytes each.
REDUNDANT_ZWSP = re.compile(r"\u200b+(?=[\s、。，．？！；√<]|$)|(?<=[\s、。，．？！；√>])\u200b+|^\u200b+")


def _under(location: str, pages) -> bool:
    """The entry belongs to one of the pages (or folders), whichever URL style the site uses
    (``verification/#x`` served, ``verification.html#x`` in the offline edition); ``*`` stands for
    any part of a path (``verification/*``: the pages in the folder, not the page of the same
    name); ``""`` is the home page alone."""
    path = re.sub(r"(?:/?index)?\.html$|/$", "", location.split("#")[0])
    return any(fnmatch.fnmatchcase(path, page) if "*" in page
               else (path == page or (page != "" and path.startswith(page + "/")))
               for page in pages)


def _page_key(location: str) -> str:
    """'chapters/04-multi-head/derivation-cost#gqa' for a glossary link (…/derivation-cost.md#gqa)
    and for an index location of either URL style (…/derivation-cost/#gqa, ….html#gqa)."""
    page, _, anchor = location.partition("#")
    page = re.sub(r"(?:/?index)?\.(?:md|html)$|/$", "", page)
    return f"{page}#{anchor}" if anchor else page


def glossary_homes(glossary: str) -> dict[str, list[str]]:
    """Index location key (:func:`_page_key`) → the names of the glossary terms it explains."""
    homes: dict[str, list[str]] = {}
    for line in glossary.splitlines():
        m = GLOSSARY_ROW.match(line.strip())
        if not m:
            continue
        links = GLOSSARY_LINK.findall(m[3])
        if "详解" in m[3]:
            home = GLOSSARY_LINK.findall(m[3].split("详解", 1)[1])[0]
        elif links and "#" in links[0] and not re.search(r"/(?:index|interview)\.md#", links[0]):
            home = links[0]
        else:
            continue
        chinese = [re.sub(r"（[^）]*）", "", n).strip() for n in re.split(r"[／/]", m[1])]
        english = [n.strip() for n in re.split(r"[,，/]", m[2])]
        # Only names of one word: a name of several (在线 softmax, attention sink) would give its
        # section a heading word for every query of one of them (softmax, attention), and joined
        # into one token it would still meet every query for its first word (the worker matches
        # query words as prefixes). A one-character name (头, 键, 熵) would meet every query that
        # segments to that character.
        names = [html.unescape(plain_math(html.escape(n, quote=False))) for n in dict.fromkeys(chinese + english)]
        names = [n for n in names if len(n) > 1 and not re.search(r"\s", n)]
        if names:
            known = homes.setdefault(_page_key(home), [])
            known += [n for n in names if n not in known]
    return homes


def joined_terms(title: str) -> list[str]:
    """'pre ln 与 kv cache' -> ['preln', 'kvcache']: each Latin term of the plain title, joined."""
    joined = (re.sub(r"[- ]", "", m.group(0)).lower() for m in LATIN_TERM.finditer(title))
    return [j for j in joined if len(j) <= JOINED_MAX]


def _names(title: str, term: str) -> bool:
    """The plain title contains the term, not as part of a longer Latin word (d_k, not d_kv)."""
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(term.lower())}(?![A-Za-z0-9_])", title) is not None


# An erratum's section keeps only its corrected statement (the row 现在写的 of its table, up to the
# row 为什么): the old wording, the reasons and the sources restate chapters, and an errata page that
# grows with every correction would otherwise be the largest page of the index.
ERRATUM_NOW = re.compile("现在\u200b?写\u200b?的 (.*?) 为什么 ", re.S)


def erratum_text(text: str) -> str:
    m = ERRATUM_NOW.search(text)
    return m.group(1) if m else text


CLAIM_RUN_AND_PAGES = re.compile("最近\u200b?一次\u200b?运行.*?(?=测试\u200b?：)", re.S)
# A toy comparison's numbers (snippets.stats.describe: 平均差, interval, seeds that agree) are read on the
# page, not searched for; its verdict word stays in the index.
# An exercise (「动手练习」, tools/exercises.py) is found by its name and statement; what the checker
# checks, the hints and the shapes are for the reader who opened it.
EXERCISE_KEPT = re.compile(r"^\s*<p>.*?</p>|<li>[^<]*签\u200b?名.*?</li>", re.S)
VERDICT_NUMBERS = re.compile("平均差[^）<]*?：\u200b*(?=一致|多数|不足\u200b?以下\u200b?结论)")


def clean_entry(entry: dict, homes: dict[str, list[str]] | None = None) -> dict:
    """One index entry as readers should meet it: plain math, no ¶, boosted, with spellings and
    the names of the glossary terms it explains (``homes``, :func:`glossary_homes`)."""
    title = plain_math(entry["title"]).replace("¶", "").strip()
    text = plain_math(entry["text"])
    text = re.sub(r"<(pre|code)>\s*</\1>", "", text)
    text = re.sub(r"[ \t\n]{2,}", " ", text).strip()
    text = VERDICT_NUMBERS.sub("", text)
    entry = {**entry, "title": REDUNDANT_ZWSP.sub("", title), "text": REDUNDANT_ZWSP.sub("", text)}
    location = entry["location"]
    if "#" not in location and _landing(location):
        entry["text"] = ""
    if "#ex-" in location:
        entry["text"] = " ".join(m.group(0).strip() for m in EXERCISE_KEPT.finditer(entry["text"]))
    if location.endswith("#exercises"):
        entry["text"] = ""  # the same introduction in every chapter: the section is found by its title
    if "#" in location and _under(location, ["errata"]):
        entry["text"] = erratum_text(entry["text"])
    if "#" in location and _under(location, ["verification/*"]):
        # a claim is found by what it says and where the paper says it; its last run and the
        # list of pages citing it are for the reader who opened it
        entry["text"] = CLAIM_RUN_AND_PAGES.sub("", entry["text"])
    if "#" not in location and _under(location, ["verification/*"]):
        # a chapter's claim list restates the titles its claims' own entries carry: the
        # paragraphs stay, the table (its cells are no <p>) goes
        entry["text"] = " ".join(re.findall(r"<p>.*?</p>", entry["text"], re.S))
    for page, boost in (SECTION_BOOST if "#" in location else PAGE_BOOST).items():
        if _under(location, [page]):
            entry["boost"] = boost
    if _under(location, SPELLING_PAGES) and "<span hidden>" not in entry["title"]:
        plain_title = _plain(title).lower()
        words = [s for term, spelled in SPELLINGS.items() if _names(plain_title, term) for s in spelled]
        words += (homes or {}).get(_page_key(location), [])
        words += joined_terms(" ".join([plain_title, *words]))
        if words:
            hidden = html.escape(" ".join(dict.fromkeys(words)), quote=False)
            entry["title"] += f"<span hidden> {hidden}</span>"
    return entry


def add_lengths(entries: list[dict], separator: re.Pattern) -> None:
    """``tokens``: an entry's title and text length in index tokens, each over its mean across the
    index, two decimals (the ranking's length normalisation, search_rank.js)."""
    def tokens(markup: str) -> int:  # a tag ends a token, as in the worker's tokenizer
        return sum(1 for t in separator.split(html.unescape(re.sub(r"<[^>]+>", " ", markup))) if t)

    counts = [[tokens(entry["title"]), tokens(entry["text"])] for entry in entries]
    means = [max(1.0, sum(c[i] for c in counts) / max(1, len(counts))) for i in (0, 1)]
    for entry, (title, text) in zip(entries, counts):
        entry["tokens"] = [round(title / means[0], 2), round(text / means[1], 2)]


# An excluded element whole: its inside is no search input, so the plugin reads it emptied
# (highlighted code is mostly <span> tags, which its HTML parser would read one by one).
EXCLUDED_ELEMENT = re.compile(rf"(<([a-z]+)\b[^>]*{EXCLUDE}[^>]*>).*?(</\2>)", re.S)
# What the search plugin removes from the page it read (Material: data-search-exclude etc.).
SEARCH_ATTRIBUTE = re.compile(r"\s?data-search-\w+=\"[^\"]+\"")

# page source path -> (the HTML the page's template got, the HTML the page is served with)
_emptied: dict[str, tuple[str, str]] = {}


@event_priority(50)  # before the search plugin (priority 0) reads the page
def on_page_context(context, page, config, nav, **kwargs):
    marked = CODE_BLOCK.sub(lambda m: f"<{m.group(1)}{EXCLUDE}", page.content)
    emptied = EXCLUDED_ELEMENT.sub(r"\1\3", marked)
    if emptied != marked:  # the search plugin strips the attributes from what it read
        _emptied[page.file.src_uri] = (SEARCH_ATTRIBUTE.sub("", emptied), SEARCH_ATTRIBUTE.sub("", page.content))
    page.content = emptied
    return context


@event_priority(100)  # first of all: the page gets back the code the search plugin did not read
def on_post_page(output, page, config, **kwargs):
    shown, served = _emptied.pop(page.file.src_uri, (None, None))
    if shown is None:
        return output
    if output.count(shown) != 1:
        raise PluginError(f"searchindex: {page.file.src_uri}: the page's content is not in its HTML once")
    return output.replace(shown, served, 1)


# Four one-line changes to Material's search worker (9.x), applied to the copy the site serves:
# three fixes to how it reads a Chinese query and one that hands the ranking its input. The build fails if a
# changed line is not found exactly once, so an upgrade of Material that changes or fixes it is
# noticed.
# 1. integrations/search/query/segment cuts a run of Han characters into tokens of the index, but
#    its loop never tries a token that ends the run (``for (j = i + 1; j < query.length; j++)``):
#    「字节对编码」 could only match 字节, 对 and 编, and a query's last word lost to its characters.
# 2. search() puts the segmented run back in place, glued to the Latin letters or digits around it:
#    「BPE算法」 and 「LayerNorm公式」 stayed one term that no index token starts with (no result).
#    It also joins the tokens with "* " before the query transform adds a "*" to every word, so each
#    token but the last kept a "*" in its word (「为什么*」), which no index token starts with: the
#    result listed it under 「缺少」 (missing) though the entry holds it, highlighted. Now the tokens
#    are apart and joined by spaces only.
# 3. lunr's TokenSet names a node by its edges as label + child id with nothing between, so a digit
#    label makes two different nodes look alike (labels 1, 2 to nodes 3, 4 and label 1 to node 324
#    are both "1324"); the builder then merges them, a wildcard expands to a token the index lacks,
#    and the query throws ("reading '_index'"): d_model and n < d found nothing once the chapter 04
#    and 06 notebooks were indexed. A comma after each id makes the name unambiguous.
# 4. The worker's results are ranked again before they leave it (RANKING, prepended to the worker:
#    lunr's score has no length normalisation and Material lists a page that names the query in its
#    title before the section that explains it). Each result carries, for the ranking, how often
#    each query word occurs in its title and its text, from lunr's match data.
WORKER_FIXES = [
    (re.compile(r"for\(let (\w)=(\w)\+1;\1<(\w)\.length;\1\+\+\)\3\.slice\(\2,\1\)in "),
     lambda m: m.group(0).replace("<", "<=", 1)),
    # the segmenter walks a Han run from word to word and stopped at the first character the
    # index lacks (为啥不能并行训练 kept 为 alone) and before a last single character: it now
    # steps over such characters, from the start of the run to its end
    (re.compile(r"(\w)=new Uint16Array\((\w)\.length\);(.{0,120}?)let (\w)=\[0\];"),
     lambda m: f"{m[0]}for(;{m[4]}[0]<{m[2]}.length&&!{m[1]}[{m[4]}[0]];){m[4]}[0]++;"),
    (re.compile(r"let (\w)=(\w)\+(\w)\[\2\];\3\[\1\]&&\1<(\w)\.length-1&&\((\w)\[(\w)\+\+\]=\1\),(\w)\.add\(\4\.slice\(\2,\1\)\)"),
     lambda m: (f"let {m[1]}={m[2]}+{m[3]}[{m[2]}];{m[7]}.add({m[4]}.slice({m[2]},{m[1]}));"
                f"for(;{m[1]}<{m[4]}.length&&!{m[3]}[{m[1]}];){m[1]}++;{m[1]}<{m[4]}.length&&({m[5]}[{m[6]}++]={m[1]})")),
    (re.compile(r"(\w)=>\[\.\.\.(\w+)\(\1,this\.index\.invertedIndex\)\]\.join\(\"\* \"\)"),
     lambda m: f'{m.group(1)}=>" "+[...{m.group(2)}({m.group(1)},this.index.invertedIndex)].join(" ")+" "'),
    (re.compile(r"(TokenSet\.prototype\.toString=function\(\)\{.{0,200}?(\w)=\2\+(\w)\+(\w)\.id)(\}return \2\})"),
     lambda m: m.group(1) + '+","' + m.group(5)),
    (re.compile(r"let (\w)=\w+\(\w\)\.filter\(\w=>\w\.presence!==lunr\.Query\.presence\.PROHIBITED\)"
                r"(.{0,80}?matchData:(\w)\}.{0,900}?)terms:(\w)\}", re.S),
     lambda m: f"{m.group(0)[:-1]},counts:self.__searchTermCounts({m.group(1)},{m.group(3)}.metadata)}}"),
]


RANKING = Path(__file__).with_name("search_rank.js")

# Material's result list (main bundle) links a result group to the page's own entry wherever it sits
# in the group and lists the sections after it. The ranking (search_rank.js) puts the best section
# first: with this fix the group's first entry is its link, so a result opens at the section that
# explains.
BUNDLE_FIXES = [
    (re.compile(r"(\w)=(\w)\.findIndex\((\w)=>!`\$\{new URL\(\3\.location,\w\.base\)\}`\.includes\(\"#\"\)\)"),
     lambda m: f"{m.group(1)}=0"),
]


def _patch(path: Path, fixes: list) -> str:
    code = path.read_text(encoding="utf-8")
    for pattern, fix in fixes:
        code, found = pattern.subn(fix, code)
        if found != 1:
            raise PluginError(f"searchindex: {pattern.pattern!r} was found {found} times in {path.name} "
                              "(Material changed: check whether the fix is still needed)")
    return code


def _one(folder: Path, pattern: str) -> Path:
    found = sorted(folder.glob(pattern))
    if len(found) != 1:
        raise PluginError(f"searchindex: expected one {pattern} in {folder}, found {found}")
    return found[0]


def patch_worker(site_dir: Path) -> None:
    """The served search worker with :data:`WORKER_FIXES` applied and :data:`RANKING` before it, and
    the main bundle with :data:`BUNDLE_FIXES`."""
    scripts = site_dir / "assets" / "javascripts"
    worker = _one(scripts / "workers", "search.*.min.js")
    worker.write_text(RANKING.read_text(encoding="utf-8") + _patch(worker, WORKER_FIXES), encoding="utf-8")
    bundle = _one(scripts, "bundle.*.min.js")
    bundle.write_text(_patch(bundle, BUNDLE_FIXES), encoding="utf-8")


@event_priority(-50)  # after the search plugin writes the index, before offline (-100) copies it
def on_post_build(config, **kwargs):
    path = Path(config.site_dir) / "search" / "search_index.json"
    if not path.is_file():
        return
    patch_worker(Path(config.site_dir))
    index = json.loads(path.read_text(encoding="utf-8"))
    glossary = Path(config.docs_dir) / "glossary.md"
    homes = glossary_homes(glossary.read_text(encoding="utf-8")) if glossary.is_file() else {}
    index["docs"] = [clean_entry(entry, homes) for entry in index["docs"] if _indexed(entry)]
    add_lengths(index["docs"], re.compile(index["config"]["separator"]))
    path.write_text(json.dumps(index, ensure_ascii=False, separators=(",", ":")), encoding="utf-8")
