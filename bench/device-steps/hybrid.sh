# bench/device-run step `hybrid`, sourced by it inside its loop over the steps (`return` ends the step). What it
# runs, its settings and its logs:
#   hybrid    canopy-bench-hybrid: PCIe through pinned memory beside NVLink, alone and at once (CANOPY_HYBRID_MIB,
#             default 16 256 1024)                                           -> bench-hybrid.log
# shellcheck shell=bash disable=SC2154  # root, build, out, canopy, jobs, step, mps_*, bench_args: bench/device-run
step bench/hybrid
# shellcheck disable=SC2086  # MiB sizes, space-separated
"$build/bin/canopy-bench-hybrid" ${CANOPY_HYBRID_MIB:-} 2>&1 | tee "$out/bench-hybrid.log"
