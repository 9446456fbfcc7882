# bench/device-run step `tests-long`, sourced by it inside its loop over the steps (`return` ends the step). What it
# runs, its settings and its logs:
#   tests-long  the `gpu-long` ctest label: what `tests` (gpu-quick) leaves out (aimed at < 10 minutes on one H200); the
#             settings of `tests` (CANOPY_GPU_TESTS, CANOPY_GPU_TEST_JOBS, ...)            -> gpu-tests-long.log
# shellcheck shell=bash disable=SC2154  # root, build, out, canopy, jobs, step, mps_*, bench_args: bench/device-run
gpu_tier_label=gpu-long gpu_tier_log=gpu-tests-long.log
# shellcheck source=bench/device-steps/tests.sh
source "$root/bench/device-steps/tests.sh"
unset gpu_tier_label gpu_tier_log
