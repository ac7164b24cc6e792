"""``python -m tools.screenshots`` (``make screenshots``): every nav page as a reader sees it.

Full-page PNGs at 390 px (a phone) and 1280 px, light and dark, of a fresh build, into
``test-output/screenshots/<page>-<palette>-<width>.png``. For people to look at before a page
is called done; the browser tests check the layout itself without taking pictures.
"""

from __future__ import annotations

import argparse
import sys
from urllib.parse import urljoin

from sitebuild.browser import ROOT, BuildError, chromium, served_fresh_build
from sitebuild.config import nav_pages, page_name, picked

OUT = ROOT / "test-output" / "screenshots"
WIDTHS = {"mobile": {"width": 390, "height": 844}, "desktop": {"width": 1280, "height": 900}}
# extra.css lets far-away blocks skip layout (content-visibility: auto); a picture needs them all.
SHOW_EVERYTHING_CSS = ".md-content__inner > * { content-visibility: visible !important; }"


def shoot(browser, url: str, name: str, scheme: str, width: str) -> None:
    mobile = width == "mobile"
    ctx = browser.new_context(color_scheme=scheme, viewport=WIDTHS[width], device_scale_factor=1,
                              is_mobile=mobile, has_touch=mobile, locale="zh-CN", service_workers="block")
    try:
        page = ctx.new_page()
        page.set_default_timeout(180_000)  # the claims page is 1.4 MB: a full-page picture takes a while
        page.goto(url, wait_until="load")
        page.wait_for_function("() => document.body.dataset.pageReady === location.href")
        page.add_style_tag(content=SHOW_EVERYTHING_CSS)
        page.evaluate("document.fonts.ready.then(() => true)")
        page.screenshot(path=str(OUT / f"{name}-{scheme}-{width}.png"), full_page=True)
    finally:
        ctx.close()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.screenshots", description=__doc__.splitlines()[0])
    ap.add_argument("pages", nargs="*", help="page names to take (e.g. 01-why-attention home); default: every nav page")
    args = ap.parse_args(argv)
    urls = [url for _, _, url in nav_pages() if picked(url, args.pages)]
    OUT.mkdir(parents=True, exist_ok=True)
    try:
        with served_fresh_build() as (base, _), chromium() as browser:
            for url in urls:
                for scheme in ("light", "dark"):
                    for width in WIDTHS:
                        shoot(browser, urljoin(base, url), page_name(url), scheme, width)
                print(f"screenshots: {page_name(url)}", flush=True)
    except BuildError as exc:
        sys.stderr.write(str(exc))
        return 1
    print(f"screenshots: {len(urls) * 4} pictures in {OUT.relative_to(ROOT)}/")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
