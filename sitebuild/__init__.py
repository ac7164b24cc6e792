"""Everything that builds the site, apart from what readers copy (``snippets/``), the tests and the tools.

- ``sitebuild/config.py``, ``sitebuild/questions.py``, ``sitebuild/refpages.py``: the effective
  ``mkdocs.yml`` and its pages; the one parser of ``docs/chapters/*/questions.md``; the layout of the
  verification list and the question bank, an index and a page per chapter (``verification/ch01/``).
- ``sitebuild/hooks/``: MkDocs hooks, named under ``hooks:`` in ``mkdocs.yml``; they run inside every build.
- ``sitebuild/generate/``: ``make figures``: ``results/*.json`` and the claim markers in ``tests/`` →
  ``docs/generated/`` (``figures.py`` runs every renderer in ``render/``; ``claims.py`` writes the
  verification pages; ``notebooks.py`` executes the companion notebooks).
- ``sitebuild/editions/``: the offline zip, the PDF and the Anki deck (``make offline|pdf|deck``).
- ``sitebuild/serve.py``, ``sitebuild/browser.py``: the local static server and Debian's Chromium,
  shared by the PDF edition, the tests and ``tools/``.

Nothing here imports from ``tests/`` or ``tools/``.
"""
