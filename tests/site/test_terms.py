"""One word per concept: the glossary's 「用词统一」 table names the chosen word and the variants
no page may use, and every 「首次出现」 link in the glossary points at a page that uses the term.

Prose only: fenced and inline code, math, link targets, snippet includes, HTML comments,
block quotes and English quotations (ASCII-quoted spans without Chinese) keep their original
wording, and so does a gloss right after the chosen word, e.g. 「词元（token）」.
"""

from __future__ import annotations

import re
from functools import cache

import pytest

from tests.support.sections import DOCS

GLOSSARY = DOCS / "glossary.md"
SECTION = "## 用词统一"
CJK = re.compile(r"[\u3400-\u9fff]")


@cache
def choices() -> list[tuple[str, list[str]]]:
    """Rows of the 用词统一 table: (chosen, [rejected variants])."""
    text = GLOSSARY.read_text(encoding="utf-8")
    assert SECTION in text, f"docs/glossary.md has no {SECTION!r} section"
    body = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in body.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not line.startswith("|") or cells[0] in ("采用", "") or set(cells[0]) <= set("-: "):
            continue
        rows.append((cells[0], [v.strip() for v in cells[1].split("、") if v.strip()]))
    return rows


def prose(text: str, chosen_words: list[str]) -> str:
    """The page's prose, with everything that keeps its original wording removed."""
    text = re.sub(r"<!--.*?-->", " ", text, flags=re.S)
    text = re.sub(r"^([ \t]*)(```|~~~).*?^\1\2", " ", text, flags=re.S | re.M)  # fenced code
    text = re.sub(r"\$\$.*?\$\$", " ", text, flags=re.S)
    text = re.sub(r"\$[^$\n]+\$", " ", text)
    text = re.sub(r"`[^`\n]+`", " ", text)
    text = re.sub(r"^\s*--8<--.*$", " ", text, flags=re.M)
    text = re.sub(r"^\s*>.*$", " ", text, flags=re.M)  # block quotes: the paper's words
    text = re.sub(r"\]\([^)]*\)", "]", text)  # link targets
    text = re.sub(r"\"[^\"\n]*\"|“[^”\n]*”", lambda m: m[0] if CJK.search(m[0]) else " ", text)
    text = re.sub(r"\*[^*\n]+\*", lambda m: m[0] if CJK.search(m[0]) else " ", text)  # English titles
    text = re.sub(r"「[^」\n]*」", lambda m: m[0] if CJK.search(m[0][1:-1]) else " ", text)  # a quoted English name
    for word in chosen_words:  # a gloss right after the chosen word: 词元（token）
        text = re.sub(re.escape(word) + r"（[^）\n]*）", word, text)
    return text


def variant_pattern(variant: str) -> re.Pattern:
    if re.fullmatch(r"[\x00-\x7f]+", variant):  # an English word: whole words, plural too
        return re.compile(r"(?<![A-Za-z_-])" + re.escape(variant) + r"s?(?![A-Za-z_-])")  # not in token-free
    return re.compile(re.escape(variant))


def pages() -> list[str]:
    """Every page source, and the generated tables pages include (`make figures` writes them before
    the suite runs); not the generated errata list, whose 原来写的 column quotes the old wording."""
    return sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")
                  if p.relative_to(DOCS).as_posix() != "generated/errata.md")


def test_the_glossary_lists_chosen_words_and_their_variants():
    rows = choices()
    assert len(rows) >= 6
    chosen = [c for c, _ in rows]
    assert len(set(chosen)) == len(chosen)
    for word, variants in rows:
        assert variants, f"{word}: no rejected variant listed"
        assert word not in variants


@pytest.mark.parametrize("page", pages())
def test_pages_use_only_the_chosen_word(page):
    text = (DOCS / page).read_text(encoding="utf-8")
    if page == "glossary.md":  # the 用词统一 table itself, and the English column of the others
        before, after = text.split(SECTION, 1)
        text = before + "\n## " + (after.split("\n## ", 1)[1] if "\n## " in after else "")
        text = re.sub(r"^(\|[^|\n]*)\|[^|\n]*", r"\1|", text, flags=re.M)
    body = prose(text, [c for c, _ in choices()])
    found = []
    for word, variants in choices():
        for variant in variants:
            for m in variant_pattern(variant).finditer(body):
                line = body[body.rfind("\n", 0, m.start()) + 1:body.find("\n", m.end())]
                found.append(f"{variant!r} (use {word!r}): …{line.strip()[:80]}…")
    assert not found, f"docs/{page} uses rejected variants:\n" + "\n".join(found)


def test_the_prose_filter_keeps_what_it_should():
    text = ('第 $t$ 个 token 与 `max_new_tokens`；词元（token）；"25000 source tokens"；\n'
            '> quoted Table 1\n```python\ntoken = 1\n```\n全局 tokens')
    body = prose(text, ["词元"])
    assert len(variant_pattern("token").findall(body)) == 2  # 「个 token」 and 「全局 tokens」
    assert "Table" not in body


GLOSSARY_LINK = re.compile(r"\[(第 \d\d 章[^\]]*)\]\((chapters/[^)#]+)(#[^)]*)?\)")


def test_first_use_links_point_at_a_page_that_uses_the_term():
    text = GLOSSARY.read_text(encoding="utf-8")
    checked = 0
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 4:
            continue
        m = GLOSSARY_LINK.search(cells[-1])
        if not m:
            continue
        target = DOCS / m[2]
        assert target.exists(), f"{cells[0]}: {m[2]} does not exist"
        page = target.read_text(encoding="utf-8")
        questions = target.with_name("questions.md")
        if questions.exists():
            page += questions.read_text(encoding="utf-8")
        names = [re.sub(r"（[^）]*）", "", n).strip() for n in re.split(r"[／/]", cells[0])]
        names += [w for n in names for w in n.split() if len(w) > 1]  # 「unigram 语言模型分词」: unigram
        english = [n.strip() for n in re.split(r"[,，/]", cells[1])]
        assert any(n.lower() in page.lower() for n in names + english if n), f"{cells[0]}: {m[2]} never mentions it"
        checked += 1
    assert checked >= 100


def test_each_term_has_one_row():
    """The glossary is the one source for a term: a term in two rows gets two definitions and two
    「首次出现」 (独热向量 once did)."""
    lines = GLOSSARY.read_text(encoding="utf-8").splitlines()
    rows = [cells[0] for line, after in zip(lines, lines[1:] + [""])
            if line.startswith("|") and not after.startswith("|---")  # a table's header row
            and len(cells := [c.strip() for c in line.strip("|").split("|")]) >= 4
            and cells[0] and not set(cells[0]) <= set("-: ")]
    twice = sorted({t for t in rows if rows.count(t) > 1})
    assert len(rows) >= 100 and not twice, twice


# One quote style in reader prose (review finding 34): Chinese corner quotes 「」, for Chinese
# and English phrases alike. ASCII or curly double quotes stay only where they are syntax or
# verbatim: code, math, HTML (a widget's data script too), attribute lists, link targets,
# admonition titles, block quotes.
QUOTE_SYNTAX = re.compile(
    r"<!--.*?-->|<script\b.*?</script>|\$\$.*?\$\$|\$[^$\n]+\$|`[^`\n]+`|\]\([^)\n]*\)|\{[^}\n]*\}|<[^>\n]*>"
    r"|^[ \t]*(?:!!!|\?\?\?\+?)[ \t]+[\w-]+(?:[ \t]+\"[^\"\n]*\")?|^[ \t]*>[^\n]*$|^[ \t]*--8<--[^\n]*$",
    re.S | re.M,
)
PROSE_QUOTE = re.compile(r"\"[^\"\n]+\"|“[^”\n]+”")


def quoted_in_prose(text: str) -> list[str]:
    """Phrases that reader prose puts in ASCII or curly double quotes."""
    text = re.sub(r"^([ \t]*)(`{3,}|~{3,}).*?^\1\2", " ", text, flags=re.S | re.M)  # fenced code
    return PROSE_QUOTE.findall(QUOTE_SYNTAX.sub(" ", text))


def test_quoted_in_prose_sees_only_prose():
    text = '\n'.join([
        '他说"缓解"，又说“解决”。',
        '!!! note "标题里的引号是语法"', '    `print("x")` 与 $\\text{"a"}$ 不算。',
        '> "The paper\'s own words"', '[链接](a.md "title"){ title="x" }',
        '```python', 's = "code"', '```',
        '--8<-- "docs/x.md"', '<script type="application/json">{"a":{"b":1},"c":2}</script>', '之后的"正文"也要查。',
    ])
    assert quoted_in_prose(text) == ['"缓解"', "“解决”", '"正文"']


@pytest.mark.parametrize("page", pages())
def test_prose_quotes_with_corner_brackets(page):
    quoted = quoted_in_prose((DOCS / page).read_text(encoding="utf-8"))
    assert quoted == [], f"{page}: write 「…」, not {quoted[:8]}"


# Chinese typesetting writes a percentage without a space (99%, not 99 %): issue "Phone-fast".
SPACED_PERCENT = re.compile(r"\d[ \u00a0\u2009]%")


def spaced_percent_in_prose(text: str) -> list[str]:
    text = re.sub(r"^([ \t]*)(`{3,}|~{3,}).*?^\1\2", " ", text, flags=re.S | re.M)  # fenced code
    return SPACED_PERCENT.findall(QUOTE_SYNTAX.sub(" ", text))


def test_spaced_percent_sees_only_prose():
    assert spaced_percent_in_prose("准确率 99 %，`x = 5 % 3` 与 $7 \\% $ 不算。") == ["9 %"]


@pytest.mark.parametrize("page", [*pages(), "errata.yml"])
def test_percentages_without_a_space(page):
    spaced = spaced_percent_in_prose((DOCS / page).read_text(encoding="utf-8"))
    assert spaced == [], f"{page}: write 99%, not {spaced[:5]}"
