# bench/device-run step `gpus`, sourced by it inside its loop over the steps (`return` ends the step). What it
# runs, its settings and its logs:
#   gpus      every GPU of the machine (N of them, at least 2; nvidia-h200-x4, -x8), the topology detected, Canopy
#             beside the real NCCL (PyTorch's wheel where there is one), the parts named in CANOPY_GPUS_PARTS (default
#             "bench procs check c10d nccltests"):
#               bench      canopy bench --vs-nccl --check in one process, all five collectives, CANOPY_GPUS_SIZES
#                          (8:1G)                                                   -> gpus-bench-1p.json/.log
#               procs      the same with --procs N (one process per GPU, NCCL likewise)   -> gpus-bench-pN.json/.log
#               check      canopy run -n N -- canopy_mp_check --spread 1 --topology detect: N processes on N GPUs,
#                          every collective x f32,bf16,i32 x sum,max,avg x counts 0,1,7,1028,65540,3000004, in and
#                          out of place (CANOPY_GPUS_CHECK_ARGS replaces those options)          -> gpus-check.log
#               c10d       torchrun --nproc_per_node N tests/torch/c10d_check.py through libcanopy_nccl.so
#                                                                                              -> gpus-c10d.log
#               nccltests  the five nccl-tests binaries under mpirun -np N (MPI=1, built from .nccl-tests/src, which
#                          the call carries), -b 8 -e CANOPY_GPUS_NT_MAX (256M) -f 4 -c 1, the real NCCL and then
#                          libcanopy_nccl.so                                       -> gpus-nt-NAME-{real,canopy}.log
#             Give CANOPY_PACK=1: the logs outnumber the 8 files a call brings back (each part's go into logs.tar as
#             it ends).
# shellcheck shell=bash disable=SC2154  # root, build, out, canopy, step, bench_args, wheel_nccl, ntb: bench/device-run
step every GPU, one process each
gpus_n=$(nvidia-smi -L | wc -l)
if [ "$gpus_n" -lt 2 ]; then echo "gpus: needs 2 GPUs or more, this machine has $gpus_n"; return; fi
gpus_real="${CANOPY_GPUS_NCCL:-$wheel_nccl}"
[ -e "$gpus_real" ] || gpus_real="$CANOPY_NCCL_LIBRARY"
gpus_library="$build/libcanopy_nccl.so"
gpus_devices="$(seq -s, 0 $((gpus_n - 1)))"
echo "gpus: $gpus_n GPUs ($gpus_devices), real NCCL $gpus_real"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for part in ${CANOPY_GPUS_PARTS:-bench procs check c10d nccltests}; do
  [ -e "$out/deadline.txt" ] && { echo "-- gpus $part: not run (the deadline passed)"; continue; }
  echo "-- gpus $part ($(date +%T))"
  case "$part" in
    bench | procs)
      name=1p procs=()
      [ "$part" = procs ] && name="p$gpus_n" procs=(--procs "$gpus_n")
      CANOPY_NCCL_LIBRARY="$gpus_real" timeout "${CANOPY_BENCH_TIMEOUT:-400}" "$canopy" bench "${procs[@]}" \
        --collective all --sizes "${CANOPY_GPUS_SIZES:-8:1G}" --vs-nccl --check --json "$out/gpus-bench-$name.json" \
        "${bench_args[@]}" >"$out/gpus-bench-$name.log" 2>&1
      echo "   exit $?"
      grep -E '^# [a-z]+:|^#.*wrong|error' "$out/gpus-bench-$name.log" | cut -c1-200 | head -12 ;;
    check)
      gpus_check_default="--dtypes f32,bf16,i32 --ops sum,max,avg --counts 0,1,7,1028,65540,3000004"
      read -r -a gpus_check <<<"${CANOPY_GPUS_CHECK_ARGS:-$gpus_check_default}"
      timeout "${CANOPY_MP_TIMEOUT:-300}" "$canopy" run -n "$gpus_n" -- "$build/tests/canopy_mp_check" --spread 1 \
        --topology detect "${gpus_check[@]}" >"$out/gpus-check.log" 2>&1
      echo "   exit $?"
      grep -E '^process [0-9]+ \(ranks|wrong element|failed' "$out/gpus-check.log" | head -20 ;;
    c10d)
      torchrun=(torchrun)
      command -v torchrun >/dev/null || torchrun=(python3 -m torch.distributed.run)
      CANOPY_TORCH_DEVICES="$gpus_devices" LD_PRELOAD="$gpus_library" CANOPY_NCCL_LIBRARY="$gpus_real" \
        timeout "${CANOPY_TORCH_TIMEOUT:-300}" "${torchrun[@]}" --standalone --nproc_per_node "$gpus_n" \
        "$root/tests/torch/c10d_check.py" >"$out/gpus-c10d.log" 2>&1
      echo "   exit $?"
      grep -E '^c10d_check: |WRONG|^wrong:|Error' "$out/gpus-c10d.log" | tail -n 8 ;;
    nccltests)
      nt_build "$out/gpus-nt-build.log" || continue
      [ -x "$ntb/mpi/all_reduce_perf" ] || { echo "gpus: no MPI build of nccl-tests (mpicc missing)"; continue; }
      gpus_real_dir="$(dirname "$gpus_real")"
      for t in all_reduce broadcast reduce all_gather reduce_scatter; do
        for with in real canopy; do
          preload=()
          [ "$with" = canopy ] && preload=(-x LD_PRELOAD="$gpus_library")
          LD_LIBRARY_PATH="$gpus_real_dir:$LD_LIBRARY_PATH" CANOPY_NCCL_LIBRARY="$gpus_real" \
            nt_run "$t-$with" "$out/gpus-nt-$t-$with.log" mpirun -np "$gpus_n" --bind-to none "${preload[@]}" \
            -x LD_LIBRARY_PATH -x CANOPY_NCCL_LIBRARY -x CANOPY_CACHE_DIR -x NCCL_NVLS_ENABLE "$ntb/mpi/${t}_perf" \
            -b 8 -e "${CANOPY_GPUS_NT_MAX:-256M}" -f 4 -c 1 -g 1
        done
      done ;;
    *) echo "gpus: unknown part '$part' (bench procs check c10d nccltests)" ;;
  esac
  pack_so_far  # device-run's: this part's logs kept if the call is stopped later
done
