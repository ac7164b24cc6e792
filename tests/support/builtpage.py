"""A built page's HTML tokenized once per worker, for the tests that read every built page.

Several static tests each walk all of site/ with their own ``HTMLParser`` (element counts, the
formulas' characters, the URLs a page loads). Tokenizing is most of that cost, so the tokens of
each file are kept and each test's parser is fed them again (:func:`replay`): its ``handle_*``
methods see what ``feed`` would have called, in the same order.
"""

from __future__ import annotations

import gc
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


@cache
def tokens(file: Path) -> tuple[tuple, ...]:
    """The tokens of one HTML file, as ``HTMLParser`` reports them (comments and declarations left out)."""
    recorder = _Recorder()
    gc.disable()  # the tokens are only ever added to: collecting while they pile up is wasted time
    try:
        recorder.feed(file.read_text(encoding="utf-8"))
        recorder.close()
    finally:
        gc.enable()
    return tuple(recorder.tokens)


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
