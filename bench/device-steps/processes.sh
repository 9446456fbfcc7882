# bench/device-run step `processes`, sourced by it inside its loop over the steps (`return` ends the step). What it
# runs, its settings and its logs:
#   processes multi-process datachecks: canopy_mp_check under `canopy run -n N` for each of CANOPY_MP_PROCS (default
#             "2 3 4 8 2x2": N processes, NxK: K virtual ranks each), each protocol forced in turn (trees alone, direct,
#             the default table; CANOPY_MP_PROTOCOLS picks from "trees direct ll ll128 shared own owndirect default";
#             trees, direct, shared: staged (CANOPY_OWN_BUFFERS=0), shared with CANOPY_STAGE_ONLY_SHARED=1; own:
#             trees on their own buffers (the default); owndirect: the direct inbox kernels, then those trees;
#             peerdirect: the direct kernels on the callers' buffers, CANOPY_PEER_BUFFERS=1, then those trees),
#             CANOPY_MP_ARGS (extra canopy_mp_check options, e.g. --dtypes f32), each run cut at
#             CANOPY_MP_TIMEOUT seconds (300); CANOPY_MP_MPS=1: under an MPS daemon (calls in µs, not ~2 ms time
#             slices); CANOPY_MP_ARGS_<N> replaces CANOPY_MP_ARGS for N processes. One case at a time: cases at once
#             on one GPU deadlock under MPS (each communicator fits its grids to the whole GPU)
#                                                              -> processes.log, processes-N-K-PROTOCOL.log each
# shellcheck shell=bash disable=SC2154  # root, build, out, canopy, jobs, step, mps_*, bench_args: bench/device-run
step multi-process datachecks
# CANOPY_MP_MPS=1: under an MPS daemon (the processes' kernels run at once instead of in ~2 ms time slices)
mps=0; [ "${CANOPY_MP_MPS:-0}" = 1 ] && mps_start && mps=1
# One case: N processes x K ranks under one protocol's variables, its whole output in its own log; prints the
# processes' summary lines, or the log's end and FAILED.
mp_case() {  # n k name log args protocol-variables...
  local n="$1" k="$2" name="$3" log="$4" args="$5" ok=0
  shift 5
  # shellcheck disable=SC2086  # canopy_mp_check options, space-separated
  timeout "${CANOPY_MP_TIMEOUT:-300}" env "$@" "$build/bin/canopy" run -n "$n" -- \
    "$build/tests/canopy_mp_check" --per-process "$k" $args >"$log" 2>&1 || ok=$?
  if [ "$ok" = 0 ]; then
    echo "-- $n processes x $k ranks, $name: passed ($(date +%T))"
    grep -E '^process [0-9]+ \(ranks' "$log"
  else
    echo "-- $n processes x $k ranks, $name: FAILED, exit $ok ($(date +%T))"
    tail -n 60 "$log"
    echo "FAILED: $n x $k $name"
  fi
  [ "$ok" = 0 ]
}
for name in ${CANOPY_MP_PROTOCOLS:-trees direct default}; do
  for spec in ${CANOPY_MP_PROCS:-2 3 4 8 2x2}; do
    n="${spec%%x*}"; k=1; [ "$spec" != "$n" ] && k="${spec#*x}"
    case "$name" in
      # trees alone and direct, both through the staging area
      trees) protocol="CANOPY_LL_BYTES=0 CANOPY_LL128_BYTES=0 CANOPY_DIRECT_BYTES=0 CANOPY_OWN_BUFFERS=0" ;;
      direct) protocol="CANOPY_LL_BYTES=0 CANOPY_LL128_BYTES=0 CANOPY_OWN_BUFFERS=0" ;;
      # LL128 up to 64 MiB (off by default, so never reached without this), trees beyond
      ll128) protocol="CANOPY_LL_BYTES=0 CANOPY_LL128_BYTES=64MiB CANOPY_DIRECT_BYTES=0" ;;
      # LL alone up to its default limit (256 KiB), trees beyond
      ll) protocol="CANOPY_LL128_BYTES=0 CANOPY_DIRECT_BYTES=0" ;;
      # direct, staging only the buffers other ranks touch
      shared) protocol="CANOPY_LL_BYTES=0 CANOPY_LL128_BYTES=0 CANOPY_STAGE_ONLY_SHARED=1 CANOPY_OWN_BUFFERS=0" ;;
      # trees alone, unstaged (the default): lowered to touch only their own rank's buffers
      own) protocol="CANOPY_LL_BYTES=0 CANOPY_LL128_BYTES=0 CANOPY_DIRECT_BYTES=0 CANOPY_OWN_BUFFERS=1" ;;
      # the direct inbox kernels for what they take, then the unstaged trees
      owndirect) protocol="CANOPY_LL_BYTES=0 CANOPY_LL128_BYTES=0 CANOPY_OWN_BUFFERS=1 CANOPY_PEER_BUFFERS=0" ;;
      # the direct kernels on the callers' own buffers, each process mapping the other's (two processes on two GPUs,
      # the default there; elsewhere the inbox kernels), then the unstaged trees
      peerdirect) protocol="CANOPY_LL_BYTES=0 CANOPY_LL128_BYTES=0 CANOPY_PEER_BUFFERS=1" ;;
      default) protocol="" ;;
      *) echo "unknown protocol '$name' (trees direct ll ll128 shared own owndirect peerdirect default)"; continue ;;
    esac
    # CANOPY_MP_ARGS_<N> (e.g. CANOPY_MP_ARGS_8: fewer large counts) replaces CANOPY_MP_ARGS for N processes.
    args_var="CANOPY_MP_ARGS_${n}"
    args="${!args_var-${CANOPY_MP_ARGS:-}}"
    log="$out/processes-$n-$k-$name.log"
    echo "-- $n processes x $k ranks, $name: ${protocol} ${args} ($(date +%T))"
    # shellcheck disable=SC2086  # the protocol's variables, space-separated
    if ! mp_case "$n" "$k" "$name" "$log" "$args" $protocol; then
      # a client killed by the timeout leaves the MPS server refusing new ones: start a fresh one
      [ "$mps" = 1 ] && { mps_stop; mps_start || mps=0; }
    fi
  done
done 2>&1 | tee "$out/processes.log"
[ "$mps" = 1 ] && mps_stop
