# bench/device-run step `p2ptests`, sourced by it inside its loop over the steps (`return` ends the step). What it
# runs, its settings and its logs:
#   p2ptests  nccl-tests' point-to-point binaries (sendrecv, alltoall, gather, scatter, hypercube; CANOPY_P2PTESTS)
#             through libcanopy_nccl.so under mpirun -np N (CANOPY_P2PTESTS_NP, default "2 4"), every rank on GPU 0,
#             twice: each rank with its own NCCL_HOSTID, CANOPY_NCCL_REAL=1 and CANOPY_NCCL_FORWARD naming the calls (a
#             real NCCL communicator beside Canopy's must be made and every call forwarded to it: exit 0 and 0
#             out-of-bounds values), then without (none can exist: Canopy serves every call across the processes,
#             pair by pair: exit 0, 0 out-of-bounds values, the log saying served by Canopy and nothing forwarded);
#             small sizes (CANOPY_P2PTESTS_ARGS, default -b 8 -e 4M -f 8 -d float -c 1 -n 5 -w 2), each run cut at
#             CANOPY_NCCLTESTS_TIMEOUT (300 s)                                 -> p2ptests.log, p2ptests-*.log
# shellcheck shell=bash disable=SC2154  # root, build, out, canopy, jobs, step, ntb: bench/device-run
step nccl-tests point-to-point
nt_build "$out/p2ptests-build.log" || return
lib="$build/libcanopy_nccl.so"
read -r -a p2p_args <<<"${CANOPY_P2PTESTS_ARGS:--b 8 -e 4M -f 8 -d float -c 1 -n 5 -w 2}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
p2p_verdicts=0
# Run by each rank's own shell: the binary with NCCL_HOSTID set from Open MPI's rank.
# shellcheck disable=SC2016  # expanded by that shell, not this one
own_hostid='NCCL_HOSTID="canopy-p2p-$OMPI_COMM_WORLD_RANK" exec "$0" "$@"'
{
  echo "p2ptests: real NCCL ${CANOPY_NCCL_LIBRARY:-where the library finds one}"
  for t in ${CANOPY_P2PTESTS:-sendrecv alltoall gather scatter hypercube}; do
    [ -x "$ntb/mpi/${t}_perf" ] || { echo "p2ptests: no MPI build of ${t}_perf (mpicc missing?)"; continue; }
    for np in ${CANOPY_P2PTESTS_NP:-2 4}; do
      # With a real NCCL beside: each rank its own NCCL_HOSTID (set by a shell around the binary, from Open MPI's
      # rank), CANOPY_NCCL_REAL=1 so the init fails where none can be made.
      log="$out/p2ptests-$t-np$np-real.log"
      nt_run "$t np$np real NCCL beside" "$log" mpirun -np "$np" --oversubscribe --bind-to none \
        -x LD_PRELOAD="$lib" -x NCCL_TESTS_DEVICE=0 -x LD_LIBRARY_PATH -x CANOPY_NCCL_LIBRARY -x CANOPY_CACHE_DIR \
        -x NCCL_NVLS_ENABLE -x CANOPY_NCCL_REAL=1 -x CANOPY_LOG=info \
        -x CANOPY_NCCL_FORWARD=sendrecv,alltoall,gather,scatter \
        sh -c "$own_hostid" "$ntb/mpi/${t}_perf" "${p2p_args[@]}" -g 1
      rc=$?
      wrong="$(grep -h '# Out of bounds values' "$log" | awk '{print $7}' | head -1)"
      forwarded="$(grep -c 'forwarded to the real NCCL' "$log")"
      if [ "$rc" = 0 ] && grep -q '# Out of bounds values : 0 OK' "$log" && [ "$forwarded" -gt 0 ]; then
        echo "p2p verdict: $t np$np real: right (0 out of bounds, $forwarded log lines say forwarded)"
      else
        echo "p2p verdict: $t np$np real: WRONG (exit $rc, out of bounds ${wrong:-?}, $forwarded forwarded lines)"
        p2p_verdicts=$((p2p_verdicts + 1))
      fi
      # Without: the processes share GPU 0 with no NCCL_HOSTID of their own, so no real communicator can exist, and
      # Canopy serves every call.
      log="$out/p2ptests-$t-np$np-none.log"
      nt_run "$t np$np no real NCCL" "$log" mpirun -np "$np" --oversubscribe --bind-to none \
        -x LD_PRELOAD="$lib" -x NCCL_TESTS_DEVICE=0 -x LD_LIBRARY_PATH -x CANOPY_NCCL_LIBRARY -x CANOPY_CACHE_DIR \
        -x NCCL_NVLS_ENABLE -x CANOPY_LOG=info "$ntb/mpi/${t}_perf" "${p2p_args[@]}" -g 1
      rc=$?
      wrong="$(grep -h '# Out of bounds values' "$log" | awk '{print $7}' | head -1)"
      served="$(grep -c 'served by Canopy' "$log")"
      forwarded="$(grep -c 'forwarded to the real NCCL' "$log")"
      if [ "$rc" = 0 ] && grep -q '# Out of bounds values : 0 OK' "$log" && [ "$served" -gt 0 ] &&
        [ "$forwarded" = 0 ]; then
        echo "p2p verdict: $t np$np none: right (0 out of bounds, $served log lines say served by Canopy)"
      else
        echo "p2p verdict: $t np$np none: WRONG (exit $rc, out of bounds ${wrong:-?}, $served served and" \
          "$forwarded forwarded lines)"
        p2p_verdicts=$((p2p_verdicts + 1))
      fi
    done
  done
  echo "p2ptests: $p2p_verdicts wrong verdicts"
} 2>&1 | tee "$out/p2ptests.log"
