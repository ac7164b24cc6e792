"""The verification pages and a notebook page as a reader uses them, in one Chromium context.

A link from before the list had a page per chapter (verification/#ch01-c03) lands on the claim on
chapter 01's page; the test source reads at body code size; "出现在" scrolls to the very badge; the
notebook page downloads its .ipynb and links its chapter.
"""

from __future__ import annotations

import json

from tests.browser.helpers import new_context, wait_for_page


def test_claim_entry_source_and_backlink_then_notebook_links(chromium_browser, site_url):
    ctx = new_context(chromium_browser)
    page = ctx.new_page()
    try:
        page.goto(site_url + "verification/#ch01-c03")  # an old bookmark: the index sends it on
        page.wait_for_load_state("load")
        page.wait_for_function("() => !!document.body.dataset.pageReady", timeout=90_000)
        assert page.url.split("#")[0] == site_url + "verification/ch01/", page.url
        wait_for_page(page)
        entry = page.locator("h2#ch01-c03")
        box = entry.bounding_box()
        assert box and 0 <= box["y"] < page.viewport_size["height"], f"entry not in view: {box}"
        assert "tanh RNN：梯度消失的充分条件" in entry.inner_text()
        details = page.locator("#ch01-c03 ~ details.claim-source").first
        details.locator("summary").click()
        code_px = details.locator("pre code").first.evaluate("e => parseFloat(getComputedStyle(e).fontSize)")
        assert code_px >= 13, f"test source at {code_px}px"

        # 出现在 -> the chapter, scrolled to the badge itself
        page.locator('.md-content a[href$="#claim-ch01-c03-1"]').first.click()
        wait_for_page(page)
        assert page.url.endswith("/chapters/01-why-attention/rnn/#claim-ch01-c03-1")
        badge = page.locator("#claim-ch01-c03-1")
        assert badge.get_attribute("class") == "claim"
        box, height = badge.bounding_box(), page.viewport_size["height"]
        assert box and 0 <= box["y"] < height, f"badge not in view: {box}"

        page.goto(site_url + "notebooks/ch01-experiments/")
        wait_for_page(page)
        assert page.locator(".jp-OutputArea-output").count() >= 5
        download = page.locator('a[download][href$="/ch01-experiments.ipynb"], a[download][href="ch01-experiments.ipynb"]').first
        response = page.request.get(download.evaluate("a => a.href"))
        assert response.ok and json.loads(response.body())["nbformat"] == 4
        page.locator('.md-content a[href$="chapters/01-why-attention/"]').first.click()
        wait_for_page(page)
        assert page.url.endswith("/chapters/01-why-attention/")
    finally:
        ctx.close()
