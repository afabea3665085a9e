#!/usr/bin/env bash
# Leave-one-catalogue-out, end to end: the held-out query files, the stock model's candidate
# dumps, then for each dev set a model trained without it (train.py), exported to int8
# (export.py) and dumped with the release binary (evaluate.py), and the report. Run by hand,
# never by CI: about 15 minutes a fold on this machine's 2 cores.
#
#   training/run-loco.sh [MINUTES_PER_FOLD]     (needs training/setup and a release build)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
minutes="${1:-8}"
py="../target/training/venv/bin/python"
base="../target/training/base"
work="../target/training"
$py data.py heldout "$work/heldout"
$py evaluate.py dump stock stock
for fold in toolbench_stb metatool toollens mcptoolbenchpp sealtools; do
  if [[ ! -f "$work/fold-$fold/onnx/model.onnx" ]]; then
    $py train.py --base "$base" --fold "$fold" --minutes "$minutes" --out "$work/fold-$fold/torch"
    $py export.py "$work/fold-$fold/torch" "$work/fold-$fold/onnx"
  fi
  $py evaluate.py dump "fold-$fold" "$work/fold-$fold/onnx/model.onnx"
  $py evaluate.py report
done
