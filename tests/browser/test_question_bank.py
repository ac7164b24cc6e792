"""The question bank's controls in Chromium, on a chapter's page of the bank: filter by difficulty, reveal
all / hide all, by keyboard, with no request leaving the site; an old link to a question (interview/#q-2-4,
from when the bank was one page) lands on it, open, and an opened question shows its full answer,
fetched from its chapter's page."""

from __future__ import annotations

from sitebuild.questions import load_all
from tests.browser.helpers import Recorder, new_context, wait_for_page

QUESTIONS = load_all()
VISIBLE = "() => [...document.querySelectorAll('details.question[data-chapter]')].filter(d => !d.hidden)"


def test_filter_and_reveal_by_keyboard(chromium_browser, site_url):
    context = new_context(chromium_browser)
    page = context.new_page()
    rec = Recorder(page)
    try:
        page.goto(site_url + "interview/#q-2-4")  # an old link: the index sends it on to chapter 02's page
        page.wait_for_load_state("load")
        page.wait_for_function("() => !!document.body.dataset.pageReady", timeout=90_000)
        assert page.url.split("#")[0] == site_url + "interview/ch02/", page.url
        wait_for_page(page)
        # the anchor lands on the question, open, and its answer comes from chapter 02's page
        assert page.evaluate("document.getElementById('q-2-4').open") is True
        page.wait_for_function("document.getElementById('q-2-4').dataset.answer === 'shown'", timeout=10000)
        answer = page.locator("#q-2-4")
        assert "参考答案。" in answer.inner_text()
        hrefs = answer.locator("a").evaluate_all("as => as.map(a => a.href)")
        assert any(h.startswith(site_url + "verification/ch02/#ch02-") for h in hrefs), hrefs  # a badge, resolved
        assert any(h.startswith(site_url + "chapters/02-architecture/") for h in hrefs), hrefs
        assert page.locator("#q-2-5 a.qbank-answer").count() == 1  # the others wait until opened
        bar = page.locator(".qbank-controls")
        assert bar.is_visible()
        mine = [q for q in QUESTIONS if q.chapter == 2]
        assert page.locator(".qbank-count").inner_text() == f"显示 {len(mine)} / {len(mine)} 题"
        assert page.evaluate(VISIBLE + ".map(d => d.id)") == [q.anchor for q in mine]

        # difficulty 2, by keyboard: focus the select, pick with the arrow keys
        page.focus("#qbank-stars")
        for _ in range(2):
            page.keyboard.press("ArrowDown")
        assert page.eval_on_selector("#qbank-stars", "s => s.value") == "2"
        ids = page.evaluate(VISIBLE + ".map(d => d.id)")
        assert ids == [q.anchor for q in mine if q.stars == 2] and ids
        assert page.locator(".qbank-count").inner_text() == f"显示 {len(ids)} / {len(mine)} 题"
        # only the heading of that difficulty is left
        shown_h2 = page.evaluate("[...document.querySelectorAll('article h2')].filter(h => !h.hidden && h.offsetParent)"
                                 ".map(h => h.textContent)")
        assert [h for h in shown_h2 if "⭐" in h] and all(h.startswith("⭐⭐ ") for h in shown_h2 if "⭐" in h), shown_h2

        # reveal all with the keyboard (Tab order reaches the button; Enter presses it)
        page.focus("#qbank-stars")
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.dataset.qbank") == "open"
        page.keyboard.press("Enter")
        assert page.evaluate(VISIBLE + ".every(d => d.open)") is True
        page.wait_for_function(VISIBLE + ".every(d => d.dataset.answer === 'shown')", timeout=10000)
        # whole answers (they open with 参考答案。), not the one-line core and its link
        assert page.evaluate(VISIBLE + ".every(d => d.textContent.includes('参考答案。'))") is True
        hidden = next(q.anchor for q in mine if q.stars == 1)
        assert page.evaluate(f"document.getElementById('{hidden}').open") is False  # hidden ones untouched
        page.keyboard.press("Tab")
        page.keyboard.press(" ")
        assert page.evaluate(VISIBLE + ".some(d => d.open)") is False

        page.select_option("#qbank-stars", "")
        assert page.evaluate(VISIBLE + ".length") == len(mine)
        assert rec.foreign_requests() == [] and rec.console_errors == []
    finally:
        context.close()


def test_cheat_sheet_prints_one_a4_page_per_chapter(chromium_browser, site_url, tmp_path):
    """The print stylesheet puts each chapter of the cheat sheet on exactly one A4 page."""
    import re
    import shutil
    import subprocess

    chapters = len({q.chapter for q in QUESTIONS})
    context = new_context(chromium_browser)
    page = context.new_page()
    try:
        page.goto(site_url + "cheatsheet/")
        wait_for_page(page)
        page.emulate_media(media="print")
        out = tmp_path / "cheatsheet.pdf"
        page.pdf(path=str(out), format="A4")
    finally:
        context.close()
    if shutil.which("pdftotext") is None:
        raise AssertionError("pdftotext missing: apt-get install poppler-utils (.ci/run does)")
    text = subprocess.run(["pdftotext", "-layout", str(out), "-"], capture_output=True, text=True, check=True).stdout
    pages = text.split("\f")[:-1]
    assert len(pages) == chapters
    for n, body in enumerate(pages, start=1):
        numbers = {int(m) for m in re.findall(rf"(?m)^\s*{n}\.(\d{{1,2}})\b(?![.%\d])", body)}
        assert numbers == {q.index for q in QUESTIONS if q.chapter == n}, (n, sorted(numbers))
