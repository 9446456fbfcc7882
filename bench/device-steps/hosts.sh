# bench/device-run step `hosts`, sourced by it inside its loop over the steps (`return` ends the step). What it
# runs, its settings and its logs:
#   hosts     issue 33's acceptance: communicators over several "hosts" on GPU 0, `canopy run -n 4 --hosts H --
#             canopy_mp_check --topology detect` for each H of CANOPY_HOSTS_CASES (default "2,2 1,2,1"; CANOPY_HOST_ID
#             and NCCL_HOSTID per process, the real NCCL between hosts through its socket transport over lo:
#             NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1), every collective x f32,bf16,i32 x sum,max, in and out of
#             place, for each count list of CANOPY_HOSTS_COUNTS (default "1,1028,65540,3000004,40000004"), with
#             CANOPY_LOG=info (the phases and their times) and NCCL_DEBUG=INFO (its transport, "NET/Socket"); each
#             run cut at CANOPY_HOSTS_TIMEOUT seconds (420); then a join with CANOPY_NCCL_LIBRARY=/nonexistent
#             (must fail, naming it); CANOPY_HOSTS_TESTS=1: the `gpu` tests HostsOnGpu.* too (CANOPY_HOSTS_PIECE_BYTES,
#             when set, reaches the processes: the matrix cut into pipelined pieces). A device call is 10
#             minutes: give one case per call (CANOPY_HOSTS_CASES=2,2, then 1,2,1) where the build came before
#                                                                             -> hosts.log, hosts-H-COUNTS.log
# shellcheck shell=bash disable=SC2154  # root, build, out, canopy, jobs, step, mps_*, bench_args: bench/device-run
step multi-host datachecks
for hosts in ${CANOPY_HOSTS_CASES:-2,2 1,2,1}; do
  n=$(echo "$hosts" | tr ',' '\n' | awk '{ s += $1 } END { print s }')
  for counts in ${CANOPY_HOSTS_COUNTS:-1,1028,65540,3000004,40000004}; do
    log="$out/hosts-${hosts//,/-}-${counts//,/-}.log"
    echo "-- $n processes on hosts $hosts, counts $counts ($(date +%T))"
    if timeout "${CANOPY_HOSTS_TIMEOUT:-420}" env CANOPY_LOG=info NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET \
      NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1 CANOPY_BOOTSTRAP_TIMEOUT_S=120 CANOPY_STALL_TIMEOUT_S=120 \
      "$build/bin/canopy" run -n "$n" --hosts "$hosts" -- "$build/tests/canopy_mp_check" --topology detect \
      --collectives broadcast,reduce,allreduce,allgather,reduce_scatter --dtypes f32,bf16,i32 --ops sum,max \
      --counts "$counts" ${CANOPY_HOSTS_ARGS:-} >"$log" 2>&1; then
      grep -E '^process [0-9]+ \(ranks' "$log"
    else
      tail -n 60 "$log"; echo "FAILED: hosts $hosts counts $counts"
    fi
    grep -m 1 'ranks on [0-9]* hosts' "$log"
    grep -m 2 'NET/Socket' "$log"
    grep -m 3 'through NCCL' "$log"
  done
done 2>&1 | tee "$out/hosts.log"
{
  echo "-- without the real NCCL (CANOPY_NCCL_LIBRARY=/nonexistent): the join must fail, naming it"
  CANOPY_NCCL_LIBRARY=/nonexistent timeout 120 "$build/bin/canopy" run -n 2 --hosts 1,1 -- \
    "$build/tests/canopy_mp_check" --topology detect --collectives allreduce --counts 7 2>&1 | grep -m 2 'join failed'
  if [ "${CANOPY_HOSTS_TESTS:-0}" = 1 ]; then
    (cd "$build" && timeout 900 ctest -L gpu -R 'HostsOnGpu' --output-on-failure) 2>&1 | tail -n 40
  fi
} 2>&1 | tee -a "$out/hosts.log"
