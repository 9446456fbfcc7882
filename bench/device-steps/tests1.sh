# bench/device-run step `tests1`, sourced by it inside its loop over the steps (`return` ends the step). What it
# runs, its settings and its logs:
#   tests1    the `gpu` label again on GPU 0 alone (CUDA_VISIBLE_DEVICES=0): every rank virtual -> gpu-tests-1gpu.log
# shellcheck shell=bash disable=SC2154  # root, build, out, canopy, jobs, step, mps_*, bench_args: bench/device-run
step gpu tests on GPU 0 alone
CUDA_VISIBLE_DEVICES=0 ctest --test-dir "$build" -L gpu ${CANOPY_GPU_TESTS:+-R "$CANOPY_GPU_TESTS"} --output-on-failure \
  --timeout "${CANOPY_GPU_TEST_TIMEOUT:-300}" -j "$jobs" -V 2>&1 | grep -v '^[0-9]*: \[ *\(RUN\|OK\) ' >"$out/gpu-tests-1gpu.log"
grep -E '^[0-9]+: \[ (runs|note|seed) \]|tests passed|tests failed|Failed|FAILED|\*\*\*' "$out/gpu-tests-1gpu.log" | tail -60
