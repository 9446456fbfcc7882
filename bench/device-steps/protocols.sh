# bench/device-run step `protocols`, sourced by it inside its loop over the steps (`return` ends the step). What it
# runs, its settings and its logs:
#   protocols canopy tune --protocols over CANOPY_PROTOCOL_SIZES (8:64M), all collectives (CANOPY_TUNE_ARGS: more
#             arguments): the protocol limits of
#             this machine in tuning.json, which later steps of the same call then use -> tuning.json, protocols.log
# shellcheck shell=bash disable=SC2154  # root, build, out, canopy, jobs, step, mps_*, bench_args: bench/device-run
step canopy tune --protocols
timeout "${CANOPY_TUNE_TIMEOUT:-300}" "$canopy" tune --protocols --sizes "${CANOPY_PROTOCOL_SIZES:-8:64M}" \
  "${tune_args[@]}" 2>&1 | tee "$out/protocols.log" | tail -200
cp "$CANOPY_CACHE_DIR/tuning.json" "$out/" 2>/dev/null
