"""An old link into a one-page chapter (chapters/02-architecture/#kv-cache) still lands on its
section, now on another page of the chapter; an anchor the first page keeps stays there. So does
an old link into a section page that was split (chapters/03-scaled-dot-product/derivation/#masks)."""

from __future__ import annotations

from urllib.parse import unquote

import pytest

from tests.browser.helpers import new_context

OLD_LINKS = [
    ("chapters/02-architecture/#kv-cache", "chapters/02-architecture/derivation-decoder/#kv-cache"),
    ("chapters/01-why-attention/#claim-ch01-c03-1", "chapters/01-why-attention/rnn/#claim-ch01-c03-1"),
    ("chapters/03-scaled-dot-product/#q-3-1", "chapters/03-scaled-dot-product/interview/#q-3-1"),
    ("chapters/01-why-attention/#核心困惑", "chapters/01-why-attention/#核心困惑"),
    # a section page split in two (split_from: in the second page's front matter)
    ("chapters/03-scaled-dot-product/derivation/#masks", "chapters/03-scaled-dot-product/derivation-softmax/#masks"),
    ("chapters/01-why-attention/self-attention/#一跳梯度的闭式推导",
     "chapters/01-why-attention/self-attention-path/#一跳梯度的闭式推导"),
    ("chapters/05-ffn-residual-norm/derivation/#layernorm", "chapters/05-ffn-residual-norm/derivation-norm/#layernorm"),
    ("chapters/02-architecture/derivation/#post-ln-vs-pre-ln", "chapters/02-architecture/derivation-encoder/#post-ln-vs-pre-ln"),
    ("chapters/02-architecture/derivation-decoder/#param-count", "chapters/02-architecture/derivation-params/#param-count"),
    ("chapters/02-architecture/interview/#view-2026", "chapters/02-architecture/view-2026/#view-2026"),
]


@pytest.mark.parametrize(("old", "new"), OLD_LINKS, ids=[o.split("#")[1] for o, _ in OLD_LINKS])
def test_an_old_anchor_lands_on_its_section(chromium_browser, site_url, old, new):
    ctx = new_context(chromium_browser, viewport={"width": 390, "height": 844})
    page = ctx.new_page()
    try:
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
    finally:
        ctx.close()
