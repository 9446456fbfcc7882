# bench/device-run step `procbench`, sourced by it inside its loop over the steps (`return` ends the step). What it
# runs, its settings and its logs:
#   procbench allreduce and broadcast of 8 B to 64 KiB (CANOPY_PROCBENCH_SIZES, CANOPY_PROCBENCH_COLLECTIVES), per
#             call: `canopy bench --procs 2` (a process per rank on the one GPU) against `canopy bench` with one
#             process driving 2 virtual ranks, topology h200x2, --host-time, in the same call; CANOPY_PROCBENCH_MPS=1:
#             the 2-process run and the 1-process one again under an MPS daemon of its own; CANOPY_PROCBENCH_GRAPH=1:
#             every run again with --graph (replays of captured calls)   -> procbench.log, procbench-*.json
# shellcheck shell=bash disable=SC2154  # root, build, out, canopy, jobs, step, mps_*, bench_args: bench/device-run
# canopy bench --procs 2 (one process per rank, both on the one GPU) against one process driving both ranks
# (virtual ranks), same topology and sizes; JSON rows kept for the ratio table.
step multi-process bench
sizes="${CANOPY_PROCBENCH_SIZES:-8:64K}"
procbench=(-t h200x2 -c "${CANOPY_PROCBENCH_COLLECTIVES:-allreduce,broadcast}" --sizes "$sizes" --host-time)
modes=(""); [ "${CANOPY_PROCBENCH_GRAPH:-0}" = 1 ] && modes+=(--graph)
for mode in "${modes[@]}"; do
  tag="${mode:+-graph}"
  echo "-- canopy bench --procs 2 $mode"
  # shellcheck disable=SC2086  # $mode: one option or none
  timeout 200 "$canopy" bench --procs 2 "${procbench[@]}" $mode --json "$out/procbench-2$tag.json"
  # Processes sharing a GPU take turns on it (time slices of the driver) unless MPS runs their kernels at once:
  # with CANOPY_PROCBENCH_MPS=1 the 2-process run is repeated under an MPS daemon of our own (private pipe
  # and log folders, stopped after), where the image has one.
  if [ "${CANOPY_PROCBENCH_MPS:-0}" = 1 ] && mps_start; then
    echo "-- canopy bench --procs 2 $mode, under MPS"
    # shellcheck disable=SC2086
    timeout 200 "$canopy" bench --procs 2 "${procbench[@]}" $mode --json "$out/procbench-2-mps$tag.json"
    # One process under the same daemon: what MPS itself adds to a launch shows beside the 2 processes' runs.
    echo "-- canopy bench $mode, 1 process, 2 virtual ranks, under MPS"
    # shellcheck disable=SC2086
    timeout 200 "$canopy" bench --devices 0 "${procbench[@]}" $mode --json "$out/procbench-1-mps$tag.json"
    mps_stop
  fi
  echo "-- canopy bench $mode, 1 process, 2 virtual ranks"
  # shellcheck disable=SC2086
  timeout 200 "$canopy" bench --devices 0 "${procbench[@]}" $mode --json "$out/procbench-1$tag.json"
done 2>&1 | tee "$out/procbench.log"
