"""One local static server for a built site: plain, or with gzip as GitHub Pages serves text.

Used by ``make audit`` and by the browser tests (never by the site itself).
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import http.server
import io
import socket
import threading
from pathlib import Path

# What GitHub Pages sends gzipped (text); fonts (woff2) and PNGs go as they are.
GZIP_SUFFIXES = {".html", ".css", ".js", ".json", ".svg", ".xml", ".txt", ".map", ".ipynb"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep logs readable
        pass


class GzipHandler(QuietHandler):
    """Serves text with ``Content-Encoding: gzip`` when the client accepts it."""

    def send_head(self):
        path = Path(self.translate_path(self.path))
        if path.is_dir() and self.path.split("?")[0].endswith("/"):
            path = path / "index.html"
        accepts = "gzip" in self.headers.get("Accept-Encoding", "")
        if not (accepts and path.is_file() and path.suffix in GZIP_SUFFIXES):
            return super().send_head()
        body = gzip.compress(path.read_bytes(), 6)
        self.send_response(200)
        self.send_header("Content-Type", self.guess_type(str(path)))
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        return io.BytesIO(body)


class SharedPortServer(http.server.ThreadingHTTPServer):
    """Binds with SO_REUSEPORT, so that several processes can serve the same files on one port
    (the test workers share one build, whose site_url names one origin)."""

    allow_reuse_port = True


@contextlib.contextmanager
def serve(directory: Path, port: int | None = None, compress: bool = False, shared: bool = False):
    """Serve ``directory`` on 127.0.0.1 in a background thread; yields the base URL.

    ``shared``: other processes may serve the same directory on the same port at the same time.
    """
    port = port or free_port()
    handler = functools.partial(GzipHandler if compress else QuietHandler, directory=str(directory))
    server_class = SharedPortServer if shared else http.server.ThreadingHTTPServer
    server = server_class(("127.0.0.1", port), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        server.shutdown()
        server.server_close()
