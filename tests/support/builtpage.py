"""A built page's HTML tokenized once per worker, for the tests that read every built page.

Several static tests each walk all of site/ with their own ``HTMLParser`` (element counts, the
formulas' characters, the URLs a page loads). Tokenizing is most of that cost, so the tokens of
each file are kept and each test's parser is fed them again (:func:`replay`): its ``handle_*``
methods see what ``feed`` would have called, in the same order.

Under pytest-xdist each worker has its own memory, so the tokens are also kept on disk in the run's
shared folder (:func:`share`, set by the ``built_pages`` fixture): :func:`warm` walks the pages
from one end in even workers and from the other in odd ones, so two workers that both need every
page tokenize each one about once and unpickle the rest (a tenth of the time).
"""

from __future__ import annotations

import gc
import hashlib
import os
import pickle
from functools import cache
from html.parser import HTMLParser
from pathlib import Path

START, STARTEND, END, DATA = range(4)


class _Recorder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tokens: list[tuple] = []

    def handle_starttag(self, tag, attrs) -> None:
        self.tokens.append((START, tag, attrs))

    def handle_startendtag(self, tag, attrs) -> None:
        self.tokens.append((STARTEND, tag, attrs))

    def handle_endtag(self, tag) -> None:
        self.tokens.append((END, tag, None))

    def handle_data(self, data) -> None:
        self.tokens.append((DATA, data, None))


_shared: Path | None = None  # where the workers of this run keep tokens (share)


def share(folder: Path) -> None:
    """Keep every file's tokens in ``folder`` too, for the other workers of this run."""
    global _shared
    folder.mkdir(parents=True, exist_ok=True)
    _shared = folder


@cache
def tokens(file: Path) -> tuple[tuple, ...]:
    """The tokens of one HTML file, as ``HTMLParser`` reports them (comments and declarations left out)."""
    kept = _shared / f"{hashlib.sha1(str(file.resolve()).encode()).hexdigest()}.pickle" if _shared else None
    gc.disable()  # the tokens are only ever added to: collecting while they pile up is wasted time
    try:
        if kept and kept.is_file():
            return pickle.loads(kept.read_bytes())
        recorder = _Recorder()
        recorder.feed(file.read_text(encoding="utf-8"))
        recorder.close()
    finally:
        gc.enable()
    found = tuple(recorder.tokens)
    if kept:  # written whole or not at all: another worker may read it at any moment
        partial = kept.with_name(f"{kept.name}.{os.getpid()}")
        partial.write_bytes(pickle.dumps(found, protocol=pickle.HIGHEST_PROTOCOL))
        os.replace(partial, kept)
    return found


def warm(files: list[Path], worker: int) -> list[Path]:
    """Tokenize ``files``, from the first in even workers and from the last in odd ones; returns them."""
    for file in files if worker % 2 == 0 else reversed(files):
        tokens(file)
    return files


def replay(parser: HTMLParser, file: Path) -> HTMLParser:
    """Call ``parser``'s handlers as ``parser.feed(file's text)`` would; returns ``parser``."""
    start, startend, end, data = (parser.handle_starttag, parser.handle_startendtag,
                                  parser.handle_endtag, parser.handle_data)
    for kind, a, b in tokens(file):
        if kind == DATA:
            data(a)
        elif kind == START:
            start(a, b)
        elif kind == END:
            end(a)
        else:
            startend(a, b)
    return parser
