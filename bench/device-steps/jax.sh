# bench/device-run step `jax`, sourced by it inside its loop over the steps (`return` ends the step). What it runs,
# its settings and its logs:
#   jax       JAX through libcanopy_nccl.so (LD_PRELOAD, CANOPY_LOG=info): tests/jax/jax_check.py --procs N for each
#             of CANOPY_JAX_PROCS (2 4), every process on GPU 0 (ppermute and all_to_all beside psum, all_gather and
#             psum_scatter inside shard_map, checked element by element), each run cut at CANOPY_JAX_TIMEOUT seconds
#             (300); how many CANOPY_LOG lines say served by Canopy and forwarded   -> jax-*.log, jax.log
# shellcheck shell=bash disable=SC2154  # root, build, out, canopy, jobs, step: bench/device-run
# No real NCCL baseline: NCCL 2.28 refuses two ranks on one GPU, which is what every process here shares.
step jax
library="$build/libcanopy_nccl.so"
[ -e "$library" ] || echo "jax: no $library (the build did not make target canopy_nccl): LD_PRELOAD will fail"
{
  python3 -c 'import jax; print("jax", jax.__version__)' 2>&1 | tail -1
  for n in ${CANOPY_JAX_PROCS:-2 4}; do
    echo "-- jax-$n: $n processes, tests/jax/jax_check.py --procs $n ($(date +%T))"
    timeout "$(( ${CANOPY_JAX_TIMEOUT:-300} + 30 ))" env LD_PRELOAD="$library" CANOPY_LOG=info \
      python3 "$root/tests/jax/jax_check.py" --procs "$n" --timeout "${CANOPY_JAX_TIMEOUT:-300}" \
      >"$out/jax-$n.log" 2>&1
    rc=$?
    grep -E '^(ok|WRONG) |^jax_check:|Error|error' "$out/jax-$n.log" | grep -v '^ok ' | tail -n 25
    echo "   $(grep -c '^ok ' "$out/jax-$n.log") cases ok; exit $rc;" \
      "$(grep -ciE 'canopy.*served' "$out/jax-$n.log") log lines served by Canopy," \
      "$(grep -c 'forwarded to the real NCCL' "$out/jax-$n.log") forwarded"
  done
} 2>&1 | tee "$out/jax.log"
