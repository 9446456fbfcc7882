# bench/device-run step `tune`, sourced by it inside its loop over the steps (`return` ends the step). What it
# runs, its settings and its logs:
#   tune      canopy tune over CANOPY_TUNE_SIZES (1M:1G:4), CANOPY_TUNE_COLLECTIVES (all): tuning.json, which later
#             steps of the same call (bench) then use                           -> tuning.json, tune.log
# shellcheck shell=bash disable=SC2154  # root, build, out, canopy, jobs, step, mps_*, bench_args: bench/device-run
step canopy tune
timeout "${CANOPY_TUNE_TIMEOUT:-300}" "$canopy" tune -c "${CANOPY_TUNE_COLLECTIVES:-broadcast,reduce,allreduce,allgather,reducescatter}" \
  --sizes "${CANOPY_TUNE_SIZES:-1M:1G:4}" 2>&1 | tee "$out/tune.log" | tail -60
cp "$CANOPY_CACHE_DIR/tuning.json" "$out/" 2>/dev/null
