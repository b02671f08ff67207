#!/usr/bin/env bash
# Runs on the GPU machine over a bundle made by scripts/gpu-bundle.sh:
#   scripts/gpu-run.sh [STAGE...]     stages: tests suite check sanitize ncu (default: tests suite)
# Logs and results go to $OUT (default ./gpu-out); the last thing printed is the table.
#   ncu: Nsight Compute counts each kernel's global sectors and requests and shared
#        wavefronts (one profile per EXPERIMENT/VARIANT at NCU_SIZE, default 4M; only
#        variants matching the regex NCU_ONLY, default all), then
#        `coalesce explain --against-ncu` prints predicted against measured.
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
    ncu)
      size=${NCU_SIZE:-4M}
      dir="$out/ncu"
      rm -rf "$dir" && mkdir -p "$dir"
      : >"$out/ncu.log"
      metrics=l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum
      metrics+=,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum
      metrics+=,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,smsp__inst_executed_op_shared_ld.sum
      metrics+=,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,smsp__inst_executed_op_shared_st.sum
      metrics+=,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum
      for v in $("$bundle/coalesce" list --names | grep -E "${NCU_ONLY:-.}"); do
        csv="$dir/${v/\//.}.csv"
        echo "== ncu $v" | tee -a "$out/ncu.log"
        # ncu's CSV goes to stdout with the run's own table; the comparer reads from
        # ncu's "ID",... header on and skips everything else.
        if ! ncu --csv --print-units base --metrics "$metrics" \
            "$bundle/coalesce" run "$v" --size "$size" --reps 1 --warmup 0 --quiet >"$csv" 2>>"$out/ncu.log"; then
          status=1
          echo "FAILED: ncu $v (see $out/ncu.log and $csv.failed)" | tee -a "$out/ncu.log"
          mv "$csv" "$csv.failed"
        fi
      done
      "$bundle/coalesce" explain --quiet --size "$size" --against-ncu "$dir" --json "$out/ncu-compare.json" \
        >"$out/ncu-compare.txt" 2>>"$out/ncu.log" || status=1
      cat "$out/ncu-compare.txt"
      ;;
    *)
      echo "unknown stage $stage (tests, suite, check, sanitize, ncu)"; status=2 ;;
  esac
done
exit $status
