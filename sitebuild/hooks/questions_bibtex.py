"""MkDocs hook (``hooks:`` in mkdocs.yml and mkdocs-offline.yml) for the site's editions.

* Every included ``questions.md`` gets stable question anchors (``q-N-M``), through
  :class:`sitebuild.questions.QuestionAnchorsExtension`.
* Every chapter page ends with a BibTeX entry (chapter title, site URL, year, commit), written
  at build time from git; it is added in ``on_post_page``, after the search plugin has read the
  page, so citations stay out of the search index.
"""

from __future__ import annotations

import html
import re
import subprocess
from datetime import datetime, timezone
from functools import cache

from sitebuild.questions import ROOT, QuestionAnchorsExtension

CHAPTER_SRC = re.compile(r"chapters/(\d{2})-([^/]+)/index\.md")
AUTHOR = "Transformer 论文精读 · 可验证版 贡献者"


@cache
def git_revision() -> tuple[str, str]:
    """(short commit, commit year) of HEAD, "+" after the commit when the tree has changes;
    ("未提交", this year) without git."""
    try:
        out = subprocess.run(["git", "log", "-1", "--format=%h %cs"], cwd=ROOT, capture_output=True,
                             text=True, check=True, timeout=30).stdout.split()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True, check=True, timeout=30).stdout.strip()
        return out[0] + ("+" if dirty else ""), out[1][:4]
    except (OSError, subprocess.SubprocessError, IndexError):
        return "未提交", str(datetime.now(timezone.utc).year)


def bibtex(number: str, title: str, url: str, site_name: str) -> str:
    commit, year = git_revision()
    key = f"transformer-paper-reading-ch{number}"
    fields = [
        ("author", f"{{{AUTHOR}}}"),
        ("title", f"{{{title}}}"),
        ("howpublished", f"{{{site_name}}}"),
        ("url", f"{{{url}}}"),
        ("year", f"{{{year}}}"),
        ("note", f"{{commit {commit}}}"),
    ]
    body = ",\n".join(f"  {name} = {value}" for name, value in fields)
    return f"@misc{{{key},\n{body}\n}}"


def cite_block(page, config) -> str:
    m = CHAPTER_SRC.fullmatch(page.file.src_uri)
    title = re.sub(r"\s+", " ", (page.title or "").replace("\u3000", " ")).strip()
    url = (config["site_url"] or "") + page.url
    entry = bibtex(m.group(1), title, url, config["site_name"])
    return ('<h2 id="cite">引用本章<a class="headerlink" href="#cite" title="Permanent link">¶</a></h2>\n'
            '<p>本章由 CI 验证的版本，可以这样引用（提交号与年份在构建时写入；整站的引用信息见仓库根目录的 '
            '<code>CITATION.cff</code>）：</p>\n'
            f'<pre class="bibtex"><code>{html.escape(entry)}</code></pre>\n')


def on_config(config, **kwargs):
    if not any(isinstance(e, QuestionAnchorsExtension) for e in config.markdown_extensions):
        config.markdown_extensions.append(QuestionAnchorsExtension())
    return config


def on_post_page(output: str, page, config, **kwargs) -> str:
    if not CHAPTER_SRC.fullmatch(page.file.src_uri):
        return output
    end = output.rfind("</article>")
    if end < 0:
        return output
    return output[:end] + cite_block(page, config) + output[end:]
