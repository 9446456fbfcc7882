# bench/device-run step `measure`, sourced by it inside its loop over the steps (`return` ends the step). What it
# runs, its settings and its logs:
#   measure   canopy detect --measure: link rates measured by copies          -> measured.topo, measure.log
# shellcheck shell=bash disable=SC2154  # root, build, out, canopy, jobs, step, mps_*, bench_args: bench/device-run
step canopy detect --measure
"$canopy" detect --measure --out "$out/measured.topo" 2>&1 | tee "$out/measure.log"
