"""Search and offline-edition settings that need no browser: the query file, the index budget,
and mkdocs-offline.yml staying in step with mkdocs.yml (effective configs, as mkdocs reads them)."""

from __future__ import annotations

from sitebuild.config import load, nav_pages
from tests.support.search import load_queries

# The index grows with the chapters (it holds every page's text, code included): 256 KiB per
# chapter plus 512 KiB for the rest of the site. Stripping code and TeX from it would shrink it.
SEARCH_INDEX_PER_CHAPTER, SEARCH_INDEX_BASE = 256 * 1024, 512 * 1024


def test_search_queries_file_is_sound():
    """≥ 40 queries, each naming a nav page; the hard kinds are all represented."""
    spec = load_queries()
    queries = spec["queries"]
    urls = [url for _, _, url in nav_pages()]
    assert len(queries) >= 40
    assert len({q["q"] for q in queries}) == len(queries), "duplicate queries"
    for q in queries:
        for target in [q["page"], *q.get("or", [])]:
            assert target.split("#")[0] in urls, f"{q['q']}: {target} is not a page of the nav"
    assert {"zh-term", "compound-tail", "english", "symbol", "mixed"} <= {q["kind"] for q in queries}


def test_search_index_budget(built_site):
    size = (built_site / "search" / "search_index.json").stat().st_size
    chapters = sum(1 for _, src, _ in nav_pages() if src.startswith("chapters/") and src.endswith("/index.md"))
    budget = SEARCH_INDEX_BASE + SEARCH_INDEX_PER_CHAPTER * chapters
    print(f"search_index.json: {size} bytes for {chapters} chapters (budget {budget})")
    assert size <= budget


def test_offline_config_tracks_main():
    """mkdocs-offline.yml = mkdocs.yml, minus navigation.instant, plus the offline plugin and its hook."""
    main, offline = load("mkdocs.yml"), load("mkdocs-offline.yml")
    assert offline["use_directory_urls"] is False and main["use_directory_urls"] is True
    assert list(offline["theme"]["features"]) == [f for f in main["theme"]["features"] if f != "navigation.instant"]
    def plugins(cfg):
        return [p for p in cfg["plugins"] if not p.endswith(".py")]  # hooks show up as plugins too

    assert plugins(offline) == [*plugins(main), "material/offline"]
    assert offline["nav"] == main["nav"] and offline["markdown_extensions"] == main["markdown_extensions"]
    # lists replace lists under INHERIT: the offline config restates main's hooks, then adds its own
    assert list(offline["hooks"]) == [*main["hooks"], "sitebuild/hooks.py"]
