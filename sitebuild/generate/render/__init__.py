"""Renderers: results → docs/generated/. Each module here that defines ``RENDERERS`` takes part.

A renderer is ``fn(results: list[dict], out_dir: Path) -> None``; ``results`` holds every
results file, validated once by :func:`snippets.results.load_all`, each with ``_file``.
A renderer picks its files by ``kind`` and, when there are none, still writes its outputs
(saying that there are no results yet), so that no page include breaks.
"""
