#!/usr/bin/env bash
# Runs on the GPU machine over a bundle made by scripts/gpu-bundle.sh:
#   scripts/gpu-run.sh [STAGE...]     stages: tests suite check sanitize compare (default: tests suite)
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
    compare)
      # Rust against the CUDA C++ twins (NVRTC) and cuBLAS, then the PTX of both
      # sides, assembled to SASS where the toolkit has ptxas and cuobjdump, in one
      # tarball (compare-ptx.tar.gz: ptx/*.ptx, *.sass, ptxas.log with -v output).
      ptx="$out/ptx"
      rm -rf "$ptx"
      "$bundle/coalesce" compare --dump-ptx "$ptx" --json "$out/compare.json" >"$out/compare.txt" 2>&1 || status=1
      cat "$out/compare.txt"
      if [ -d "$ptx" ] && command -v ptxas >/dev/null && command -v cuobjdump >/dev/null; then
        sm=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d ' .')
        sm=${sm:-90}
        for f in "$ptx"/*.ptx; do
          echo "== $(basename "$f") -> sm_$sm" >>"$ptx/ptxas.log"
          ptxas -v -O3 -arch="sm_$sm" "$f" -o "${f%.ptx}.cubin" >>"$ptx/ptxas.log" 2>&1 &&
            cuobjdump -sass "${f%.ptx}.cubin" >"${f%.ptx}.sass" 2>>"$ptx/ptxas.log"
          rm -f "${f%.ptx}.cubin"
        done
      fi
      [ -d "$ptx" ] && tar czf "$out/compare-ptx.tar.gz" -C "$out" ptx && rm -rf "$ptx"
      # The GPU tests of compare: twins at awkward sizes, cuBLAS, a small comparison.
      for t in "$bundle"/test-*-compare; do
        [ -x "$t" ] || continue
        "$t" --include-ignored --test-threads=1 >"$out/compare-tests.log" 2>&1 || { status=1; echo "FAILED: $t"; }
        grep -E "^test result|FAILED|panicked" "$out/compare-tests.log"
      done
      ;;
    *)
      echo "unknown stage $stage (tests, suite, check, sanitize, compare)"; status=2 ;;
  esac
done
exit $status
