#!/usr/bin/env bash
# Runs on the GPU machine over a bundle made by scripts/gpu-bundle.sh:
#   scripts/gpu-run.sh [STAGE...]     stages: tests suite check sanitize broken (default: tests suite)
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
    broken)
      # The deliberately wrong kernels (tests/broken-kernels): each must fail validation,
      # commands running one must exit 1, a fault must be one clean error line, and
      # racecheck must flag the tile without its barrier.
      t=$(ls "$bundle"/test-*-broken_gpu 2>/dev/null | head -n 1)
      if [ -z "$t" ]; then
        echo "broken: no broken_gpu test binary in $bundle (scripts/gpu-bundle.sh builds it)"; status=1; continue
      fi
      "$t" --include-ignored --test-threads=1 --nocapture >"$out/broken.log" 2>&1 || status=1
      grep -E "^test |^test result| ok=|^the fault|^(library|check|run)[^:]*: exit|^error: " "$out/broken.log"
      sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
      if [ -x "$sanitizer" ]; then
        "$sanitizer" --tool racecheck --error-exitcode 99 "$t" --include-ignored --exact \
          racecheck_target_the_unsynchronised_tile >"$out/broken-racecheck.log" 2>&1
        rc=$?
        grep -E "SUMMARY" "$out/broken-racecheck.log"
        hazards=$(grep -oE 'RACECHECK SUMMARY: [0-9]+' "$out/broken-racecheck.log" | grep -oE '[0-9]+$' | tail -n 1)
        if [ "$rc" = 99 ] || [ "${hazards:-0}" -gt 0 ]; then
          echo "broken: racecheck flagged transpose_tiled_no_barrier (${hazards:-?} hazards, exit $rc)"
        else
          echo "broken: racecheck did NOT flag transpose_tiled_no_barrier (exit $rc)"; status=1
        fi
      fi
      ;;
    *)
      echo "unknown stage $stage (tests, suite, check, sanitize, broken)"; status=2 ;;
  esac
done
exit $status
