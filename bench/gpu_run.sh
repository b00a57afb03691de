#!/usr/bin/env bash
# The capstone on a GPU, as one command, in well under ten minutes on a modern GPU:
#   1. `make gpu-check`: the default training on cuda, with its report (parity figures included);
#   2. the same with --bf16 (bf16 autocast, and its own bf16 figure);
#   3. the capstone's rows of `make bench`, GPU rows included (throughput against the CPU and
#      against nn.Transformer on the same GPU, time to >= 99% exact match);
#   4. the test suite's CUDA cases (dropout sites, parity).
# Each report is written to OUT (default runs/gpu): environment.txt, gpu-check.json,
# gpu-check-bf16.json, bench.json, cuda-tests.txt.
#
#   bash bench/gpu_run.sh
#   OUT=/somewhere bash bench/gpu_run.sh
#
# It uses the course's venv when there is one (make install); otherwise the python3 on PATH, with
# the library taken from lib/ (a GPU machine whose CUDA build of torch came with its image).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-runs/gpu}
mkdir -p "$OUT"
WORK=$(mktemp -d)
if [ -x .venv/bin/python ]; then
  PY=.venv/bin/python
else
  PY=python3
  export PYTHONPATH="$PWD/lib${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONUNBUFFERED=1

{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv || echo "nvidia-smi: not found"
  "$PY" -c "import sys, numpy, torch; print('python', sys.version.split()[0], '| numpy', numpy.__version__,
'| torch', torch.__version__, '| cuda', torch.version.cuda, '| available', torch.cuda.is_available())"
  nproc
} 2>&1 | tee "$OUT/environment.txt"

started=$(date +%s)
step() { echo; echo "== $1 ($(( $(date +%s) - started )) s)"; }

step "make gpu-check: the default training on cuda"
"$PY" -m encdec.capstone --device cuda --out "$WORK/gpu-check"
cp "$WORK/gpu-check/report.json" "$OUT/gpu-check.json"

step "the same with bf16 autocast"
"$PY" -m encdec.capstone --device cuda --bf16 --out "$WORK/gpu-check-bf16"
cp "$WORK/gpu-check-bf16/report.json" "$OUT/gpu-check-bf16.json"

step "make bench, the capstone's rows (GPU included)"
"$PY" bench/run.py capstone
cp bench/results.json "$OUT/bench.json"

step "the tests' CUDA cases"
"$PY" -m pytest -q -p no:cacheprovider -k "cuda or report_has_every_field or bf16" tests/test_dropout.py tests/test_capstone.py tests/test_model.py \
  2>&1 | tee "$OUT/cuda-tests.txt" || true

step "done"
rm -rf "$WORK"
