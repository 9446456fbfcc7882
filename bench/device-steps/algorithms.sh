# bench/device-run step `algorithms`, sourced by it inside its loop over the steps (`return` ends the step). What it
# runs, its settings and its logs:
#   algorithms  canopy bench -a NAME --vs-nccl for every shipped algorithm that runs on this machine's ranks
#             (CANOPY_ALGO_SIZES, default 8:1G:4)                               -> algo-NAME.json, algorithms.log
# shellcheck shell=bash disable=SC2154  # root, build, out, canopy, jobs, step, mps_*, bench_args: bench/device-run
step algorithms
ranks=$(nvidia-smi -L | wc -l)
for name in $("$canopy" algo list | awk '{print $1}'); do
  "$canopy" algo verify "$name" --ranks "$ranks" >/dev/null 2>&1 || continue  # not written for this count
  echo "-- $name on $ranks ranks"
  timeout "${CANOPY_BENCH_TIMEOUT:-400}" "$canopy" bench -a "$name" --sizes "${CANOPY_ALGO_SIZES:-8:1G:4}" --vs-nccl \
    --check --json "$out/algo-$name.json" "${bench_args[@]}" 2>&1
done 2>&1 | tee "$out/algorithms.log" | grep -vE '^canopy: (info|debug)' | tail -120
