"""``python -m tools.release_notes`` (``make release-notes``): release notes from the errata, ``dist/release-notes.md``.

The errata page (勘误, docs/errata.yml) is the changelog readers see: every correction that changes
what a page teaches, with the date, the old and the new sentence and why. A release's notes are the
entries since the previous release: ``--since DATE`` (an entry dated after it), else the date of the
latest version tag (``git describe --tags --abbrev=0 --match 'v*'``), else every entry. Each entry
links its page and its entry on the errata page of the published site (:func:`sitebuild.editions.edition_url`).
The release workflow can attach the file as the release's description (``gh release create --notes-file``).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

from sitebuild.config import src_to_url
from sitebuild.editions import edition_url
from sitebuild.generate.render.page_errata import DATA, load

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "dist" / "release-notes.md"


def last_tag_date(cwd: Path = ROOT) -> tuple[str, str] | None:
    """(tag, ISO date) of the latest ``v*`` tag before this release, or None: reachable from HEAD,
    or from its parent when HEAD is itself the tagged release (the release workflow runs there)."""
    tagged = subprocess.run(["git", "tag", "--points-at", "HEAD", "--list", "v*"], cwd=cwd,
                            capture_output=True, text=True).stdout.strip()
    tag = subprocess.run(["git", "describe", "--tags", "--abbrev=0", "--match", "v*", "HEAD^" if tagged else "HEAD"],
                         cwd=cwd, capture_output=True, text=True)
    if tag.returncode != 0:
        return None
    name = tag.stdout.strip()
    date = subprocess.run(["git", "log", "-1", "--format=%cs", name], cwd=cwd, capture_output=True, text=True,
                          check=True).stdout.strip()
    return name, date


def _url(place: str, base: str) -> str:
    page, _, anchor = place.partition("#")
    return base + src_to_url(page) + (f"#{quote(anchor)}" if anchor else "")


def render(entries: list[dict], version: str, since: str | None, base: str) -> str:
    errata = base + "errata/"
    head = f"## {version}" if version else "## 更新"
    window = f"{since} 之后" if since else "全部"
    lines = [head, "",
             f"本版的内容更正（{window}，共 {len(entries)} 条）。完整的更正记录是网站的[勘误页]({errata})："
             "每条写明原来写的、现在写的和为什么。", ""]
    if not entries:
        lines += ["这一版没有改变读者所学内容的更正。", ""]
    by_chapter: dict[str, list[dict]] = {}
    for e in sorted(entries, key=lambda e: (e["id"][:4], e["date"])):
        by_chapter.setdefault(e["id"][:4], []).append(e)
    for chapter, group in by_chapter.items():
        title = f"第 {chapter[2:]} 章" if chapter.startswith("ch") and chapter[2:].isdigit() else chapter
        lines.append(f"### {title}")
        lines.append("")
        for e in group:
            lines.append(f"- **{e['now']}**（{e['date']}，[原文位置]({_url(e['page'], base)})，"
                         f"[勘误 {e['id']}]({errata}#{e['id']})）原来写的是：{e['was']}")
        lines.append("")
    return "\n".join(lines)


def notes(since: str | None = None, version: str = "", base: str | None = None, data_path: Path = DATA) -> str:
    entries = [e for e in load(data_path)["entries"] if since is None or e["date"] > since]
    return render(entries, version, since, edition_url(base))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.release_notes", description=__doc__.splitlines()[0])
    ap.add_argument("--since", help="only entries dated after this day (YYYY-MM-DD); default: the latest v* tag's date")
    ap.add_argument("--all", action="store_true", help="every entry, whatever the tags")
    ap.add_argument("--version", default="", help="the release's name, e.g. v0.2.0 (the heading)")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    since = args.since
    if since is None and not args.all:
        tag = last_tag_date()
        since = tag[1] if tag else None
    text = notes(since, args.version)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(f"release notes: {args.out} ({text.count(chr(10) + '- ')} entries{f' after {since}' if since else ''})",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
