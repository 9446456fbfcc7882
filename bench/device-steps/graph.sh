# bench/device-run step `graph`, sourced by it inside its loop over the steps (`return` ends the step). What it
# runs, its settings and its logs:
#   graph     canopy bench --vs-nccl with --graph (calls captured into CUDA graphs and replayed, both libraries) over
#             CANOPY_GRAPH_SIZES (8:1G), CANOPY_GRAPH_COLLECTIVES (all)        -> bench-graph.json, bench-graph.log
# shellcheck shell=bash disable=SC2154  # root, build, out, canopy, jobs, step, mps_*, bench_args: bench/device-run
# The bench with every loop's calls captured into a CUDA graph and replayed, Canopy and NCCL alike
step bench --graph
timeout "${CANOPY_BENCH_TIMEOUT:-400}" "$canopy" bench --graph --collective "${CANOPY_GRAPH_COLLECTIVES:-all}" \
  --sizes "${CANOPY_GRAPH_SIZES:-8:1G}" --vs-nccl --check --json "$out/bench-graph.json" "${bench_args[@]}" 2>&1 |
  tee "$out/bench-graph.log" | tail -170
