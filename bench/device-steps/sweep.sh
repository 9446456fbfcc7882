# bench/device-run step `sweep`, sourced by it inside its loop over the steps (`return` ends the step). What it
# runs, its settings and its logs:
#   sweep     kernel shapes BLOCKS:CHUNK[:FIFO[:THREADS[:PULL]]] from CANOPY_SWEEP at 256 MiB and 1 GiB, beside
#             NCCL (PULL: none|in|out|all, CANOPY_PULL) -> sweep.log
# shellcheck shell=bash disable=SC2154  # root, build, out, canopy, jobs, step, mps_*, bench_args: bench/device-run
step sweep
for shape in ${CANOPY_SWEEP:-128:256K:4:512:none 128:256K:4:512:auto 128:256K:4:512:all}; do
  IFS=: read -r blocks chunk fifo threads pull <<<"$shape"
  echo "-- blocks $blocks chunk $chunk fifo ${fifo:-4} threads ${threads:-512} pull ${pull:-default}"
  CANOPY_FIFO_DEPTH="${fifo:-4}" CANOPY_PULL="${pull:-${CANOPY_PULL:-}}" "$canopy" bench --collective all --sizes 256M,1G --no-check --iters 10 \
    --repeats 3 --warmup 3 --vs-nccl --blocks "$blocks" --chunk "$chunk" --threads "${threads:-512}" \
    "${bench_args[@]}" 2>&1 |
    grep -E '^ +(256M|1G) '
done 2>&1 | tee "$out/sweep.log"
