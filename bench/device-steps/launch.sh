# bench/device-run step `launch`, sourced by it inside its loop over the steps (`return` ends the step). What it
# runs, its settings and its logs:
#   launch    canopy-bench-launch: the host's cost of one kernel launch per GPU, several ways; CANOPY_LAUNCH_MPS=1:
#             again as a client of an MPS daemon of its own        -> bench-launch.log, bench-launch-mps.log
# shellcheck shell=bash disable=SC2154  # root, build, out, canopy, jobs, step, mps_*, bench_args: bench/device-run
step bench/launch
"$build/bin/canopy-bench-launch" 2>&1 | tee "$out/bench-launch.log"
if [ "${CANOPY_LAUNCH_MPS:-0}" = 1 ] && mps_start; then
  echo "-- under MPS"
  "$build/bin/canopy-bench-launch" 2>&1 | tee "$out/bench-launch-mps.log"
  mps_stop
fi
