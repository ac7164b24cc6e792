"""The verification pages, for readers: an index of the chapters, then a page per chapter with a titled
entry per claim, links to the very badge that cites it, and the last recorded test run (or an honest
"no run recorded"); every badge lands on its claim, and so does every old link to ``verification/#id``.

The build-level checks read the one strict build (``built_site``); the rest are unit tests of
sitebuild/hooks/claimanchors.py and sitebuild/generate/claims.py on small inputs.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from urllib.parse import urljoin, urlparse

import pytest

from sitebuild.config import chapters
from sitebuild.generate import claims
from sitebuild.hooks import claimanchors

BADGE_TAG = re.compile(r'<a\b[^>]*\bclass="claim"[^>]*>')
ID = re.compile(r'\bid="([^"]+)"')
HREF = re.compile(r'\bhref="([^"]+)"')
MAP = re.compile(r"<script>\(function\(\)\{var m=\{\},t=(\{.*?\});for")
PAGES = [f"verification/{key}/" for key in chapters()]  # a page per chapter of the nav


def _html(site: Path, url_path: str) -> str:
    file = site / url_path.lstrip("/")
    if url_path.endswith("/") or not url_path:
        file = file / "index.html"
    return file.read_text(encoding="utf-8")


# --- badge ids --------------------------------------------------------------------------------


def test_badges_are_numbered_per_claim_in_page_order():
    text = ("a [✔ C03](../../verification.md#ch01-c03){ .claim } b [✔ C04](/verification.md#ch01-c04){ .claim }\n"
            "c [✔ C03](verification.md#ch01-c03){ .claim } d [not a badge](verification.md#ch01-c05)")
    out, badges = claimanchors.number_badges(text)
    assert [(b.claim, b.anchor, b.label) for b in badges] == [
        ("ch01-c03", "claim-ch01-c03-1", "C03"), ("ch01-c04", "claim-ch01-c04-1", "C04"),
        ("ch01-c03", "claim-ch01-c03-2", "C03")]
    assert out.count("{ .claim #claim-ch01-c03-") == 2 and "[not a badge](verification.md#ch01-c05)" in out
    # whatever the spelling, a badge points at its chapter's verification page, from docs/
    assert "[✔ C03](/verification/ch01.md#ch01-c03){ .claim #claim-ch01-c03-1 }" in out
    assert "[✔ C04](/verification/ch01.md#ch01-c04){ .claim #claim-ch01-c04-1 }" in out


def test_included_files_are_numbered_as_part_of_the_page(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "q.md").write_text("    [✔ C03](/verification.md#ch01-c03){ .claim }\n", encoding="utf-8")
    (docs / "page.md").write_text(
        '[✔ C03](verification.md#ch01-c03){ .claim }\n\n```md\n[✔ C03](verification.md#ch01-c03){ .claim }\n```\n\n'
        '??? question "Q"\n    --8<-- "docs/q.md"\n', encoding="utf-8")
    text, badges = claimanchors.page_badges("page.md", docs)
    assert [b.anchor for b in badges] == ["claim-ch01-c03-1", "claim-ch01-c03-2"]  # the code block is not a badge
    assert "        [✔ C03]" in text  # the include keeps its indentation


def test_every_badge_on_every_built_page_has_a_unique_id(built_site):
    pages = 0
    for file in built_site.rglob("*.html"):
        tags = BADGE_TAG.findall(file.read_text(encoding="utf-8"))
        if not tags:
            continue
        pages += 1
        ids = [m[1] for t in tags if (m := ID.search(t))]
        assert len(ids) == len(tags), f"{file}: a badge without an id"
        assert len(set(ids)) == len(ids), f"{file}: duplicate badge ids"
        assert all(re.fullmatch(r"claim-ch\d\d-[a-z0-9-]+-\d+", i) for i in ids), file
    assert pages >= 3


def test_where_links_land_on_the_badge(built_site):
    """Every "出现在" link of every verification page names a page and a badge id that exists there."""
    badges: dict[str, set[str]] = {}
    missing, links = [], 0
    for page in PAGES:
        hrefs = set(re.findall(r'href="([^"]*#claim-[^"]+)"', _html(built_site, page)))
        links += len(hrefs)
        for href in sorted(hrefs):
            url = urlparse(urljoin(f"http://x/{page}", href))
            if url.path not in badges:
                tags = BADGE_TAG.findall(_html(built_site, url.path))
                badges[url.path] = {m[1] for t in tags if (m := ID.search(t))}
            if url.fragment not in badges[url.path]:
                missing.append((page, href))
    assert links >= len(claims.collect_claims())
    assert missing == []


def test_every_badge_lands_on_its_claim(built_site):
    """A badge on any built page links to its chapter's verification page, at the claim's entry."""
    claim_ids = {c.id for c in claims.collect_claims()}
    entries = {page: set(ID.findall(_html(built_site, page))) & claim_ids for page in PAGES}
    wrong, seen = [], 0
    for file in built_site.rglob("*.html"):
        base = "http://x/" + file.relative_to(built_site).as_posix()
        for tag in BADGE_TAG.findall(file.read_text(encoding="utf-8")):
            seen += 1
            url = urlparse(urljoin(base, HREF.search(tag)[1]))
            page = url.path.removeprefix("/")
            if url.fragment not in entries.get(page, ()) or page != f"verification/{url.fragment[:4]}/":
                wrong.append((file.relative_to(built_site).as_posix(), tag))
    assert seen > len(claim_ids) and wrong == []
    # each chapter's page holds exactly its own claims
    assert {page: len(ids) for page, ids in entries.items()} == {
        page: sum(c.startswith(page.split("/")[1]) for c in claim_ids) for page in PAGES}


def test_old_links_to_a_claim_land_on_its_chapter_page(built_site):
    """``verification/#ch01-c03`` (the one page the list was) sends the reader on to ``verification/ch01/#ch01-c03``:
    the index page's <head> maps every id of the chapter pages that it lacks, each to the page that holds it."""
    index = _html(built_site, "verification/")
    m = MAP.search(index)
    assert m and m.start() < index.index("<link"), "no anchor map before the stylesheets"
    targets = json.loads(m[1])
    assert list(targets) == [page.removeprefix("verification/") for page in PAGES]
    own = set(ID.findall(index[index.index("<article"):]))
    for rel, ids in targets.items():
        assert set(ids) <= set(ID.findall(_html(built_site, "verification/" + rel))), rel
        assert not set(ids) & own, rel
    mapped = {i: rel for rel, ids in targets.items() for i in ids}
    assert {c.id: mapped.get(c.id) for c in claims.collect_claims()} == {
        c.id: c.id[:4] + "/" for c in claims.collect_claims()}
    # the old page's chapter headings are the index's own
    assert 'id="第-01-章-为什么是-attention"' in index


def test_the_index_links_every_chapter_page_with_its_count(built_site):
    index = _html(built_site, "verification/")
    found = claims.collect_claims()
    for key, (title, _) in chapters().items():
        n = sum(c.id.startswith(key) for c in found)
        assert re.search(rf'<a href="{key}/">本章的 {n} 个论断</a>', index), key
        assert title in index
    assert all(f'href="{c.id[:4]}/#{c.id}"' in index for c in found)


# --- the entries ------------------------------------------------------------------------------


def test_a_new_chapter_gets_its_pages_from_the_nav_alone(monkeypatch):
    """No file per chapter: a chapter in the nav gets its verification page (and its question bank page),
    listed after the index by nav_pages(), even before it has a claim."""
    from sitebuild import refpages

    titles = {**chapters(), "ch99": ("第 99 章 新的一章", "chapters/99-new/index.md")}
    monkeypatch.setattr(claims, "chapters", lambda: titles)
    pages = claims.render_pages(claims.collect_claims()[:3], {}, None)
    assert set(pages) == {claims.INDEX} | {f"verification-{key}.md" for key in titles}
    assert "本章尚无论断" in pages["verification-ch99.md"]
    assert "[本章的 0 个论断](/verification/ch99.md)" in pages[claims.INDEX]
    nav = refpages.with_chapter_pages([("验证清单", "verification.md"), ("面试题库", "interview.md")], titles)
    srcs = [src for _, src in nav]
    assert srcs.index("verification/ch99.md") < srcs.index("interview.md") < srcs.index("interview/ch99.md") == len(srcs) - 1
    assert ("验证清单 · 第 99 章 新的一章", "verification/ch99.md") in nav
    assert refpages.page_markdown(refpages.VERIFICATION, "ch99", "第 99 章 新的一章").endswith(
        '--8<-- "docs/generated/verification-ch99.md"\n')


def test_entry_has_a_human_title_an_id_label_and_its_test_source(built_site):
    html = _html(built_site, "verification/ch01/")
    entry = html[html.index('<h2 id="ch01-c03"') :]
    entry = entry[: entry.index("<h2", 10)]
    title = re.sub(r'<a class="headerlink".*?</a>|<[^>]+>', "", entry[: entry.index("</h2>")])
    assert title.endswith("C03 · tanh RNN：梯度消失的充分条件")
    assert '<span class="claim-id">ch01-c03</span>' in entry
    claim = entry[entry.index("<strong>论断</strong>") :].split("<br", 1)[0]
    assert "h<sub>T−k</sub>" in claim and "0.9<sup>k</sup>" in claim and "_" not in claim  # formulas typeset
    source = re.search(r'<details class="claim-source">.*?</details>', entry, re.S)
    assert source and "test_c03_sufficient_condition_for_vanishing" in source[0]
    assert "chapters/01-why-attention/rnn/#claim-ch01-c03-1" in entry


def test_every_claim_has_a_title_beyond_its_badge_text():
    occurrences = claims.collect_occurrences()
    bare = [c.id for c in claims.collect_claims() if " · " not in claims._title(c, occurrences.get(c.id, []))]
    assert bare == []


def test_a_claim_title_is_read_from_its_marker(tmp_path):
    """``title=`` in the marker names the claim; without it the heading its first badge sits under does."""
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_x.py").write_text(
        "import pytest\n\n\n"
        '@pytest.mark.claim("ch01-x", paper="§1", title="标记里的标题", text="t")\n'
        "def test_x():\n    pass\n\n\n"
        '@pytest.mark.claim("ch01-y", paper="§1", text="t")\n'
        "def test_y():\n    pass\n", encoding="utf-8")
    x, y = claims.collect_claims(tests)
    assert (x.title, y.title) == ("标记里的标题", None)
    badge = [claims.Occurrence("chapters/01-x/a.md", "claim-ch01-x-1", "示例", "所在的小节")]
    assert claims._title(x, badge) == "示例 · 标记里的标题"
    assert claims._title(y, badge) == "示例 · 所在的小节"


@pytest.mark.parametrize("text, html", [
    ("‖∂h_T/∂h_{T−k}‖₂ ≤ 0.9^k", "‖∂h<sub>T</sub>/∂h<sub>T−k</sub>‖₂ ≤ 0.9<sup>k</sup>"),
    ("norm_first=True 与 masked_fill", "`norm_first=True` 与 `masked_fill`"),
    ("|V|=37000，d_ff=2048", r"\|V\|=37000，d<sub>ff</sub>=2048"),
    ("$W^O$ 不动", "$W^O$ 不动"),
])
def test_readable_claim_text(text, html):
    assert claims.readable(text) == html


# --- the last recorded run --------------------------------------------------------------------


def _junit(path: Path, cases: list[tuple[str, str, str | None]]) -> Path:
    body = "".join(f'<testcase classname="{c}" name="{n}">' + (f"<{o} />" if o else "") + "</testcase>"
                   for c, n, o in cases)
    path.write_text('<?xml version="1.0"?><testsuites><testsuite name="pytest" timestamp="2026-01-02T03:04:05">'
                    f"{body}</testsuite></testsuites>", encoding="utf-8")
    return path


def _claim(test_file: str, test_name: str) -> claims.Claim:
    return claims.Claim(id="ch01-c99", paper="§1", text="t", test_file=test_file, test_name=test_name, source="")


def test_claim_status_reads_the_junit_xml(tmp_path):
    junit = _junit(tmp_path / "junit.xml", [
        ("tests.ch01.test_a", "test_ok[1]", None), ("tests.ch01.test_a", "test_ok[2]", "skipped"),
        ("tests.ch01.test_a.TestK", "test_bad", "failure"), ("tests.ch01.test_a", "test_skip", "skipped")])
    (tmp_path / "run.json").write_text(json.dumps({"commit": "0123456789abcdef", "dirty": False,
                                                   "date": "2026-01-02 03:04 UTC", "torch": "2.13.0"}))
    run = claims.read_run(junit, tmp_path / "run.json")
    assert (run.date, run.commit, run.torch) == ("2026-01-02 03:04 UTC", "0123456", "2.13.0")
    status = {name: claims.claim_status(_claim("tests/ch01/test_a.py", name), run)
              for name in ["test_ok", "TestK::test_bad", "test_skip", "test_absent"]}
    assert status == {"test_ok": "passed", "TestK::test_bad": "failed", "test_skip": "skipped", "test_absent": "none"}


def test_a_stale_run_record_is_not_attributed_to_a_newer_xml(tmp_path):
    junit = _junit(tmp_path / "junit.xml", [])
    record = tmp_path / "run.json"
    record.write_text(json.dumps({"commit": "0123456789", "date": "2020-01-01 00:00 UTC"}))
    os.utime(record, (junit.stat().st_mtime - 3600,) * 2)
    run = claims.read_run(junit, record)
    assert run.commit == "" and run.date == "2026-01-02 03:04"


def test_without_a_run_the_page_says_so_and_claims_no_pass(tmp_path):
    assert claims.read_run(tmp_path / "none.xml", tmp_path / "none.json") is None
    page = claims.render(claims.collect_claims()[:3], {}, None)
    assert "尚无运行记录" in page and "通过" not in page


def test_with_a_run_each_entry_says_when_and_on_which_commit(tmp_path):
    claim = claims.collect_claims()[0]
    module = claim.test_file.removesuffix(".py").replace("/", ".")
    run = claims.Run(date="2026-01-02 03:04 UTC", commit="0123456+", torch="2.13.0",
                     outcomes={f"{module}::{claim.test_name}": ["passed"]})
    page = claims.render([claim], {}, run)
    assert "**最近一次运行**：✔ 通过（2026-01-02 03:04 UTC，提交 `0123456`（含未提交的改动），PyTorch 2.13.0）" in page
