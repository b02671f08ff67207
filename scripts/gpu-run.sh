#!/usr/bin/env bash
# Runs on the GPU machine over a bundle made by scripts/gpu-bundle.sh:
#   scripts/gpu-run.sh [STAGE...]     stages: tests suite check sanitize report bench compare ncu broken calibrate predict predict-dram stalls source probes (default: tests suite)
# Logs and results go to $OUT (default ./gpu-out); the last thing printed is the table.
# DEADLINE=S runs the stages under one clock of S seconds (below).
# Only a few files come back from $OUT, two folders deep at most: stages that make
# many files (report, bench, ncu) pack them into one archive each.
#   predict: with a profile from the calibrate stage ($out/profile-*.json, or the
#        file PROFILE names), each bandwidth kernel's predicted % of copy against a run
#        of the suite: the report stage's when it ran before it in the same call; then
#        the bandwidth kernels at each size of PREDICT_SIZES (default "4M 16M 64M": a
#        launch's fixed cost, bytes the L2 holds), the transposes at each shape of
#        PREDICT_TRANSPOSES (default "1024x1024 2048x2048"), and each product rung
#        (matmul, sgemm, gemm-bf16, gemm-f16) at each shape of PREDICT_SHAPES (default
#        "1024x1024x1024 2048x2048x2048 4096x4096x4096 8192x8192x8192 1024x8192x4096
#        8192x8192x1024": small, L2-resident, square, rectangular and small-k), each
#        predicted against a run of its own at that size; then one report of all those
#        runs, predicted against measured per kernel at each size
#        ($OUT/predict-report.tar.gz; its summary per size is printed).
#   predict-dram: with the same profile, each bandwidth kernel's predicted DRAM bytes
#        against ncu's at the default sizes (PREDICT_ONLY: regex). Its own stage, as
#        42 ncu processes at those sizes take minutes: a call can hold it alone.
#   ncu: Nsight Compute counts each kernel's global sectors and requests and shared
#        wavefronts (one profile per EXPERIMENT/VARIANT at NCU_SIZE, default 4M; only
#        variants matching the regex NCU_ONLY, default all), then
#        `coalesce explain --against-ncu` prints predicted against measured.
#   calibrate: `coalesce calibrate` measures the GPU's profile into
#        $OUT/profile-<gpu>.json and prints its summary (CALIBRATE_ARGS adds options,
#        e.g. CALIBRATE_ARGS=--quick for a smoke test).
set -uo pipefail
cd "$(dirname "$0")/.."
bundle=gpu-bundle
out=${OUT:-gpu-out}
mkdir -p "$out"
stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=(tests suite)
status=0

# DEADLINE=S: every stage runs under one clock of S seconds, each in a child of this
# script under `timeout`, so a long stage is cut (and said to be) while the logs of the
# stages before it stay, and stages past the deadline are named as skipped.
if [ -n "${DEADLINE:-}" ]; then
  start=$(date +%s)
  for stage in "${stages[@]}"; do
    left=$(( DEADLINE - ($(date +%s) - start) ))
    if [ "$left" -le 5 ]; then
      echo "== $stage: skipped, the ${DEADLINE} s deadline has passed" | tee -a "$out/stages.log"; status=1; continue
    fi
    echo "== $stage (${left} s left)" | tee -a "$out/stages.log"
    t0=$(date +%s)
    OUT=$out DEADLINE= timeout --kill-after=10 "$left" "$0" "$stage"
    rc=$?
    [ "$rc" = 124 ] && echo "== $stage: cut at the deadline" | tee -a "$out/stages.log"
    [ "$rc" = 0 ] || status=1
    echo "== $stage: exit $rc, $(( $(date +%s) - t0 )) s" | tee -a "$out/stages.log"
  done
  exit $status
fi

export CARGO_BIN_EXE_coalesce=$PWD/$bundle/coalesce
[ -x /usr/local/cuda/bin/ptxas ] && export PTXAS=/usr/local/cuda/bin/ptxas
export PATH=$PATH:/usr/local/cuda/bin

# The GPU's compute capability as ptxas and nvcc name it (90 for sm_90); 90 if unknown.
gpu_sm() {
  local sm
  sm=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d ' .')
  echo "${sm:-90}"
}

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
    report)
      # The whole suite through the comparison with the C++ twins (NVRTC) and cuBLAS
      # from /usr/local/cuda: report.md to read at once (its "Rust against CUDA C++"
      # section and the claims are printed below); it, results.json and the SVGs
      # (rust-vs-cpp.svg among them) in report.tar.gz. REPORT_ARGS adds options,
      # e.g. REPORT_ARGS=--rust-only.
      rm -rf "$out/report"
      start=$(date +%s)
      # shellcheck disable=SC2086
      "$bundle/coalesce" report --out "$out/report" ${REPORT_ARGS:-} >"$out/report.log" 2>&1 || status=1
      echo "coalesce report: $(( $(date +%s) - start )) s wall" >>"$out/report.log"
      if [ -f "$out/report/report.md" ]; then
        cp "$out/report/report.md" "$out/report.md"
        # The predict stage compares against this run rather than timing the suite again.
        [ -f "$out/report/results.json" ] && cp "$out/report/results.json" "$out/report-results.json"
        sed -n '/^## Rust against CUDA C++/,$p' "$out/report.md" | grep -v '^!\['
        tar -czf "$out/report.tar.gz" -C "$out" report && rm -rf "$out/report"
      fi
      tail -n 3 "$out/report.log"
      ;;
    bench)
      # A quick criterion pass: small arrays, short warm-up and measurement.
      # Criterion's output (HTML reports, saved estimates) goes into criterion.tar.gz.
      rm -rf "$out/criterion"
      for b in "$bundle"/bench-*-bench-*; do
        [ -x "$b" ] || continue
        echo "== $b" | tee -a "$out/bench.log"
        COALESCE_BENCH_SIZE=${COALESCE_BENCH_SIZE:-64M} CRITERION_HOME="$out/criterion" \
          "$b" --bench --warm-up-time 1 --measurement-time 2 >>"$out/bench.log" 2>&1 \
          || { status=1; echo "FAILED: $b" | tee -a "$out/bench.log"; }
      done
      [ -d "$out/criterion" ] && tar -czf "$out/criterion.tar.gz" -C "$out" criterion && rm -rf "$out/criterion"
      grep -E "^[a-z]+/|thrpt:|error|FAILED|nothing to measure" "$out/bench.log"
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
        sm=$(gpu_sm)
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
      metrics+=,dram__bytes_read.sum,dram__bytes_write.sum
      # Preferred where this ncu has them (explain::ncu::OPTIONAL_METRICS says why):
      # SASS-level shared wavefronts, shared instructions with a thread predicated on,
      # and the shared writes of cp.async (LDGSTS). An ncu that lacks one refuses the
      # whole list, so a short profile tries each first.
      extra=smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,smsp__inst_executed_op_shared_ld_pred_on_any.sum
      extra+=,smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_st.sum,smsp__inst_executed_op_shared_st_pred_on_any.sum
      extra+=,smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum
      extra+=,smsp__inst_executed_op_ldgsts.sum
      extra+=,smsp__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,smsp__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum
      for m in ${extra//,/ }; do
        probe=$(ncu --csv --print-units base --launch-count 1 --metrics "$m" \
          "$bundle/coalesce" run transpose/tiled --size 1M --reps 1 --warmup 0 --quiet 2>>"$out/ncu.log") || true
        if grep -q "\"$m\"" <<<"$probe"; then
          metrics+=",$m"
        else
          echo "ncu lacks $m: profiling without it" | tee -a "$out/ncu.log"
        fi
      done
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
      # The per-variant CSVs travel as one archive.
      tar -czf "$out/ncu.tar.gz" -C "$out" ncu && rm -rf "$dir"
      ;;
    predict|predict-dram)
      profile=${PROFILE:-$(ls "$out"/profile-*.json 2>/dev/null | head -n 1)}
      if [ -z "$profile" ] || [ ! -f "$profile" ]; then
        echo "$stage: no profile (run the calibrate stage first, or set PROFILE)"; status=1; continue
      fi
      if [ "$stage" = predict ]; then
        # Measured: the report stage's run of this call if there was one, else a run now.
        if [ -f "$out/report-results.json" ]; then
          cp "$out/report-results.json" "$out/predict-run.json"
        else
          "$bundle/coalesce" run --quiet --json "$out/predict-run.json" >"$out/predict-run.txt" 2>&1 || status=1
        fi
        # The bandwidth kernels at their default sizes (the products below, at theirs).
        # shellcheck disable=SC2046
        "$bundle/coalesce" explain --quiet --profile "$profile" --against-run "$out/predict-run.json" \
          --json "$out/predict-copy.json" $("$bundle/coalesce" list --names | grep -vE '^(matmul|sgemm|gemm-bf16|gemm-f16)/') \
          >"$out/predict-copy.txt" 2>&1 || status=1
        cat "$out/predict-copy.txt"
        # The bandwidth kernels again at each size of PREDICT_SIZES, where the L2 holds a
        # launch's bytes and a launch's fixed cost counts; then the products at each
        # shape of PREDICT_SHAPES: small, L2-resident, rectangular, small-k and large.
        # Each measured by a run of its own and set beside its prediction.
        # shellcheck disable=SC2046
        for size in ${PREDICT_SIZES:-4M 16M 64M}; do
          "$bundle/coalesce" run --size "$size" --quiet --json "$out/predict-bw-$size-run.json" \
            $("$bundle/coalesce" list --names | grep -vE '^(matmul|sgemm|gemm-bf16|gemm-f16|transpose)/') \
            >"$out/predict-bw-$size-run.txt" 2>&1 || status=1
          "$bundle/coalesce" explain --size "$size" --quiet --profile "$profile" \
            --against-run "$out/predict-bw-$size-run.json" --json "$out/predict-bw-$size.json" \
            $("$bundle/coalesce" list --names | grep -vE '^(matmul|sgemm|gemm-bf16|gemm-f16|transpose)/') \
            >"$out/predict-bw-$size.txt" 2>&1 || status=1
          grep -E "within" "$out/predict-bw-$size.txt"
        done
        for shape in ${PREDICT_TRANSPOSES:-1024x1024 2048x2048}; do
          "$bundle/coalesce" run transpose --shape "$shape" --quiet --json "$out/predict-tr-$shape-run.json" \
            >"$out/predict-tr-$shape-run.txt" 2>&1 || status=1
          "$bundle/coalesce" explain transpose --shape "$shape" --quiet --profile "$profile" \
            --against-run "$out/predict-tr-$shape-run.json" --json "$out/predict-tr-$shape.json" \
            >"$out/predict-tr-$shape.txt" 2>&1 || status=1
          grep -E "within" "$out/predict-tr-$shape.txt"
        done
        for shape in ${PREDICT_SHAPES:-${PREDICT_SHAPE:-1024x1024x1024 2048x2048x2048 4096x4096x4096 8192x8192x8192 1024x8192x4096 8192x8192x1024}}; do
          "$bundle/coalesce" run matmul sgemm gemm-bf16 gemm-f16 --shape "$shape" --quiet \
            --json "$out/predict-products-$shape-run.json" >"$out/predict-products-$shape-run.txt" 2>&1 || status=1
          "$bundle/coalesce" explain matmul sgemm gemm-bf16 gemm-f16 --shape "$shape" --quiet --profile "$profile" \
            --against-run "$out/predict-products-$shape-run.json" --json "$out/predict-products-$shape.json" \
            >"$out/predict-products-$shape.txt" 2>&1 || status=1
          cat "$out/predict-products-$shape.txt"
        done
        # Every run above in one report: the suite at its default sizes, and each kernel
        # predicted against measured at each size (report.md's and the page's sweep). A
        # shape the default run holds already is left out (one measurement a size).
        runs=(--from "$out/predict-run.json")
        for f in "$out"/predict-bw-*-run.json "$out"/predict-tr-*-run.json "$out"/predict-products-*-run.json; do
          [ -f "$f" ] || continue
          shape=${f%-run.json}; shape=${shape##*-}
          grep -q "\"size_label\": \"$shape\"" "$out/predict-run.json" 2>/dev/null || runs+=(--from "$f")
        done
        rm -rf "$out/predict-report"
        if "$bundle/coalesce" report --quiet --profile "$profile" "${runs[@]}" --out "$out/predict-report" \
          >"$out/predict-report.txt" 2>&1; then
          sed -n '/^## Predicted beside measured at each size/,/^###/p' "$out/predict-report/report.md" | grep '^|'
          tar -czf "$out/predict-report.tar.gz" -C "$out" predict-report && rm -rf "$out/predict-report"
        else
          cat "$out/predict-report.txt"; status=1
        fi
        continue
      fi
      dir="$out/dram"
      rm -rf "$dir" && mkdir -p "$dir"
      # The bandwidth kernels only: a product's time is its arithmetic's.
      # DRAM bytes as `coalesce run` times them, launch after launch: no flush of the
      # caches before a profiled launch (ncu's default would write back the previous
      # launch's writes outside it and leave this one's last writes, up to the L2's
      # size, uncounted), and three launches of the kernel (the check, one warm-up,
      # one timed), of which the comparison averages the two that follow a launch of
      # their own kernel. Two metrics take one pass, so no replay disturbs the L2.
      for v in $("$bundle/coalesce" list --names | grep -vE '^(matmul|sgemm|gemm-bf16|gemm-f16)/' | grep -E "${PREDICT_ONLY:-.}"); do
        ncu --csv --print-units base --cache-control none --metrics dram__bytes_read.sum,dram__bytes_write.sum \
          "$bundle/coalesce" run "$v" --reps 1 --warmup 1 --quiet >"$dir/${v/\//.}.csv" 2>>"$out/predict.log" || status=1
      done
      "$bundle/coalesce" explain --quiet --profile "$profile" --against-ncu "$dir" \
        --json "$out/predict-dram.json" >"$out/predict-dram.txt" 2>>"$out/predict.log" || status=1
      grep -E "DRAM|within" "$out/predict-dram.txt"
      tar -czf "$out/dram.tar.gz" -C "$out" dram && rm -rf "$dir"
      ;;
    calibrate)
      # Named as coalesce names it: nvidia-h100-80gb-hbm3 for "NVIDIA H100 80GB HBM3".
      name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
      slug=$(printf '%s' "${name:-gpu}" | tr '[:upper:]' '[:lower:]' | tr -cs 'a-z0-9' '-' | sed 's/^-*//; s/-*$//')
      # shellcheck disable=SC2086
      "$bundle/coalesce" calibrate --quiet --out "$out/profile-${slug:-gpu}.json" ${CALIBRATE_ARGS:-} \
        >"$out/calibrate.txt" 2>"$out/calibrate.err" || status=1
      cat "$out/calibrate.err" "$out/calibrate.txt"
      ;;
    stalls)
      # Why a kernel runs at the speed it does: Nsight Compute's stall reasons (average
      # warps stalled per issued instruction, by reason), issue-slot, FMA-pipe and
      # shared-memory utilisation, achieved occupancy and waves, for one variant's Rust
      # kernel and its C++ twin (and cuBLAS for a product), profiled inside
      # `coalesce compare`. STALLS_VARIANT (default sgemm/pipeline-128x64x16) and
      # STALLS_KERNELS (an ncu -k regex, default the variant's kernel and cuBLAS's gemm).
      v=${STALLS_VARIANT:-sgemm/pipeline-128x64x16}
      re=${STALLS_KERNELS:-$(printf '%s' "${v#*/}" | tr -- '-' '_')|gemm}
      m=smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active
      m+=,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active
      m+=,l1tex__data_pipe_lsu_wavefronts_mem_shared.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed
      m+=,launch__registers_per_thread,launch__waves_per_multiprocessor,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem
      m+=,smsp__inst_executed.sum,smsp__average_warp_latency_per_inst_issued.ratio
      m+=,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_tensor_op_hmma.avg.pct_of_peak_sustained_active
      m+=,sm__cycles_elapsed.avg.per_second,smsp__cycles_active.avg
      for r in barrier long_scoreboard short_scoreboard mio_throttle math_pipe_throttle not_selected selected wait \
          dispatch_stall lg_throttle no_instruction branch_resolving tex_throttle drain imc_miss membar sleeping; do
        m+=,smsp__average_warps_issue_stalled_${r}_per_issue_active.ratio
      done
      echo "== ncu stalls: $v (kernels matching $re)" | tee "$out/stalls.log"
      ncu --csv --print-units base -k "regex:$re" --launch-count 6 --metrics "$m" \
        "$bundle/coalesce" compare "$v" --reps 1 --warmup 0 --quiet >"$out/stalls-${v/\//.}.csv" 2>>"$out/stalls.log" || status=1
      grep -c '^"' "$out/stalls-${v/\//.}.csv" | sed 's/^/csv lines: /'
      ;;
    source)
      # Nsight Compute's per-instruction (SASS) counters, the source page of its full
      # set, for the Rust kernel of each variant in SOURCE_VARIANTS (default the two
      # cp.async FP32 rungs and the 128 x 128 TF32 one) at each shape in SOURCE_SHAPES
      # (MxNxK, default 1024^3 and 2048 x 2048 x 512): what each instruction executed,
      # its sectors and its shared wavefronts against their ideal.
      dir="$out/source"
      rm -rf "$dir" && mkdir -p "$dir"
      for v in ${SOURCE_VARIANTS:-sgemm/async-128x128x8 sgemm/async-128x256x8 sgemm/tf32-128x128x32}; do
        k=sgemm_$(printf '%s' "${v#*/}" | tr -- '-' '_')
        for shape in ${SOURCE_SHAPES:-1024x1024x1024 2048x2048x512}; do
          rep="$dir/${v/\//.}.$shape"
          echo "== ncu source: $v $shape" | tee -a "$out/source.log"
          if ncu --set full --import-source no -k "regex:^$k\$" --launch-count 1 -f -o "$rep" \
              "$bundle/coalesce" run "$v" --shape "$shape" --reps 1 --warmup 0 --quiet >>"$out/source.log" 2>&1; then
            ncu --import "$rep.ncu-rep" --page source --csv --print-source sass >"$rep.sass.csv" 2>>"$out/source.log" || status=1
            ncu --import "$rep.ncu-rep" --page details --csv --print-units base >"$rep.details.csv" 2>>"$out/source.log" || status=1
            rm -f "$rep.ncu-rep"
          else
            status=1; echo "FAILED: ncu source $v $shape" | tee -a "$out/source.log"
          fi
        done
      done
      tar -czf "$out/source.tar.gz" -C "$out" source && rm -rf "$dir"
      ;;
    probes)
      # The CUDA C++ probes of scripts/probes (evidence for docs/perf-notes.md, outside
      # the suite): each built by nvcc for this GPU and run once, its table in
      # $OUT/probe-<name>.txt.
      cc=$(gpu_sm)
      for src in scripts/probes/*.cu; do
        name=$(basename "$src" .cu)
        echo "== probe $name (sm_$cc)" | tee -a "$out/probes.log"
        if nvcc -O3 -std=c++17 -arch="sm_$cc" -o "$out/.probe-$name" "$src" >>"$out/probes.log" 2>&1; then
          "$out/.probe-$name" | tee "$out/probe-$name.txt" || { status=1; echo "FAILED: probe $name" | tee -a "$out/probes.log"; }
          rm -f "$out/.probe-$name"
        else
          status=1; echo "FAILED: nvcc $src" | tee -a "$out/probes.log"
        fi
      done
      ;;
    *)
      echo "unknown stage $stage (tests, suite, check, sanitize, report, bench, compare, ncu, broken, calibrate, predict, predict-dram, stalls, source, probes)"; status=2 ;;
  esac
done
exit $status
