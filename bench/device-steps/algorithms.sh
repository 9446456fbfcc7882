# bench/device-run step `algorithms`, sourced by it inside its loop over the steps (`return` ends the step). What it
# runs, its settings and its logs:
#   algorithms  canopy bench -a NAME --vs-nccl for every shipped algorithm that runs on this machine's ranks
#             (CANOPY_ALGO_SIZES, default 8:1G:4); then the planned all-to-all (-c alltoall) on dgx1-v100's GPUs
#             0,1,4,5 and all 8, every rank on GPU 0, checked (CANOPY_ALLTOALL_SIZES, default 8:256M:4)
#                                                   -> algo-NAME.json, algo-alltoall-*.json, algorithms.log
# shellcheck shell=bash disable=SC2154  # root, build, out, canopy, jobs, step, mps_*, bench_args: bench/device-run
step algorithms
ranks=$(nvidia-smi -L | wc -l)
for name in $("$canopy" algo list | awk '{print $1}'); do
  "$canopy" algo verify "$name" --ranks "$ranks" >/dev/null 2>&1 || continue  # not written for this count
  echo "-- $name on $ranks ranks"
  timeout "${CANOPY_BENCH_TIMEOUT:-400}" "$canopy" bench -a "$name" --sizes "${CANOPY_ALGO_SIZES:-8:1G:4}" --vs-nccl \
    --check --json "$out/algo-$name.json" "${bench_args[@]}" 2>&1
done 2>&1 | tee "$out/algorithms.log" | grep -vE '^canopy: (info|debug)' | tail -120
for gpus in 0,1,4,5 0,1,2,3,4,5,6,7; do
  echo "-- the planned all-to-all on dgx1-v100's GPUs $gpus, every rank on GPU 0"
  timeout "${CANOPY_BENCH_TIMEOUT:-400}" "$canopy" bench -t dgx1-v100 --gpus "$gpus" --devices 0 -c alltoall \
    --sizes "${CANOPY_ALLTOALL_SIZES:-8:256M:4}" --check --json "$out/algo-alltoall-${gpus//,/}.json" 2>&1
done 2>&1 | tee -a "$out/algorithms.log" | grep -vE '^canopy: (info|debug)' | tail -60
