"""How well the site's search finds what a reader types: recall@3 and MRR@10 on reader queries,
typed into the real search box in Chromium, for the tuned and the held-out half.

    .venv/bin/mkdocs build --strict -d /tmp/site
    .venv/bin/python -m tools.search_eval /tmp/site [--engine lunr|pagefind] [--show N]

The queries and the sections that answer them are tests/support/search_eval.json. A second set,
tests/support/search_eval_fresh.json (``--queries``), was written later, blind to every result, and is
held out whole; a third, tests/support/search_eval_tune2.json, was written the same way for tuning
(chapters 01-13) and is tuned on whole. A query's
half is fixed by its text (:func:`split_of`), so it cannot be picked after seeing results; the
held-out half is for reporting only: never tune the dictionary, the index or the ranking on it.

``lunr``: Material's search as the site ships it (its worker with the site's fixes and ranking,
the index the build wrote), typed in the box as an input method commits a word. ``pagefind``: the
same built pages indexed by Pagefind (``npx pagefind --site``, into a copy of the site) and
queried through its JS API on the same origin, each result shown as the site shows one (its best
section as its link; ``--layout page``: the page, then its best three sections). A result list is the links a reader is shown, in
order: each result's link (its best section since 2026-12-04, the page before), then the entries
that tie its score; not the ones Material folds under 「还有 N 个结果」 until the reader opens them. A
hit at rank r is the first link that is one of the query's sections (or any link to a page named
whole). ``recall@3 (folded too)`` also counts the folded links, as the evaluation did before
2026-12-04. Writes test-output/search-eval-ENGINE.json. A benchmark for the closing notes,
not a test.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import unquote, urljoin, urlparse

from tests.support.search import single_character_only

ROOT = Path(__file__).resolve().parents[1]
QUERIES = ROOT / "tests" / "support" / "search_eval.json"
OUT = ROOT / "test-output"
TOP, DEPTH = 3, 10


def split_of(query: str) -> str:
    """'held' or 'tune': the first byte of the query's SHA-256, odd or even."""
    return "held" if hashlib.sha256(query.encode("utf-8")).digest()[0] % 2 else "tune"


def location(href: str, base: str) -> str:
    """'chapters/03-…/derivation/#why-sqrt': a result link relative to the site, without ?h=."""
    u = urlparse(href)
    path = unquote(u.path)[len(urlparse(base).path):]
    return path + (f"#{unquote(u.fragment)}" if u.fragment else "")


def rank(links: list[str], want: list[str]) -> int | None:
    """1-based rank of the first link that is a wanted section (or on a page wanted whole)."""
    for i, link in enumerate(links[:DEPTH], 1):
        page = link.split("#")[0]
        if link in want or page in want:
            return i
    return None


def recall(part: list[dict], key: str) -> float:
    return round(sum(r[key] is not None and r[key] <= TOP for r in part) / len(part), 3)


def summary(rows: list[dict]) -> dict:
    out = {}
    for half in ("tune", "held", "all"):
        part = [r for r in rows if half == "all" or r["split"] == half]
        if not part:
            continue
        out[half] = {"n": len(part), "recall@3": recall(part, "rank"),
                     "mrr@10": round(sum(1 / r["rank"] for r in part if r["rank"]) / len(part), 3),
                     "recall@3 (folded too)": recall(part, "rank_folded")}
    return out


TYPE_JS = """async (q) => {
  const box = document.querySelector('input.md-search__input');
  const meta = () => document.querySelector('.md-search-result__meta').textContent;
  const idle = meta();
  box.focus();
  box.value = q;
  box.dispatchEvent(new InputEvent('input', {bubbles: true, data: q, inputType: 'insertText'}));
  box.dispatchEvent(new KeyboardEvent('keyup', {bubbles: true}));
  for (let i = 0; i < 400 && (meta() === idle); i++) await new Promise(r => setTimeout(r, 25));
  if (meta() === idle) throw new Error('no results shown for ' + q);
  const first = document.querySelector('.md-search-result__item');
  const all = [...document.querySelectorAll('.md-search-result__item a')];
  return {links: all.filter(a => !a.closest('details:not([open])')).map(a => a.href),
          folded: all.map(a => a.href),
          marks: first ? [...first.querySelectorAll('mark')].map(m => m.textContent) : []};
}"""

CLEAR_JS = """async () => {
  const box = document.querySelector('input.md-search__input');
  box.value = '';
  box.dispatchEvent(new KeyboardEvent('keyup', {bubbles: true}));
  for (let i = 0; i < 400 && document.querySelector('.md-search-result__item'); i++)
    await new Promise(r => setTimeout(r, 25));
  return document.querySelector('.md-search-result__meta').textContent;
}"""

PAGEFIND_JS = """async ({queries, layout}) => {
  const pagefind = await import('./pagefind/pagefind.js');
  await pagefind.init();
  const out = {};
  for (const q of queries) {
    const search = await pagefind.search(q);
    const pages = await Promise.all(search.results.slice(0, 10).map(r => r.data()));
    // each page's best section (sub-results by the weight of their matches; Pagefind lists them
    // in page order) as the page's link, as the site's search shows a result (or the page, then
    // its best three sections, as Pagefind's own result list does: layout 'page')
    const weight = s => (s.weighted_locations || []).reduce((a, l) => a + l.balanced_score, 0);
    const best = p => (p.sub_results || []).filter(s => s.url !== p.url).sort((a, b) => weight(b) - weight(a));
    out[q] = pages.flatMap(p => layout === 'page' ? [p.url, ...best(p).slice(0, 3).map(s => s.url)]
                                                  : [(best(p)[0] || p).url]);
  }
  return out;
}"""


# The words the box highlights in the first result, per query (lunr only), for
# tests.support.search.single_character_only; the result links with the folded ones.
MARKS: dict[str, list[str]] = {}
FOLDED: dict[str, list[str]] = {}


def lunr_results(site: Path, queries: list[str]) -> dict[str, list[str]]:
    from sitebuild.browser import chromium
    from sitebuild.serve import serve
    from tests.browser.helpers import new_context, wait_for_page

    with serve(site) as base, chromium() as browser:
        page = new_context(browser).new_page()
        page.goto(base)
        wait_for_page(page)
        page.locator("input.md-search__input").click()
        out = {}
        for q in queries:
            idle = page.evaluate(CLEAR_JS)
            assert idle, "the search box did not clear"
            shown = page.evaluate(TYPE_JS, q)
            out[q] = [location(h, base) for h in shown["links"]]
            MARKS[q] = shown["marks"]
            FOLDED[q] = [location(h, base) for h in shown["folded"]]
        return out


# Pagefind reads what Material's search reads: the article, without code and without the MathML
# copy of each formula (Material's index has no code and plain text for TeX).
PAGEFIND_ARGS = ["--root-selector", "article.md-content__inner",
                 "--exclude-selectors", "pre, .katex-mathml, .headerlink, .md-source-file", "--force-language", "zh"]


def pagefind_results(site: Path, queries: list[str], pagefind: str, layout: str) -> dict[str, list[str]]:
    from sitebuild.browser import chromium
    from sitebuild.serve import serve
    from tests.browser.helpers import new_context

    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "site"
        shutil.copytree(site, copy)
        subprocess.run([*pagefind.split(), "--site", str(copy), *PAGEFIND_ARGS], cwd=ROOT, check=True,
                       capture_output=True)
        with serve(copy) as base, chromium() as browser:
            page = new_context(browser).new_page()
            page.goto(base)
            found = page.evaluate(PAGEFIND_JS, {"queries": queries, "layout": layout})
            return {q: [location(urljoin(base, h), base) for h in hrefs] for q, hrefs in found.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("site", type=Path, help="a built site (mkdocs build --strict -d SITE)")
    ap.add_argument("--engine", choices=("lunr", "pagefind"), default="lunr")
    ap.add_argument("--show", type=int, default=0, help="print the first N misses of the tuned half")
    ap.add_argument("--queries", type=Path, default=QUERIES,
                    help="the queries and their sections; a file with a \"half\" is that half whole "
                         "(tests/support/search_eval_fresh.json: held out; search_eval_tune2.json: tuned)")
    ap.add_argument("--pagefind", default="npx --no-install pagefind", help="the pagefind command")
    ap.add_argument("--layout", choices=("section", "page"), default="section",
                    help="pagefind: a result's link is its best section (as the site shows one), or the page "
                         "and its best three sections")
    args = ap.parse_args(argv)
    spec_file = json.loads(args.queries.read_text(encoding="utf-8"))
    spec = spec_file["queries"]
    split = (lambda q: spec_file["half"]) if "half" in spec_file else split_of
    queries = [q["q"] for q in spec]
    found = (lunr_results(args.site, queries) if args.engine == "lunr"
             else pagefind_results(args.site, queries, args.pagefind, args.layout))
    rows = [{"q": q["q"], "split": split(q["q"]), "want": q["want"], "rank": rank(found[q["q"]], q["want"]),
             "rank_folded": rank(FOLDED.get(q["q"], found[q["q"]]), q["want"]), "got": found[q["q"]][:5]}
            for q in spec]
    result = {"engine": args.engine, "queries_file": args.queries.name, "top": TOP, "depth": DEPTH,
              "summary": summary(rows), "queries": rows}
    if args.engine == "pagefind":
        result["layout"] = args.layout
    if MARKS:
        result["single_character_first"] = [q for q in queries if single_character_only(q, MARKS.get(q, []))]
    OUT.mkdir(exist_ok=True)
    suffix = "" if args.queries == QUERIES else f"-{args.queries.stem}"
    (OUT / f"search-eval-{args.engine}{suffix}.json").write_text(json.dumps(result, ensure_ascii=False, indent=1),
                                                                 encoding="utf-8")
    for half, s in result["summary"].items():
        print(f"{args.engine:8} {half:4}  n={s['n']:3}  recall@3 {s['recall@3']:.1%}  MRR@10 {s['mrr@10']:.3f}"
              f"  recall@3 (folded too) {s['recall@3 (folded too)']:.1%}")
    if MARKS:
        print(f"first result matched by single characters only: {len(result['single_character_first'])} queries "
              f"{result['single_character_first'][:10]}")
    misses = [r for r in rows if r["split"] == "tune" and not (r["rank"] and r["rank"] <= TOP)]
    for r in misses[: args.show]:
        print(f"  miss {r['q']!r}: rank {r['rank']}, want {r['want'][0]}, got {r['got'][:3]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
