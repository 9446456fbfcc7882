# bench/device-run step `bench`, sourced by it inside its loop over the steps (`return` ends the step). What it
# runs, its settings and its logs:
#   bench     canopy bench --vs-nccl over CANOPY_BENCH_SIZES (8:1G), CANOPY_BENCH_COLLECTIVES (all) -> bench.json, bench.log
# shellcheck shell=bash disable=SC2154  # root, build, out, canopy, jobs, step, mps_*, bench_args: bench/device-run
step bench
timeout "${CANOPY_BENCH_TIMEOUT:-400}" "$canopy" bench --collective "${CANOPY_BENCH_COLLECTIVES:-all}" --sizes "${CANOPY_BENCH_SIZES:-8:1G}" --vs-nccl --check \
  --json "$out/bench.json" "${bench_args[@]}" 2>&1 | tee "$out/bench.log" | tail -170
