# bench/device-run step `jit`, sourced by it inside its loop over the steps (`return` ends the step). What it
# runs, its settings and its logs:
#   jit       canopy-bench-jit                                                  -> bench-jit.log
# shellcheck shell=bash disable=SC2154  # root, build, out, canopy, jobs, step, mps_*, bench_args: bench/device-run
step bench/jit
"$build/bin/canopy-bench-jit" 2>&1 | tee "$out/bench-jit.log"
