# bench/device-run step `nccltests`, sourced by it inside its loop over the steps (`return` ends the step). What it
# runs, its settings and its logs:
#   nccltests nccl-tests (source in .nccl-tests/src, carried; built by bench/nccl-tests) through libcanopy_nccl.so:
#             -g 1 beside the real NCCL in CANOPY_NCCLTESTS_ROUNDS rounds (5) alternating which goes first, compared
#             with `canopy nccl-tests-compare --target 1.0` (medians, ranges, verdicts); and mpirun -np N
#             (CANOPY_NCCLTESTS_NP, default "2 4", "" for none) with every rank on GPU 0, -R 0 and 1;
#             CANOPY_NCCLTESTS (binaries), _MAX (128M), _DTYPES (all), _OPS (all), _ARGS (more, e.g. -n 5 -w 1),
#             _MPS=1 (under an MPS daemon, as procbench, restarted after a run cut by _TIMEOUT). The first mpirun run of each binary and N compiles a kernel per type, operator and protocol on
#             first use (-d all -o all: minutes), so keep _TIMEOUT near its default (300) there
#                                                                             -> nccltests.log, nccltests-*.log
# shellcheck shell=bash disable=SC2154  # root, build, out, canopy, jobs, step, bench_args, wheel_nccl, ntb: device-run
# nccl-tests (source carried in .nccl-tests/src, built here by bench/nccl-tests) through libcanopy_nccl.so:
# one process (-g 1), then under mpirun -np N with every process on GPU 0 (NCCL_TESTS_DEVICE=0), plain and
# with registered buffers (-R 1); the real NCCL once with one rank as the baseline of the same binaries.
step nccl-tests
nt_build "$out/nccltests-build.log" || return
lib="$build/libcanopy_nccl.so"
# The real NCCL beside: PyTorch's wheel (2.28.9, the version of the nccl.h nccl-tests is built with; the image's
# system 2.28.3 refuses some of -d all's types), else CANOPY_NCCL_LIBRARY.
real_lib="${CANOPY_NCCL_LIBRARY:-/nonexistent/x}"; [ -e "$wheel_nccl" ] && real_lib="$wheel_nccl"
real_dir="$(dirname "$real_lib")"
echo "nccltests: real NCCL $real_lib"
read -r -a nt_args <<<"-b 8 -e ${CANOPY_NCCLTESTS_MAX:-128M} -f 4 -c 1 -d ${CANOPY_NCCLTESTS_DTYPES:-all} -o ${CANOPY_NCCLTESTS_OPS:-all}"
read -r -a nt_extra <<<"${CANOPY_NCCLTESTS_ARGS:-}"  # e.g. -n 5 -w 1
nt_args+=("${nt_extra[@]}")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mps=0; [ "${CANOPY_NCCLTESTS_MPS:-0}" = 1 ] && mps_start && mps=1
# mpirun passes on only the variables named with -x: the ranks find our MPS daemon through these.
mps_x=(); [ "$mps" = 1 ] && mps_x=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY)
nt_log() {  # nt_log NAME COMMAND...: device-run's nt_run into nccltests-NAME.log
  local name="$1"; shift
  nt_run "$name" "$out/nccltests-$name.log" "$@"
  local rc=$?
  # A client killed by the timeout leaves the MPS server failed ("CUDA-capable device(s) is/are busy or
  # unavailable" for every later client): start a fresh one.
  if [ "$rc" = 124 ] && [ "$mps" = 1 ]; then mps_stop; mps_start || mps=0; fi
  return "$rc"
}
for t in ${CANOPY_NCCLTESTS:-all_reduce all_gather broadcast reduce_scatter reduce}; do
  # -g 1, the real NCCL and the library in CANOPY_NCCLTESTS_ROUNDS rounds (5), which goes first alternating by round
  # (real first in odd rounds); each round's output in nccltests-T-LIB-g1.roundR.txt, all of a library's appended into
  # nccltests-T-LIB-g1.log, so `canopy nccl-tests-compare` gives each size's median, the range and --target's verdict.
  # The real NCCL's view of this machine, as NCCL_TOPO_DUMP_FILE writes it: test data for `canopy topo import`.
  rounds="${CANOPY_NCCLTESTS_ROUNDS:-5}"
  for round in $(seq "$rounds"); do
    order=(real canopy); [ $((round % 2)) = 0 ] && order=(canopy real)
    for lib_name in "${order[@]}"; do
      if [ "$lib_name" = real ]; then
        LD_LIBRARY_PATH="$real_dir:$LD_LIBRARY_PATH" NCCL_TOPO_DUMP_FILE="$out/nccl-topo-dump.xml" \
          nt_run "$t-real-g1 round $round" "$out/nccltests-$t-real-g1.round$round.txt" "$ntb/plain/${t}_perf" \
          "${nt_args[@]}" -g 1
      else
        LD_PRELOAD="$lib" nt_run "$t-canopy-g1 round $round" "$out/nccltests-$t-canopy-g1.round$round.txt" \
          "$ntb/plain/${t}_perf" "${nt_args[@]}" -g 1
      fi
    done
  done
  for lib_name in real canopy; do
    cat "$out"/nccltests-"$t"-$lib_name-g1.round*.txt >"$out/nccltests-$t-$lib_name-g1.log" 2>/dev/null
  done
  "$canopy" nccl-tests-compare "$out/nccltests-$t-real-g1.log" "$out/nccltests-$t-canopy-g1.log" --target 1.0 \
    >"$out/nccltests-$t-g1-compare.txt" 2>&1
  grep -E '^# busbw ratio NEW/BASE out of place over the rounds' -A1 "$out/nccltests-$t-g1-compare.txt" | head -2
  grep -cE ' (met|missed|overlaps)$' "$out/nccltests-$t-g1-compare.txt" | xargs echo "  verdicts:"
  grep -oE ' (met|missed|overlaps)$' "$out/nccltests-$t-g1-compare.txt" | sort | uniq -c
  if ! grep -q '^# Avg bus bandwidth' "$out/nccltests-$t-canopy-g1.log" && command -v gdb >/dev/null; then  # where
    gdb -q -batch -ex run -ex bt -ex 'info sharedlibrary' --args env LD_PRELOAD="$lib" "$ntb/plain/${t}_perf" \
      "${nt_args[@]}" -g 1 >"$out/nccltests-$t-canopy-g1-gdb.log" 2>&1
    grep -A25 'received signal' "$out/nccltests-$t-canopy-g1-gdb.log" | head -30
  fi
  [ -x "$ntb/mpi/${t}_perf" ] || continue
  for np in ${CANOPY_NCCLTESTS_NP-2 4}; do
    for reg in 0 1; do
      nt_log "$t-canopy-np$np-R$reg" mpirun -np "$np" --oversubscribe --bind-to none \
        -x LD_PRELOAD="$lib" -x NCCL_TESTS_DEVICE=0 -x LD_LIBRARY_PATH -x CANOPY_NCCL_LIBRARY -x CANOPY_CACHE_DIR \
        -x NCCL_NVLS_ENABLE -x CANOPY_LOG "${mps_x[@]}" "$ntb/mpi/${t}_perf" "${nt_args[@]}" -g 1 -R "$reg"
    done
  done
done 2>&1 | tee "$out/nccltests.log"
[ "$mps" = 1 ] && mps_stop
