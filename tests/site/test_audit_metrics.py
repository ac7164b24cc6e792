"""The arithmetic behind `make audit` (tools/fieldperf.py, tools/tracebreakdown.py) on
made-up inputs; the audit itself is a benchmark and is never run by the suite."""

from __future__ import annotations

import pytest

from tools.fieldperf import cumulative_layout_shift
from tools.tracebreakdown import summarise


def test_cls_is_the_largest_session_window():
    # two shifts 0.5 s apart form one window (0.2); the one 1.5 s later starts another (0.05)
    assert cumulative_layout_shift([(0, 0.1, []), (500, 0.1, []), (2000, 0.05, [])]) == pytest.approx(0.2)
    # a shift every 0.9 s: a window closes after 5 s, so 6 shifts (0 … 4.5 s), then 2 more
    steady = [(900 * i, 0.1, []) for i in range(8)]
    assert cumulative_layout_shift(steady) == pytest.approx(0.6)
    assert cumulative_layout_shift([]) == 0.0


def _x(name, ts, dur, **data):
    """A complete trace event on the page's main thread (pid 1, tid 1), times in µs."""
    return {"name": name, "ph": "X", "pid": 1, "tid": 1, "ts": ts, "dur": dur, "args": {"data": data}}


def test_trace_self_time_by_kind_before_and_after_first_paint():
    events = [
        _x("RunTask", 0, 100_000),                       # before FCP: 100 ms, 60 of it parsing
        _x("ParseHTML", 10_000, 60_000),
        {"name": "firstContentfulPaint", "ph": "I", "pid": 1, "tid": 1, "ts": 200_000},
        _x("RunTask", 300_000, 400_000),                 # after FCP: the bundle, forcing style and layout
        _x("EvaluateScript", 300_000, 390_000, url="http://127.0.0.1/assets/javascripts/bundle.js"),
        _x("UpdateLayoutTree", 310_000, 150_000),
        _x("Layout", 470_000, 100_000),
        {"name": "RunTask", "ph": "X", "pid": 2, "tid": 1, "ts": 0, "dur": 900_000},  # another process
    ]
    s = summarise(events)
    assert s["fcp_ms"] == 200
    assert s["totals"]["before FCP"] == {"parse HTML": 60, "other": 40}
    assert s["totals"]["after FCP"] == {"style": 150, "script bundle.js": 140, "layout": 100, "other": 10}
    assert s["long_tasks"] == [
        {"start_ms": 300, "ms": 400, "inside": {"style": 150, "script bundle.js": 140, "layout": 100, "other": 10}},
        {"start_ms": 0, "ms": 100, "inside": {"parse HTML": 60, "other": 40}},
    ]


def test_the_audit_serves_the_site_as_a_static_host_does(tmp_path):
    """Lighthouse's simulation replays the connections it saw: the audit's server keeps them
    open (HTTP/1.1) and sends text gzipped, with a length, as GitHub Pages does."""
    import gzip
    import http.client

    from sitebuild.serve import free_port
    from tools.audit import static_host

    (tmp_path / "page").mkdir()
    (tmp_path / "page" / "index.html").write_text("<p>第 1 章</p>" * 100, encoding="utf-8")
    (tmp_path / "font.woff2").write_bytes(b"\0" * 64)
    port = free_port()
    with static_host(tmp_path, port):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/page/", headers={"Accept-Encoding": "gzip"})
        first = conn.getresponse()
        body = first.read()
        assert first.version == 11 and not first.will_close
        assert first.getheader("Content-Encoding") == "gzip"
        assert int(first.getheader("Content-Length")) == len(body)
        assert gzip.decompress(body).decode() == "<p>第 1 章</p>" * 100
        conn.request("GET", "/font.woff2", headers={"Accept-Encoding": "gzip"})  # on the same connection
        font = conn.getresponse()
        assert font.getheader("Content-Encoding") is None and font.read() == b"\0" * 64
        conn.close()
