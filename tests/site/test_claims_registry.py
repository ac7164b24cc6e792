"""Every claim a page cites has a test, and every claim test is cited by a page."""

from __future__ import annotations

import re
from collections import Counter

from sitebuild.generate.claims import CLAIM_ID, DOCS, collect_claims, collect_page_refs


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


def test_verification_page_lists_each_claim_with_its_test(built_site):
    """Its chapter's built claims page has an anchor per claim, names its test, and shows its source."""
    for c in collect_claims():
        html = (built_site / "verification" / c.id[:4] / "index.html").read_text(encoding="utf-8")
        assert f'id="{c.id}"' in html, c.id
        assert c.test_name in html, c.id


def test_short_badge_text_matches_the_id():
    """A badge "[✔ C03](…#ch01-c03)" must say C03: the short form is the id's own suffix."""
    badge = re.compile(r"\[✔ (C\d{2}b?)\]\([^)#]*verification\.md#(ch\d{2})-(c\d{2}b?)\)")
    wrong = []
    for page in DOCS.rglob("*.md"):
        for short, _, suffix in badge.findall(page.read_text(encoding="utf-8")):
            if short.lower() != suffix:
                wrong.append(f"{page.name}: {short} -> {suffix}")
    assert wrong == []
