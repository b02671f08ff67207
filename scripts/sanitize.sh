#!/usr/bin/env bash
# Runs every kernel at awkward sizes (`coalesce check`) under compute-sanitizer's
# memcheck, initcheck and synccheck, and the shared-memory kernels (transpose, sgemm)
# under racecheck. Ends with one line per tool: launches checked, errors found.
#   scripts/sanitize.sh [COALESCE_BINARY]   (default: gpu-bundle/coalesce, else target/release/coalesce)
# Logs go to $OUT (default ./gpu-out). Exit status: 0 only if every tool found 0 errors.
set -uo pipefail
cd "$(dirname "$0")/.."
bin=${1:-}
if [ -z "$bin" ]; then
  for c in gpu-bundle/coalesce target/release/coalesce; do [ -x "$c" ] && bin=$c && break; done
fi
[ -x "${bin:-}" ] || { echo "sanitize: no coalesce binary (build with cargo build --release or scripts/gpu-bundle.sh)"; exit 2; }
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
[ -x "$sanitizer" ] || { echo "sanitize: compute-sanitizer not found (install the CUDA toolkit)"; exit 2; }
out=${OUT:-gpu-out}
mkdir -p "$out"
status=0
summary=()
for tool in memcheck initcheck synccheck racecheck; do
  experiments=()
  [ "$tool" = racecheck ] && experiments=(transpose sgemm)
  log="$out/sanitize-$tool.log"
  "$sanitizer" --tool "$tool" --error-exitcode 99 --print-limit 20 "$bin" check "${experiments[@]}" >"$log" 2>&1
  rc=$?
  launches=$(grep -oE '^check: [0-9]+ launches' "$log" | grep -oE '[0-9]+' || echo 0)
  failed=$(grep -oE '[0-9]+ failed$' "$log" | grep -oE '[0-9]+' || echo "?")
  # memcheck & co: "ERROR SUMMARY: N errors"; racecheck: "RACECHECK SUMMARY: ... (N errors, M warnings)".
  errors=$(grep -oE 'ERROR SUMMARY: [0-9]+|\([0-9]+ errors' "$log" | grep -oE '[0-9]+' | tail -n 1)
  [ -n "$errors" ] || errors="?"
  [ "$rc" = 0 ] && [ "$errors" = 0 ] || status=1
  summary+=("$tool: ${launches} validated launches (${failed} failed validation), ${errors} errors (exit $rc)")
done
printf '%s\n' "${summary[@]}" | tee "$out/sanitize-summary.txt"
exit $status
