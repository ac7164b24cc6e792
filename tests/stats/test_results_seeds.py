"""Every results kind says where its per-seed values live, or why it is a single run by design
(the schema's "x-seeds" annotation), and every committed file of a per-seed kind holds those values
for at least two seeds: a page can only compare arms whose seeds it can pair."""

from __future__ import annotations

import json

import pytest

from snippets.results import RESULTS_DIR, SCHEMA_DIR, load_all

SCHEMAS = sorted(p for p in SCHEMA_DIR.glob("*.schema.json") if p.name != "provenance.schema.json")


def x_seeds(kind: str) -> dict:
    return json.loads((SCHEMA_DIR / f"{kind}.schema.json").read_text(encoding="utf-8")).get("x-seeds")


def resolve(data, path: str) -> list:
    """'runs[].seed' → every runs[i]['seed'] (a '[]' after a key walks each element of its list)."""
    nodes = [data]
    for part in path.split("."):
        key, each = (part[:-2], True) if part.endswith("[]") else (part, False)
        nodes = [n[key] for n in nodes if isinstance(n, dict) and key in n]
        if each:
            nodes = [item for n in nodes for item in n]
    return nodes


@pytest.mark.parametrize("schema", SCHEMAS, ids=lambda p: p.name.removesuffix(".schema.json"))
def test_every_kind_says_how_it_treats_seeds(schema):
    seeds = json.loads(schema.read_text(encoding="utf-8")).get("x-seeds")
    assert isinstance(seeds, dict) and len(seeds) == 1, f"{schema.name}: add \"x-seeds\" (per-seed paths or single-run and why)"
    (how, what), = seeds.items()
    assert how in ("per-seed", "single-run")
    if how == "per-seed":
        assert what and all(isinstance(p, str) and p.endswith("seed") for p in what)
    else:
        assert isinstance(what, str) and len(what) > 20, "say why the kind is a single run"


COMMITTED = [r for r in load_all() if "per-seed" in (x_seeds(r["kind"]) or {})]


@pytest.mark.parametrize("result", COMMITTED, ids=lambda r: r["_file"].removeprefix("results/"))
def test_committed_per_seed_files_hold_two_seeds_or_more(result):
    for path in x_seeds(result["kind"])["per-seed"]:
        seeds = resolve(result, path)
        assert seeds, f"{result['_file']}: nothing at {path}"
        assert all(isinstance(s, int) for s in seeds), f"{result['_file']}: {path} must be integer seeds"
        assert len(set(seeds)) >= 2, f"{result['_file']}: {path} has one seed ({set(seeds)}): nothing to pair"


def test_resolve_walks_lists():
    data = {"runs": [{"seed": 0}, {"seed": 1}], "p": {"rows": [{"per_seed": [{"seed": 3}, {"seed": 4}]}]}}
    assert resolve(data, "runs[].seed") == [0, 1]
    assert resolve(data, "p.rows[].per_seed[].seed") == [3, 4]
    assert resolve(data, "missing[].seed") == []


def test_every_committed_file_has_a_schema_with_x_seeds():
    kinds = {json.loads(p.read_text(encoding="utf-8"))["kind"] for p in RESULTS_DIR.glob("*.json")}
    assert all(x_seeds(k) for k in kinds)
