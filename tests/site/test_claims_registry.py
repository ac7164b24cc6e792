"""Every claim a page cites has a test, and every claim test is cited by a page."""

from __future__ import annotations

from collections import Counter

from snippets.verification import CLAIM_ID, collect_claims, collect_page_refs, render


def test_every_cited_claim_has_a_test():
    tested = {c.id for c in collect_claims()}
    cited = collect_page_refs()
    missing = {cid: pages for cid, pages in cited.items() if cid not in tested}
    assert missing == {}, f"claims cited on pages without a test: {missing}"


def test_every_claim_test_is_cited_by_a_page():
    cited = collect_page_refs()
    orphans = [c.nodeid + " -> " + c.id for c in collect_claims() if c.id not in cited]
    assert orphans == [], f"claim tests that no page cites: {orphans}"


def test_claims_are_unique_well_formed_and_described():
    claims = collect_claims()
    assert len(claims) >= 30, "chapters 01 and 02 together make at least 30 checkable claims"
    duplicated = [cid for cid, n in Counter(c.id for c in claims).items() if n > 1]
    assert duplicated == []
    assert [c.id for c in claims if not CLAIM_ID.match(c.id)] == []
    assert [c.id for c in claims if not c.paper or not c.text] == []


def test_verification_page_lists_each_claim_with_its_test_source():
    claims = collect_claims()
    page = render(claims, collect_page_refs())
    for c in claims:
        assert f"{{#{c.id}}}" in page
        assert f"`{c.nodeid}`" in page
        assert c.source.splitlines()[-1].strip() in page
