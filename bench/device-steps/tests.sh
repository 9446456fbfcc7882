# bench/device-run step `tests`, sourced by it inside its loop over the steps (`return` ends the step). What it
# runs, its settings and its logs:
#   tests     the `gpu-quick` ctest label: every GPU module at small sizes (aimed at <= 6 minutes on one H200)
#             (CANOPY_GPU_LABEL: another label, e.g. gpu for both tiers at once; CANOPY_GPU_TESTS: a ctest -R filter;
#             CANOPY_GPU_TEST_JOBS at once, default 6: the checks on the host dominate; each test fills at most
#             0.8 / jobs of a GPU's memory, CANOPY_TEST_MEMORY_FRACTION)                    -> gpu-tests.log
#             and, written before they run, the names of the tests selected       -> gpu-tests-selected.txt
#             (a run the deadline stopped: the ones its log never ended are what a next call's CANOPY_GPU_TESTS
#             takes; docs/development.md "GPU test tiers" has the command)
# The step `tests-long` runs the `gpu-long` label (the rest) through this file (gpu_tier_label, gpu_tier_log).
# shellcheck shell=bash disable=SC2154  # root, build, out, canopy, jobs, step, mps_*, bench_args: bench/device-run
label="${gpu_tier_label:-${CANOPY_GPU_LABEL:-gpu-quick}}"
log="$out/${gpu_tier_log:-gpu-tests.log}"
step "gpu tests ($label)"
# A fresh build's ctest has no cost data: seeded with the last measured times (bench/gpu-test-costs.txt), ctest -j
# starts the longest tests first instead of in test order, so that the last one does not start late.
cost_data="$build/Testing/Temporary/CTestCostData.txt"
[ -s "$cost_data" ] || { mkdir -p "${cost_data%/*}" && grep -v '^#' "$root/bench/gpu-test-costs.txt" >"$cost_data"; }
# Every selected test's name, first: the deadline may stop the run before its end (nothing after it runs then).
ctest --test-dir "$build" -N -L "$label" -R "${CANOPY_GPU_TESTS:-.}" | sed -nE 's/^ *Test +#[0-9]+: ([^ ]+).*/\1/p' \
  >"${log%.log}-selected.txt"
# The watchdog test times a stuck launch: alone, after the others.
{ ctest --test-dir "$build" -L "$label" -R "${CANOPY_GPU_TESTS:-.}" -E WatchdogOnGpu --output-on-failure \
    --timeout "${CANOPY_GPU_TEST_TIMEOUT:-300}" -j "$jobs" -V
  ctest --test-dir "$build" -L "$label" -R WatchdogOnGpu --output-on-failure -V
} 2>&1 | grep -v '^[0-9]*: \[ *\(RUN\|OK\) ' >"$log"
summary='^[0-9]+: \[ (runs|note|seed) \]|tests passed|tests failed|Failed|FAILED|\*\*\*|Total Test time'
grep -E "$summary" "$log" | tail -60
# The slowest tests of this run, for keeping each tier within its time (docs/development.md "GPU test tiers").
grep -E 'Test +#[0-9]+: .* sec$' "$log" | sed -E 's/.*Test +#[0-9]+: ([^ ]+) .* ([0-9.]+) sec$/\2 \1/' | sort -rn |
  head -15 | sed 's/^/slowest: /'
