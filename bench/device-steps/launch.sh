# bench/device-run step `launch`, sourced by it inside its loop over the steps (`return` ends the step). What it
# runs, its settings and its logs:
#   launch    canopy-bench-launch: the host's cost of one kernel launch per GPU, several ways -> bench-launch.log
# shellcheck shell=bash disable=SC2154  # root, build, out, canopy, jobs, step, mps_*, bench_args: bench/device-run
step bench/launch
"$build/bin/canopy-bench-launch" 2>&1 | tee "$out/bench-launch.log"
