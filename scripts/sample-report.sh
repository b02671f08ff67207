#!/usr/bin/env bash
# Regenerates docs/sample-report/ from its own results files (one per GPU folder) with
# the shipped profiles' predictions, as `coalesce report --from ... --profile ...`
# renders them. Run it after changing the report's code, the model or a shipped
# profile, then commit docs/sample-report/; tests/sample_report.rs checks that the
# committed report is what this renders. The figures README.md and docs/*.md quote
# from it carry a marker naming their source (`87.7%<!-- q: h100 sgemm/interior cublas -->`,
# tests/quotes.rs says how); regenerating rewrites them too, and tests/quotes.rs fails
# when one differs. No GPU needed.
#
#   scripts/sample-report.sh           rewrite docs/sample-report/ and the figures quoted from it
#                                      (SAMPLE_SWEEP="FILE...": add runs at other sizes, see below)
#   scripts/sample-report.sh --check   render into a temporary folder and compare (exit 1 on a difference)
#   scripts/sample-report.sh --quotes  only rewrite the quoted figures from the committed results (no ptxas needed)
#   scripts/sample-report.sh --page    re-render from the committed results as they are, predictions kept (no
#                                      ptxas needed): after a change to the kernels' source or PTX, which the
#                                      page shows, that moves no prediction
set -euo pipefail
cd "$(dirname "$0")/.."
check=0
page=0
case "${1:-}" in
  --check) check=1 ;;
  --page) page=1 ;;
  --quotes)
    COALESCE_QUOTES=write cargo test --quiet -p coalesce --test quotes quoted_figures_are_the_sample_reports -- --nocapture
    exit ;;
  "") ;;
  *) echo "usage: scripts/sample-report.sh [--check | --quotes | --page]" >&2; exit 2 ;;
esac

# The predictions' residency comes from ptxas; without it they count threads only.
if [ "$page" = 0 ] && ! "${PTXAS:-ptxas}" --version >/dev/null 2>&1; then
  echo "ptxas not found: set PTXAS (pip install nvidia-cuda-nvcc-cu12); the predictions need it" >&2
  exit 1
fi
cargo build --release --quiet --bin coalesce
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Copies of the results files, so the report can replace the folder they sit in.
args=()
for f in docs/sample-report/*/results.json; do
  name=$(basename "$(dirname "$f")")
  cp "$f" "$tmp/$name.json"
  args+=(--from "$tmp/$name.json")
done
[ "${#args[@]}" -ge 4 ] || { echo "docs/sample-report: fewer than two results files" >&2; exit 1; }
# SAMPLE_SWEEP: runs at other sizes (`run --size/--shape --json` files), each added to
# its GPU's results; the results files written keep them for every later render.
# shellcheck disable=SC2086
for f in ${SAMPLE_SWEEP:-}; do
  [ -f "$f" ] || { echo "SAMPLE_SWEEP: no file $f" >&2; exit 1; }
  args+=(--from "$f")
done

profiles=(--profile H100 --profile H200)
[ "$page" = 1 ] && profiles=()
target/release/coalesce report "${args[@]}" "${profiles[@]}" --out "$tmp/report" --quiet >/dev/null

if [ "$check" = 1 ]; then
  if ! diff -r "$tmp/report" docs/sample-report >"$tmp/diff"; then
    head -n 40 "$tmp/diff" >&2
    echo "docs/sample-report differs from what this coalesce renders: run scripts/sample-report.sh" >&2
    exit 1
  fi
  echo "docs/sample-report: up to date"
else
  rm -rf docs/sample-report
  cp -r "$tmp/report" docs/sample-report
  echo "docs/sample-report: regenerated ($(find docs/sample-report -type f | wc -l) files)"
  COALESCE_QUOTES=write cargo test --quiet -p coalesce --test quotes quoted_figures_are_the_sample_reports -- --nocapture
fi
