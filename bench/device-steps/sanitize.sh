# bench/device-run step `sanitize`, sourced by it inside its loop over the steps (`return` ends the step). What it
# runs, its settings and its logs:
#   sanitize  compute-sanitizer memcheck, racecheck and synccheck on a small case of each collective, all ranks
#             on GPU 0 (the sanitizer serialises launches, so ranks must share one launch), topology
#             CANOPY_SANITIZE_TOPOLOGY (default h200x2) -> sanitize-*.log
# shellcheck shell=bash disable=SC2154  # root, build, out, canopy, jobs, step, mps_*, bench_args: bench/device-run
step compute-sanitizer
for tool in ${CANOPY_SANITIZE_TOOLS:-memcheck racecheck synccheck}; do
  timeout "${CANOPY_SANITIZE_TIMEOUT:-300}" compute-sanitizer --tool "$tool" --error-exitcode 9 "$canopy" bench --collective all \
    --sizes 4K,64K --iters 1 --warmup 0 --repeats 1 --check -t "${CANOPY_SANITIZE_TOPOLOGY:-h200x2}" --devices 0 \
    "${bench_args[@]}" >"$out/sanitize-$tool.log" 2>&1
  echo "$tool: exit $? ($(grep -cE 'ERROR SUMMARY: 0 errors|RACECHECK SUMMARY: 0 hazards' "$out/sanitize-$tool.log") clean summaries)"
  grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/sanitize-$tool.log" | sort | uniq -c
done 2>&1 | tee "$out/sanitize.log"
