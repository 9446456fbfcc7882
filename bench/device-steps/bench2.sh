# bench/device-run step `bench2`, sourced by it inside its loop over the steps (`return` ends the step). What it
# runs, its settings and its logs:
#   bench2    the bench again under each setting of CANOPY_BENCH2_ENV (';'-separated, e.g. CANOPY_DIRECT_BYTES=0)
#             over CANOPY_BENCH2_SIZES (256K:64M), for comparisons in one run   -> bench2-K.json, bench2-K.log
# shellcheck shell=bash disable=SC2154  # root, build, out, canopy, jobs, step, mps_*, bench_args: bench/device-run
# The bench again under other settings, for same-run comparisons: CANOPY_BENCH2_ENV, settings separated by
# ';' (e.g. "CANOPY_DIRECT_BYTES=0;CANOPY_DIRECT_BLOCKS=64"), each over CANOPY_BENCH2_SIZES (default 256K:64M)
# and CANOPY_BENCH2_COLLECTIVES (default all)
k=0
IFS=';' read -r -a settings <<<"${CANOPY_BENCH2_ENV:-}"
for setting in "${settings[@]}"; do
  k=$((k + 1))
  step bench2 "$setting"
  env $setting timeout "${CANOPY_BENCH_TIMEOUT:-400}" "$canopy" bench --collective "${CANOPY_BENCH2_COLLECTIVES:-all}" \
    --sizes "${CANOPY_BENCH2_SIZES:-256K:64M}" --vs-nccl --check --json "$out/bench2-$k.json" "${bench_args[@]}" 2>&1 |
    { echo "# $setting"; cat; } | tee "$out/bench2-$k.log" | tail -100
done
