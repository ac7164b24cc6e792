"""An old link into a one-page chapter (chapters/02-architecture/#kv-cache) still lands on its
section, now on another page of the chapter; an anchor the first page keeps stays there. So does
an old link into a section page that was split (chapters/03-scaled-dot-product/derivation/#masks).

One script in the page's <head> sends every such link on; which ids it sends where is data, checked
for every chapter and every split page on the built HTML (tests/site/test_chapter_pages.py). Here
the script runs, once for each thing it does.
"""

from __future__ import annotations

from urllib.parse import unquote

import pytest

from tests.browser.helpers import new_context

OLD_LINKS = [
    # a chapter's first page sends an anchor that moved on to the page that now holds it
    ("chapters/02-architecture/#kv-cache", "chapters/02-architecture/derivation-decoder/#kv-cache"),
    # an anchor the first page keeps (not ASCII: the script decodes the hash) stays there
    ("chapters/01-why-attention/#核心困惑", "chapters/01-why-attention/#核心困惑"),
    # a section page split in two (split_from: in the second page's front matter)
    ("chapters/03-scaled-dot-product/derivation/#masks", "chapters/03-scaled-dot-product/derivation-softmax/#masks"),
]


@pytest.fixture(scope="module")
def phone_tab(chromium_browser):
    """One tab for the three links, as a reader follows them: the theme comes from the cache."""
    ctx = new_context(chromium_browser, viewport={"width": 390, "height": 844})
    yield ctx.new_page()
    ctx.close()


@pytest.mark.parametrize(("old", "new"), OLD_LINKS, ids=[o.split("#")[1] for o, _ in OLD_LINKS])
def test_an_old_anchor_lands_on_its_section(phone_tab, site_url, old, new):
    page = phone_tab
    page.goto(site_url + old)
    # not wait_for_page: navigation.tracking may rewrite the hash once the page is set up
    page.wait_for_load_state("load")
    page.wait_for_function("() => !!document.body.dataset.pageReady", timeout=90_000)
    # the page that holds the anchor (navigation.tracking may then rewrite the hash to the
    # heading the reader is in, so the element itself is checked, not the hash)
    assert unquote(page.url).split("#")[0] == site_url + new.split("#")[0], page.url
    target = page.locator(f"[id='{new.split('#')[1]}']")
    box = target.bounding_box()
    assert box and 0 <= box["y"] < 844, f"{new}: not in view ({box})"
