"""Experiments built on the reader's code: each module trains or measures one thing a page claims.

Every module has ``KIND`` and ``main(argv) -> int`` with ``--preset full|quick|tiny`` and ``--out``,
and writes ``results/<kind>.json`` through :mod:`snippets.results` (validated against
``results/schema/<kind>.schema.json``). ``python -m snippets.experiments`` runs them all (full or
quick). Four pages cite a longer budget, run on its own (each up to about 20 minutes on 2 cores):
``heads --preset long``, ``embedding_scale --preset long``, ``postln_warmup --preset sweep`` and
``length_generalization --preset long``.
"""
