"""The question bank's controls in Chromium: filter by chapter and difficulty, reveal all / hide all,
by keyboard, with no request leaving the site; a question's anchor opens it, and an opened question
shows its full answer, fetched from its chapter's page. One page load."""

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
        page.goto(site_url + "interview/#q-2-4")
        wait_for_page(page)
        # the anchor lands on the question, open, and its answer comes from chapter 02's page
        assert page.evaluate("document.getElementById('q-2-4').open") is True
        page.wait_for_function("document.getElementById('q-2-4').dataset.answer === 'shown'", timeout=10000)
        answer = page.locator("#q-2-4")
        assert "参考答案。" in answer.inner_text()
        hrefs = answer.locator("a").evaluate_all("as => as.map(a => a.href)")
        assert any(h.startswith(site_url + "verification/#ch02-") for h in hrefs), hrefs  # a badge, resolved
        assert any(h.startswith(site_url + "chapters/02-architecture/") for h in hrefs), hrefs
        assert page.locator("#q-2-5 a.qbank-answer").count() == 1  # the others wait until opened
        bar = page.locator(".qbank-controls")
        assert bar.is_visible()
        assert page.locator(".qbank-count").inner_text() == f"显示 {len(QUESTIONS)} / {len(QUESTIONS)} 题"
        options = page.locator("#qbank-chapter option").all_inner_texts()
        assert len(options) == 1 + len({q.chapter for q in QUESTIONS}) and options[3].startswith("第 03 章")

        # chapter 3, by keyboard: focus the select, pick with the arrow keys
        page.focus("#qbank-chapter")
        for _ in range(3):
            page.keyboard.press("ArrowDown")
        assert page.eval_on_selector("#qbank-chapter", "s => s.value") == "3"
        ids = page.evaluate(VISIBLE + ".map(d => d.id)")
        assert ids == [q.anchor for q in QUESTIONS if q.chapter == 3]
        # only chapter 03's heading is left among the chapter headings
        shown_h2 = page.evaluate("[...document.querySelectorAll('article h2')].filter(h => !h.hidden && h.offsetParent)"
                                 ".map(h => h.textContent)")
        assert [h for h in shown_h2 if h.startswith("第 ")] and all(h.startswith("第 03 章") for h in shown_h2
                                                                    if h.startswith("第 "))

        page.select_option("#qbank-stars", "2")
        ids = page.evaluate(VISIBLE + ".map(d => d.id)")
        assert ids == [q.anchor for q in QUESTIONS if q.chapter == 3 and q.stars == 2] and ids
        assert page.locator(".qbank-count").inner_text() == f"显示 {len(ids)} / {len(QUESTIONS)} 题"

        # reveal all with the keyboard (Tab order reaches the button; Enter presses it)
        page.focus("#qbank-stars")
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.dataset.qbank") == "open"
        page.keyboard.press("Enter")
        assert page.evaluate(VISIBLE + ".every(d => d.open)") is True
        page.wait_for_function(VISIBLE + ".every(d => d.dataset.answer === 'shown')", timeout=10000)
        # whole answers (they open with 参考答案。), not the one-line core and its link
        assert page.evaluate(VISIBLE + ".every(d => d.textContent.includes('参考答案。'))") is True
        assert page.evaluate("document.getElementById('q-1-1').open") is False  # hidden ones untouched
        page.keyboard.press("Tab")
        page.keyboard.press(" ")
        assert page.evaluate(VISIBLE + ".some(d => d.open)") is False

        page.select_option("#qbank-chapter", "")
        page.select_option("#qbank-stars", "")
        assert page.evaluate(VISIBLE + ".length") == len(QUESTIONS)
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
