"""The search expectations (search_queries.json): queries readers type, and the page each must find."""

from __future__ import annotations

import json
from pathlib import Path

QUERIES_FILE = Path(__file__).with_name("search_queries.json")


def load_queries() -> dict:
    return json.loads(QUERIES_FILE.read_text(encoding="utf-8"))
