# bench/device-run step `tests`, sourced by it inside its loop over the steps (`return` ends the step). What it
# runs, its settings and its logs:
#   tests     the `gpu` ctest label (CANOPY_GPU_TESTS: a ctest -R filter; CANOPY_GPU_TEST_JOBS at once, default 6:
#             the checks on the host dominate; each test fills at most 0.8 / jobs of a GPU's memory,
#             CANOPY_TEST_MEMORY_FRACTION)                                      -> gpu-tests.log
# shellcheck shell=bash disable=SC2154  # root, build, out, canopy, jobs, step, mps_*, bench_args: bench/device-run
step gpu tests
# The watchdog test times a stuck launch: alone, after the others.
{ ctest --test-dir "$build" -L gpu -R "${CANOPY_GPU_TESTS:-.}" -E WatchdogOnGpu --output-on-failure \
    --timeout "${CANOPY_GPU_TEST_TIMEOUT:-300}" -j "$jobs" -V
  ctest --test-dir "$build" -L gpu -R WatchdogOnGpu --output-on-failure -V
} 2>&1 | grep -v '^[0-9]*: \[ *\(RUN\|OK\) ' >"$out/gpu-tests.log"
grep -E '^[0-9]+: \[ (runs|note|seed) \]|tests passed|tests failed|Failed|FAILED|\*\*\*' "$out/gpu-tests.log" | tail -60
