#!/usr/bin/env bash
# Leave-one-catalogue-out, end to end: the held-out query files, the stock model's candidate
# dumps, then for each dev set a model trained without it (train.py), exported to int8
# (export.py) and dumped with the release binary (evaluate.py), and the report. Run by hand,
# never by CI: about 15 minutes a fold on this machine's 2 cores.
#
#   training/run-loco.sh [MINUTES_PER_FOLD]     (needs training/setup and a release build)
#
# Environment: MINE=hybrid mines hard negatives by the stock hybrid ranking (default dense);
# PREFIX names the folds' directories (default "fold"; report with `evaluate.py report PREFIX`);
# FOLDS chooses and orders the folds (the weakest first stops a losing recipe early); STEPS
# caps each fold's steps (with a long enough budget, a fixed number of steps: comparable runs
# even when the cores are shared).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
minutes="${1:-8}"
mine="${MINE:-dense}"
prefix="${PREFIX:-fold}"
folds="${FOLDS:-toolbench_stb metatool toollens mcptoolbenchpp sealtools}"
py="../target/training/venv/bin/python"
base="../target/training/base"
work="../target/training"
$py data.py heldout "$work/heldout"
$py evaluate.py dump stock stock
for fold in $folds; do
  d="$work/$prefix-$fold"
  if [[ ! -f "$d/onnx/model.onnx" ]]; then
    $py train.py --base "$base" --fold "$fold" --minutes "$minutes" --mine "$mine" --steps "${STEPS:-0}" --out "$d/torch"
    $py export.py "$d/torch" "$d/onnx"
  fi
  $py evaluate.py dump "$prefix-$fold" "$d/onnx/model.onnx"
  $py evaluate.py report "$prefix"
done
