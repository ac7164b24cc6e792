#!/usr/bin/env bash
# Every GPU probe in one run, on a machine that has torch with CUDA but no package registry and
# no `make setup` (a lent GPU machine): chapter 13's long-context probes, chapter 12's inference
# probes, chapter 01's complexity probes, then the CUDA-only tests, then the reader-code tests on CUDA
# (`make test-gpu`'s pytest line: the contract suite and chapters 03, 04, 07, 12, 13 under --device cuda); each probe writes
# results/<name>-cuda-<gpu>.json (what `make probes DEVICE=cuda` writes on a machine with the venv),
# each copied to $OUT (if set) as soon as it is written.
# Each step has its own time limit, so that one slow step still leaves the others' files. On an H200
# (2026-12-04) the tests took 47 s, inference 50 s and long context 12 s; chapter 01's probes did not
# finish in 270 s, nor in 420 s on a second run (the recurrent layers' Python loops dominate the CUDA
# wall-time sweep); with the recurrent sizes cut (2026-12-04, third run) they took 230 s, so give them
# a call of their own: STEPS=ch01 CH01_LIMIT=400 (it prints a line per probe and per repeat).
#
#   PY=python3 PRESET=full [CH01_LIMIT=seconds] [STEPS="tests gpu-tests ch01 ch12 ch13"] bash tools/device_probes.sh
#
# STEPS picks the steps (all five by default), so that a short lease can skip a chapter whose GPU
# file is already committed.
#
# The results' provenance names the git commit: the checkout's .git must be there, and clean.
set -u
PY=${PY:-python3}
PRESET=${PRESET:-full}
DEVICE=${DEVICE:-cuda}
export PYTHONUNBUFFERED=1

"$PY" -c 'import torch, sys; print("torch", torch.__version__, "cuda", torch.version.cuda,
      torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU"); import jsonschema, tqdm' || exit 1
git config core.fileMode false  # a copied checkout can lose the executable bits
git rev-parse --short HEAD || exit 1
git status --porcelain --untracked-files=no | grep . && echo "tracked files differ from HEAD" && exit 1

status=0
step() {  # seconds, then the command
  local limit=$1; shift
  echo "== $* (at most ${limit} s)"
  local start=$SECONDS
  timeout "$limit" "$@" || { echo "!! exit $? after $((SECONDS - start)) s: $*"; status=1; }
  echo "== $((SECONDS - start)) s"
  if [ -n "${OUT:-}" ]; then cp results/*"$DEVICE"-*.json "$OUT"/ 2>/dev/null; fi
}

wants() { case " ${STEPS:-tests gpu-tests ch01 ch12 ch13} " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

wants ch13 && step 45 "$PY" -m snippets.probes.long_context --device "$DEVICE" --preset "$PRESET" --no-progress
wants ch12 && step 120 "$PY" -m snippets.probes.inference --device "$DEVICE" --preset "$PRESET" --no-progress
wants ch01 && step "${CH01_LIMIT:-400}" "$PY" -m snippets.probes --device "$DEVICE" --preset "$PRESET" --no-progress
if [ "$DEVICE" = cuda ] && wants tests; then
  step 90 "$PY" -m pytest -q --noconftest -p no:cacheprovider -rs \
    tests/probes/test_probes_cli.py::test_cuda_walltime_tiny tests/probes/test_probes_memory.py
fi
if [ "$DEVICE" = cuda ] && wants gpu-tests; then  # with the conftests: --device is declared in conftest.py
  step 180 "$PY" -m pytest -q -p no:cacheprovider -rs --device cuda -m "not browser and not slow" \
    tests/contract tests/ch03 tests/ch04 tests/ch07 tests/ch12 tests/ch13
fi
exit $status
