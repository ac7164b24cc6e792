"""The errata page (勘误): docs/errata.yml validates against its schema, every entry's claim id is
a claim some test carries, and the rendered page lists every entry with its fields."""

from __future__ import annotations

import copy
import re

import pytest

from sitebuild.config import nav_pages
from sitebuild.generate.claims import collect_claims
from sitebuild.generate.render import page_errata as errata
from tests.support.sections import DOCS


@pytest.fixture(scope="module")
def data() -> dict:
    return errata.load()


def test_errata_file_validates(data):
    assert data["entries"], "docs/errata.yml has no entries"


@pytest.mark.parametrize("field, value", [("date", "1.12.2026"), ("claim", "C01"), ("page", "errata.md"),
                                          ("was", ""), ("extra", "x")])
def test_an_invalid_entry_is_rejected(tmp_path, data, field, value):
    broken = copy.deepcopy(data)
    broken["entries"][0][field] = value
    path = tmp_path / "errata.yml"
    path.write_text(__import__("yaml").safe_dump(broken, allow_unicode=True), encoding="utf-8")
    with pytest.raises(errata.ErrataError, match=field if field != "extra" else "Additional"):
        errata.load(path)


def test_duplicate_ids_are_rejected(tmp_path, data):
    broken = copy.deepcopy(data)
    broken["entries"].append(copy.deepcopy(broken["entries"][0]))
    path = tmp_path / "errata.yml"
    path.write_text(__import__("yaml").safe_dump(broken, allow_unicode=True), encoding="utf-8")
    with pytest.raises(errata.ErrataError, match="duplicate"):
        errata.load(path)


def test_every_claim_id_exists(data):
    known = {c.id for c in collect_claims()}
    missing = [(e["id"], e["claim"]) for e in data["entries"] if e.get("claim") and e["claim"] not in known]
    assert not missing, f"errata entries name claims no test carries: {missing}"


def test_every_page_is_a_page_of_the_site(data):
    """An entry's page is one the site builds (in the nav): not a file that is only included into
    another page, such as a chapter's questions.md, which the build excludes."""
    built = {src for _, src, _ in nav_pages()}
    missing = [(e["id"], place) for e in data["entries"] for place in [e["page"], *e.get("also", [])]
               if place.split("#")[0] not in built]
    assert not missing, missing


def test_entries_are_listed_by_date_then_chapter_and_name_every_place(data, tmp_path):
    """The page says 「按日期排列，同一天的按章节顺序」; each entry's 位置 links its page and every
    other place (``also``) where the same correction was made."""
    errata.render_errata([], tmp_path)
    page = (tmp_path / "errata.md").read_text(encoding="utf-8")
    assert "按日期排列，同一天的按章节顺序" in page
    by_id = {e["id"]: e for e in data["entries"]}
    listed = [by_id[i] for i in re.findall(r"^### (\S+) \{#", page, flags=re.M)]
    keys = [(e["date"], e["id"][:4]) for e in listed]
    assert keys == sorted(keys), keys
    assert any(e.get("also") for e in data["entries"])
    # a chapter's first page is named by its title, not by 「章 标题」 left over from 「第 NN 章 标题」
    assert "[第 01 章 · 为什么是 Attention？](chapters/01-why-attention/index.md" in page
    assert "· 章" not in page
    for e in data["entries"]:
        where = page.split(f"### {e['id']} ")[1].split("\n### ")[0].split("| 位置 | ")[1].split("\n")[0]
        for place in [e["page"], *e.get("also", [])]:
            assert f"]({place})" in where, (e["id"], place)


def test_the_generated_page_lists_every_entry(data, tmp_path):
    errata.render_errata([], tmp_path)
    page = (tmp_path / "errata.md").read_text(encoding="utf-8")
    headings = re.findall(r"^### (\S+) \{#(\S+)\}$", page, flags=re.M)
    assert [h for h, _ in headings] == [a for _, a in headings]
    assert sorted(h for h, _ in headings) == sorted(e["id"] for e in data["entries"])
    for e in data["entries"]:
        block = page.split(f"### {e['id']} ")[1].split("\n### ")[0]
        for field in ("date", "was", "now", "why", "source"):
            assert errata._cell(e[field]) in block, (e["id"], field)
        assert re.search(r"\| 提交 \| `(" + errata.UNCOMMITTED + r"|[0-9a-f]{7,10})` \|", block)
        if e.get("claim"):
            assert f"](verification/{e['claim'][:4]}.md#{e['claim']})" in block  # its chapter's claims page


def test_a_test_id_in_a_cell_can_wrap_in_a_phone_column():
    """A test id or a file path has no space to wrap at: the cell lets it break after / _ . :: with
    <wbr> only, so that the text a reader copies is the id itself (page_errata.LONG_RUN)."""
    text = "测试 tests/ch09/test_ch09_decoding_and_bleu.py::test_a_beam_of_one_is_greedy；results/toy-translation-long.json"
    cell = errata._cell(text)
    assert cell.replace("<wbr>", "") == text
    assert max(len(piece) for piece in re.split(r"<wbr>|\s|；|(?<=-)", cell)) <= 12  # a browser breaks after a hyphen anyway
    assert errata._cell("d_k = 4 时加性领先 1.25 倍") == "d_k = 4 时加性领先 1.25 倍"  # short runs stay as they are


def test_commit_falls_back_to_uncommitted(tmp_path):
    assert errata.commit_of({"id": "ch99-never-added"}) == errata.UNCOMMITTED
    assert errata.commit_of({"id": "x", "commit": "0123456789abcdef"}) == "0123456789"


def test_the_errata_page_includes_the_generated_list_and_is_in_the_nav():
    assert '--8<-- "docs/generated/errata.md"' in (DOCS / "errata.md").read_text(encoding="utf-8")
    nav = (DOCS.parent / "mkdocs.yml").read_text(encoding="utf-8").split("\nnav:", 1)[1]
    assert nav.index("errata.md") < nav.index("glossary.md")
