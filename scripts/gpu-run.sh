#!/usr/bin/env bash
# Runs on the GPU machine over a bundle made by scripts/gpu-bundle.sh:
#   scripts/gpu-run.sh [STAGE...]     stages: tests suite check sanitize (default: tests suite)
# Logs and results go to $OUT (default ./gpu-out); the last thing printed is the table.
set -uo pipefail
cd "$(dirname "$0")/.."
bundle=gpu-bundle
out=${OUT:-gpu-out}
mkdir -p "$out"
stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=(tests suite)
status=0

export CARGO_BIN_EXE_coalesce=$PWD/$bundle/coalesce
[ -x /usr/local/cuda/bin/ptxas ] && export PTXAS=/usr/local/cuda/bin/ptxas
export PATH=$PATH:/usr/local/cuda/bin

nvidia-smi --query-gpu=name,driver_version,clocks.max.memory,memory.total --format=csv >"$out/nvidia-smi.csv" 2>&1 || true

for stage in "${stages[@]}"; do
  case $stage in
    tests)
      for t in "$bundle"/test-*; do
        echo "== $t --include-ignored" | tee -a "$out/tests.log"
        "$t" --include-ignored --test-threads=1 >>"$out/tests.log" 2>&1 || { status=1; echo "FAILED: $t" | tee -a "$out/tests.log"; }
      done
      grep -E "^test result|FAILED|panicked" "$out/tests.log"
      ;;
    suite)
      "$bundle/coalesce" run --json "$out/results.json" >"$out/table.txt" 2>"$out/suite.err" || status=1
      cat "$out/suite.err" "$out/table.txt"
      ;;
    check)
      "$bundle/coalesce" check >"$out/check.txt" 2>&1 || status=1
      tail -n 1 "$out/check.txt"
      ;;
    sanitize)
      OUT=$out scripts/sanitize.sh "$bundle/coalesce" || status=1
      ;;
    *)
      echo "unknown stage $stage (tests, suite, check, sanitize)"; status=2 ;;
  esac
done
exit $status
