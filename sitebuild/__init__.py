"""The machinery that builds the site, apart from what readers copy (``snippets/``) and from the tests.

- :mod:`sitebuild.figures`  ``results/*.json`` → ``docs/generated/`` (every renderer in :mod:`sitebuild.render`)
- :mod:`sitebuild.claims`   the claims page: ``@pytest.mark.claim`` markers in ``tests/`` (read as text) → ``docs/generated/verification-table.md``
- :mod:`sitebuild.config`   the effective ``mkdocs.yml`` (``mkdocs.config.load_config``) and its nav
- :mod:`sitebuild.hooks`    MkDocs hooks (the offline edition's iframe-worker shim)
- :mod:`sitebuild.mathrender` MkDocs hook: every formula typeset at build time (``katex_render.mjs``, one Node process)
- :mod:`sitebuild.offline`  ``make offline``: ``site-offline/`` and ``dist/site-offline.zip``
- :mod:`sitebuild.audit`    ``make audit``: Lighthouse over every chapter page
- :mod:`sitebuild.screenshots` ``make screenshots``: every page at 390/1280 px, light and dark, to look at
- :mod:`sitebuild.browser`  Debian's Chromium under playwright, and a fresh build served for it
- :mod:`sitebuild.serve`    the one local static server (optionally gzip, as GitHub Pages serves)

Nothing here imports from ``tests/``; the tests import from here.
"""
