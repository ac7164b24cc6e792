# Two commands on a fresh machine: `make serve` (site on http://127.0.0.1:8000/transformer-paper-reading/)
# and `make test`.
# Every target can be run again; stamps make a second run reinstall nothing.

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000
DEVICE ?= cpu
PRESET ?= full
export NO_MKDOCS_2_WARNING := 1
export PYTHONHASHSEED := 0

# Test workers (pytest-xdist): one more than the cores, at most 4. The browser tests spend part
# of their time waiting on Chromium, so a third worker on a 2-core machine keeps both cores busy.
# They share one site build, one visit of each page and one PDF (tests/support/shared.py).
# worksteal: a worker that runs out takes queued tests from the others. With xdist's default
# (load), the last chunk handed to one worker held the notebook runs, and that worker ran alone
# for its last three minutes (tools/history.md, 2026-12-04).
TEST_JOBS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); n=$$((n + 1)); [ $$n -gt 4 ] && n=4; echo $$n)
XDIST := -n $(TEST_JOBS) --dist worksteal
# The fast tier has no browser to wait on: one worker per core (at most 4), since each extra
# worker pays its own collection (torch, matplotlib) on the same cores.
FAST_JOBS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); [ $$n -gt 4 ] && n=4; echo $$n)

KATEX_DIR := docs/assets/katex
VENV_STAMP := $(VENV)/.stamp-installed
NODE_STAMP := node_modules/.stamp-installed
KATEX_STAMP := $(KATEX_DIR)/.stamp-copied

.PHONY: setup figures build serve test test-fast test-browser test-gpu chapter probes experiments copy-task offline audit screenshots pdf deck release-notes clean

setup: $(VENV_STAMP) $(NODE_STAMP) $(KATEX_STAMP)

$(VENV_STAMP): requirements.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip install -q --no-deps --no-build-isolation -e .
	touch $@

$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $@

# KaTeX's stylesheet and its woff2 fonts are served from the site itself (every browser
# that runs the site reads woff2); the stylesheet's .woff/.ttf sources, which are not
# shipped, are cut from its @font-face rules. No KaTeX script: math is typeset at build
# time (sitebuild/hooks/mathrender.py, with node_modules/katex).
$(KATEX_STAMP): $(NODE_STAMP) Makefile
	rm -rf $(KATEX_DIR)
	mkdir -p $(KATEX_DIR)/fonts
	sed -E 's/,url\(fonts\/[A-Za-z0-9_-]+\.(woff|ttf)\) format\("(woff|truetype)"\)//g' \
	  node_modules/katex/dist/katex.min.css > $(KATEX_DIR)/katex.min.css
	cp node_modules/katex/dist/fonts/*.woff2 $(KATEX_DIR)/fonts/
	touch $@

# results/*.json -> docs/generated/ (figures, measured tables, the claims page). The figures are
# rendered again only when an input changed (sitebuild/generate/figures.py: --force renders anyway).
figures: $(VENV_STAMP)
	$(PY) -m sitebuild.generate.figures

build: setup figures
	$(VENV)/bin/mkdocs build --strict

serve: build
	$(VENV)/bin/mkdocs serve --dev-addr $(HOST):$(PORT)

# The suite in tiers (tests/README.md): test-fast decides what the code and the built HTML decide
# (no Chromium, no training runs); test-browser keeps what needs a layout engine or a click; make
# test is both, the training smoke runs and the notebooks included, in one run whose JUnit report
# (+ test-output/run.json, tests/conftest.py) is what the verification pages report.
# MARK="not browser" (or any -m expression) runs a part of it, as CI's two jobs do (.ci/run).
# Every target keeps bytecode (__pycache__/, git-ignored) even where PYTHONDONTWRITEBYTECODE is
# set: pytest then rewrites the asserts of each test module once, not in every worker every run.
PYTEST := PYTHONDONTWRITEBYTECODE= $(VENV)/bin/pytest --codeblocks tests docs $(XDIST)

test: setup figures
	$(PYTEST) $(if $(MARK),-m "$(MARK)") --junitxml=test-output/junit.xml

test-fast: setup figures
	$(PYTEST) -m "not browser and not slow" -n $(FAST_JOBS)

test-browser: setup figures
	$(PYTEST) -m browser

# On a CUDA machine with the venv: every reader-code test that takes the `device` fixture runs on the GPU
# (the contract suite tests/contract/ and the chapter tests of 03, 04, 07, 12, 13 that build tensors), plus
# the CUDA-only probe tests. --device cuda fails at start when CUDA is absent (conftest.py): no silent skips.
test-gpu: $(VENV_STAMP)
	PYTHONDONTWRITEBYTECODE= $(VENV)/bin/pytest --device cuda -m "not browser and not slow" -rs tests/contract tests/ch03 tests/ch04 tests/ch07 tests/ch12 tests/ch13 tests/probes/test_probes_cli.py::test_cuda_walltime_tiny tests/probes/test_probes_memory.py

# Measurements (wall time is measured here, never asserted in a test).
probes: $(VENV_STAMP)
	$(PY) -m snippets.probes --device $(DEVICE) --preset $(PRESET)
	$(PY) -m snippets.probes.inference --device $(DEVICE) --preset $(PRESET)
	$(PY) -m snippets.probes.long_context --device $(DEVICE) --preset $(PRESET)

# Every experiment in snippets/experiments/ (training runs on the CPU): results/<kind>.json.
experiments: $(VENV_STAMP)
	$(PY) -m snippets.experiments --preset $(PRESET)

copy-task: $(VENV_STAMP)
	$(PY) -m snippets.experiments.copy_task --preset $(PRESET)

# A new chapter's skeleton, started the same way every time (tools/new_chapter.py): its four pages and
# questions.md, a first claim test that fails until replaced, its nav entry and TERMS for jieba.
# make chapter NN=07 SLUG=positional-encoding TITLE="位置编码：从正弦到 RoPE" [TERMS="正弦位置编码"]
chapter: $(VENV_STAMP)
	$(PY) -m tools.new_chapter --number "$(NN)" --slug "$(SLUG)" --title "$(TITLE)" $(if $(TERMS),--terms "$(TERMS)")

clean:
	rm -rf site site-offline dist docs/generated $(KATEX_DIR) test-output lighthouse .pytest_cache .cache/katex

# The offline edition: site-offline/ (open index.html from disk, search included) and
# dist/site-offline.zip. Built from mkdocs-offline.yml (Material's offline plugin).
offline: setup figures
	$(PY) -m sitebuild.editions.offline

# Full-page pictures of every page at 390 and 1280 px, light and dark (test-output/screenshots/),
# to look at before calling a page done. PAGES="01-why-attention home" takes only those.
screenshots: setup figures
	$(PY) -m tools.screenshots $(PAGES)

# The PDF edition: dist/transformer-paper-reading.pdf, printed from a fresh strict build by
# Chromium (A4, page numbers, bookmarks). Needs a Chinese TrueType font (fonts-wqy-microhei).
pdf: setup figures
	$(PY) -m sitebuild.editions.pdf

# The interview deck: dist/deck.apkg (Anki: 文件 → 导入; a newer deck updates the notes) and dist/deck.tsv.
deck: setup
	$(PY) -m sitebuild.editions.deck

# Release notes from the errata (docs/errata.yml, the changelog readers see): dist/release-notes.md, the
# entries since the latest v* tag (SINCE=YYYY-MM-DD to choose), linked to the published site.
release-notes: $(VENV_STAMP)
	$(PY) -m tools.release_notes $(if $(SINCE),--since $(SINCE)) $(if $(VERSION),--version $(VERSION))

# Phone performance of every chapter page, the question bank and the home page, from a fresh
# build served with gzip: a tracing-free field harness (4x CPU, slow 4G, 412 px) beside
# stock Lighthouse 12.2.3 against the build served as a static host serves it (keep-alive, gzip),
# median of RUNS=3, and a traced breakdown of the first chapter: lighthouse/summary.md.
# A benchmark on this machine, not a test. PAGES="06-embeddings-tokens" RUNS=1 for a quick look.
audit: setup figures
	$(PY) -m tools.audit
