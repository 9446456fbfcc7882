# bench/device-run step `x2`, sourced by it inside its loop over the steps (`return` ends the step). What it
# runs, its settings and its logs:
#   x2        two GPUs, one process each, Canopy against NCCL (needs 2 GPUs: nvidia-h200-x2), the parts named in
#             CANOPY_X2_PARTS (default "tests bench nccltests torch hosts"), the real NCCL being PyTorch's wheel
#             (2.28.9) where there is one (CANOPY_X2_NCCL overrides):
#               tests      the GPU tests of CANOPY_X2_TESTS (default: multi-process, NCCL-API and the h200x2 matrix), two
#                          processes on two GPUs where a test has them                 -> x2-tests.log
#               bench      canopy bench --procs 2 --vs-nccl, all five collectives, f32 and bf16, CANOPY_X2_SIZES
#                          (8:1G)                                     -> x2-bench-f32.json/.log, x2-bench-bf16.json/.log
#               staged     the same with CANOPY_OWN_BUFFERS=0 (not in the default parts)     -> x2-bench-staged-*
#               shared     staged with CANOPY_STAGE_ONLY_SHARED=1 (not in the default parts)   -> x2-bench-shared-*
#               own        the same with CANOPY_OWN_BUFFERS=1 (the default; not in the parts)  -> x2-bench-own-*
#               owntrees   the same with CANOPY_DIRECT_BYTES=0 (own buffers)          -> x2-bench-owntrees-*
#               variant    the same with the variables of CANOPY_X2_VARIANT (e.g. "CANOPY_LL128_BYTES=32MiB")
#                                                                                           -> x2-bench-variant-*
#               sharedown  the same with CANOPY_STAGE_ONLY_SHARED=1 CANOPY_OWN_BUFFERS=1    -> x2-bench-sharedown-*
#               variants   the bench under each setting of CANOPY_X2_VARIANTS (';'-separated lists of VAR=VALUE, ""
#                          the defaults) in turn, CANOPY_X2_VARIANT_ROUNDS times (2), CANOPY_X2_COLLECTIVES (all),
#                          CANOPY_X2_DTYPES (f32); canopy bench-compare of each setting against the first of the same
#                          round, and of the first's rounds 1 and 2 (not in the default parts)
#                                                             -> x2-bench-vV-rR-DTYPE.json/.log, x2-variants.log
#               nccltests  the five nccl-tests binaries, -b 8 -e CANOPY_X2_NT_MAX (1G) -f 2 -c 1 -a 3 (the slowest
#                          process's time, as canopy bench reports; CANOPY_X2_NT_ARGS more: "-n 200" steadies the
#                          small sizes), single-process -g 2 and mpirun -np 2 (one
#                          process per GPU), the real NCCL and then libcanopy_nccl.so (CANOPY_X2_NT_RUNS picks from
#                          "real-g2 canopy-g2 real-np2 canopy-np2", CANOPY_X2_NCCLTESTS the binaries;
#                          CANOPY_X2_NT_ENV VAR=VALUE settings for the runs through the library)
#                                                                                  -> x2-nt-NAME-{real,canopy}-{g2,np2}.log
#               torch      torchrun --nproc_per_node 2 (a GPU per rank) through the library: c10d_check.py; then
#                          train_bench.py DDP and FSDP2 (~100 M parameters, 10 + 50 steps), real NCCL and library
#                          alternating (which goes first too, by round), CANOPY_X2_TORCH_ROUNDS times (5), and
#                          train_compare.py (median, range, verdict only where the range clears it); the GPUs' clocks
#                          sampled meanwhile   -> x2-torch-*.log, x2-train-*.json, x2-gpu-samples-torch.csv
#               torchab    train_bench.py (CANOPY_X2_TORCH_MODES, default ddp) through the real NCCL and then the library
#                          under each setting of CANOPY_X2_TORCH_VARIANTS (';'-separated lists of VAR=VALUE, "" the
#                          defaults; default "", the defaults alone; e.g. ";CANOPY_LARGE_BLOCKS=64
#                          CANOPY_HUGE_BYTES=128MiB"), in turn, CANOPY_X2_TORCH_ROUNDS times (2; more narrow the
#                          spread: spells of slow steps move a run's median); train_compare.py per setting; the GPUs'
#                          clocks sampled meanwhile (not in the default parts)
#                                                   -> x2-torchab.log, x2-ab-*.json, x2-gpu-samples-torchab.csv
#               cost       tests/torch/call_cost.py: the host's and the GPU's time per c10d call (CANOPY_X2_COST_SIZES,
#                          8,64K,1M,32M,64M), the real NCCL and the library alternating, CANOPY_X2_COST_ROUNDS times
#                          (2), each beside the first real NCCL run (not in the default parts)
#                                                             -> x2-cost.log, x2-cost-{real,canopy}-R.json/.log
#               hosts      two "hosts" of one GPU each (canopy run --hosts 1,1), NCCL between them: every collective
#                          x f32, bf16, i32 x sum, max, CANOPY_HOSTS_COUNTS                         -> x2-hosts.log
#               profile    the host's time per call by phase (issue 31): CANOPY_PROFILE_CALLS=1 canopy bench
#                          --procs 2 --host-time, allreduce and broadcast of 8 B - 64 KiB, then allreduce again under
#                          CANOPY_CHECK_POINTERS=0 and with one process on both GPUs (not in the default parts)
#                                                                                        -> x2-profile.log
# shellcheck shell=bash disable=SC2154  # root, build, out, canopy, jobs, step, bench_args, wheel_nccl, ntb: device-run
# Issue 34's run: two GPUs, one process each, Canopy beside the real NCCL in the same call.
gpus=$(nvidia-smi -L | wc -l)
if [ "$gpus" -lt 2 ]; then echo "x2: needs 2 GPUs, this machine has $gpus (run on nvidia-h200-x2)"; return; fi
real_nccl="${CANOPY_X2_NCCL:-$wheel_nccl}"
[ -e "$real_nccl" ] || real_nccl="$CANOPY_NCCL_LIBRARY"
echo "x2: real NCCL $real_nccl"
library="$build/libcanopy_nccl.so"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# The GPUs' clocks, power and temperature every 250 ms while a torch part runs (reading only), into
# $out/x2-gpu-samples-PART.csv: whether the spells of slow training steps (2026-11-27: ~2 x, in runs of either
# library) follow the clocks. train_bench.py's step_start_unix lines the steps up with the samples' timestamps.
x2_samples_start() {
  local fields="timestamp,index,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu"
  nvidia-smi --query-gpu="$fields,clocks_event_reasons.active" --format=csv,noheader -c 1 >/dev/null 2>&1 &&
    fields="$fields,clocks_event_reasons.active"
  echo "# $fields" >"$out/x2-gpu-samples-$1.csv"
  nvidia-smi --query-gpu="$fields" --format=csv,noheader -lms 250 >>"$out/x2-gpu-samples-$1.csv" 2>&1 &
  x2_sampler=$!
}
x2_samples_stop() { kill "$x2_sampler" 2>/dev/null; wait "$x2_sampler" 2>/dev/null; }
# The parts torch, torchab and cost start their ranks with torchrun, or its module where the image has no command.
torchrun=(torchrun)
command -v torchrun >/dev/null || torchrun=(python3 -m torch.distributed.run)
for part in ${CANOPY_X2_PARTS:-tests bench nccltests torch hosts}; do
  case "$part" in
    tests)
      step x2 gpu tests
      ctest --test-dir "$build" -L gpu -R "${CANOPY_X2_TESTS:-OnGpus|MultiProcess|NcclApi|NcclTeardown|NcclBadArgument|h200x2}" \
        --output-on-failure --timeout "${CANOPY_GPU_TEST_TIMEOUT:-300}" -j "$jobs" -V 2>&1 |
        grep -v '^[0-9]*: \[ *\(RUN\|OK\) ' >"$out/x2-tests.log"
      grep -E '^[0-9]+: \[ (runs|note) \]|tests passed|tests failed|Failed|FAILED|\*\*\*|Total Test time' "$out/x2-tests.log" | tail -40 ;;
    profile)
      step x2 host time per call by phase
      {
        for c in allreduce broadcast; do
          echo "-- --procs 2, $c"
          CANOPY_PROFILE_CALLS=1 timeout 150 "$canopy" bench --procs 2 -c "$c" --sizes 8:64K --host-time
        done
        echo "-- --procs 2, allreduce, CANOPY_CHECK_POINTERS=0"
        CANOPY_CHECK_POINTERS=0 CANOPY_PROFILE_CALLS=1 timeout 150 "$canopy" bench --procs 2 -c allreduce \
          --sizes 8:64K --host-time
        echo "-- one process on both GPUs, allreduce"
        CANOPY_PROFILE_CALLS=1 timeout 150 "$canopy" bench -c allreduce --sizes 8:64K --host-time
      } 2>&1 | grep -v '^# [a-z]' | tee "$out/x2-profile.log" | grep -E '^--|profile of' ;;
    bench)
      for dtype in ${CANOPY_X2_DTYPES:-f32 bf16}; do
        step x2 canopy bench --procs 2 --vs-nccl --dtype "$dtype"
        CANOPY_NCCL_LIBRARY="$real_nccl" timeout "${CANOPY_BENCH_TIMEOUT:-400}" "$canopy" bench --procs 2 --vs-nccl \
          --collective all --sizes "${CANOPY_X2_SIZES:-8:1G}" --dtype "$dtype" --json "$out/x2-bench-$dtype.json" \
          "${bench_args[@]}" 2>&1 | tee "$out/x2-bench-$dtype.log" | grep -vE '^canopy: (info|debug)' | tail -160
      done ;;
    staged|shared|own|owntrees|sharedown|variant)
      # The bench again with other multi-process settings, for the A/B against part `bench` of the same call:
      # staged, CANOPY_OWN_BUFFERS=0 (the trees and the direct protocol through the staging area); shared,
      # that with CANOPY_STAGE_ONLY_SHARED=1 (the direct protocol's outputs written in place); own,
      # CANOPY_OWN_BUFFERS=1 (the default: the direct inbox kernels and the planned trees unstaged); owntrees,
      # that with the direct protocol off (the trees from LL's limit up); sharedown, both switches.
      case "$part" in
        staged) variant=(CANOPY_OWN_BUFFERS=0) ;;
        shared) variant=(CANOPY_STAGE_ONLY_SHARED=1 CANOPY_OWN_BUFFERS=0) ;;
        own) variant=(CANOPY_OWN_BUFFERS=1) ;;
        owntrees) variant=(CANOPY_OWN_BUFFERS=1 CANOPY_DIRECT_BYTES=0) ;;
        variant) read -r -a variant <<<"${CANOPY_X2_VARIANT:-CANOPY_X2_VARIANT=unset}" ;;
        *) variant=(CANOPY_STAGE_ONLY_SHARED=1 CANOPY_OWN_BUFFERS=1) ;;
      esac
      for dtype in ${CANOPY_X2_DTYPES:-f32 bf16}; do
        step x2 canopy bench --procs 2 --vs-nccl --dtype "$dtype", "${variant[@]}"
        env "${variant[@]}" CANOPY_NCCL_LIBRARY="$real_nccl" timeout "${CANOPY_BENCH_TIMEOUT:-400}" \
          "$canopy" bench --procs 2 --vs-nccl --collective all --sizes "${CANOPY_X2_SIZES:-8:1G}" --dtype "$dtype" \
          --json "$out/x2-bench-$part-$dtype.json" "${bench_args[@]}" 2>&1 | tee "$out/x2-bench-$part-$dtype.log" |
          grep -vE '^canopy: (info|debug)' | tail -160
      done ;;
    variants)
      # An A/B of settings on the bench: each round runs the bench under each setting of CANOPY_X2_VARIANTS in turn
      # (alternating, so the machine's drift falls on every setting alike), then canopy bench-compare puts each
      # setting beside the first of the same round, and the first setting's rounds beside each other (the spread).
      IFS=';' read -r -a settings <<<"${CANOPY_X2_VARIANTS-}"
      if [ "${#settings[@]}" -lt 2 ]; then
        echo "x2 variants: give CANOPY_X2_VARIANTS, two or more ';'-separated settings (\"\" the defaults), e.g." \
          "\";CANOPY_LARGE_BLOCKS=48\""
        continue
      fi
      rounds="${CANOPY_X2_VARIANT_ROUNDS:-2}"
      for dtype in ${CANOPY_X2_DTYPES:-f32}; do
        for round in $(seq "$rounds"); do
          for v in "${!settings[@]}"; do
            read -r -a setting <<<"${settings[$v]}"
            step x2 bench variant "$v" round "$round" "$dtype": "${setting[*]:-defaults}"
            env "${setting[@]}" CANOPY_NCCL_LIBRARY="$real_nccl" timeout "${CANOPY_BENCH_TIMEOUT:-400}" "$canopy" \
              bench --procs 2 --vs-nccl --collective "${CANOPY_X2_COLLECTIVES:-all}" \
              --sizes "${CANOPY_X2_SIZES:-8:1G}" --dtype "$dtype" --json "$out/x2-bench-v$v-r$round-$dtype.json" \
              "${bench_args[@]}" \
              >"$out/x2-bench-v$v-r$round-$dtype.log" 2>&1 || echo "   exit $? (see x2-bench-v$v-r$round-$dtype.log)"
          done
        done
        {
          for round in $(seq "$rounds"); do
            for v in "${!settings[@]}"; do
              [ "$v" = 0 ] && continue
              echo "-- $dtype round $round: setting $v (${settings[$v]}) against setting 0 (${settings[0]:-defaults})"
              "$canopy" bench-compare "$out/x2-bench-v0-r$round-$dtype.json" "$out/x2-bench-v$v-r$round-$dtype.json" \
                2>&1 | sed "s|$out/||"
            done
          done
          if [ "$rounds" -ge 2 ]; then
            echo "-- $dtype: setting 0 (${settings[0]:-defaults}), round 2 against round 1 (the spread of one setting)"
            "$canopy" bench-compare "$out/x2-bench-v0-r1-$dtype.json" "$out/x2-bench-v0-r2-$dtype.json" 2>&1 |
              sed "s|$out/||"
          fi
        } | tee -a "$out/x2-variants.log" | grep -E '^--|^==|geometric mean|WRONG|error'
      done ;;
    nccltests)
      step x2 nccl-tests
      nt_build "$out/x2-nt-build.log" || continue
      # -a 3: each size's time is the slowest process's, as canopy bench --procs reports it. nccl-tests' default (-a 1)
      # averages the processes: a reduce's root and its sender, 0.62-0.69 x the bench's NCCL time on 2026-11-28.
      read -r -a x2_nt <<<"-b 8 -e ${CANOPY_X2_NT_MAX:-1G} -f 2 -c 1 -a 3 ${CANOPY_X2_NT_ARGS:-}"
      # CANOPY_X2_NT_ENV: VAR=VALUE settings for the runs through the library (each rank gets them), e.g.
      # "CANOPY_ENGINE_FD_BUFFERS=0".
      read -r -a x2_nt_env <<<"${CANOPY_X2_NT_ENV:-}"
      x2_nt_export=()
      for v in "${x2_nt_env[@]}"; do x2_nt_export+=(-x "$v"); done
      real_dir="$(dirname "$real_nccl")"
      x2_nt_run() {  # NAME COMMAND...: device-run's nt_run into x2-nt-NAME.log, for the runs of CANOPY_X2_NT_RUNS
        local name="$1"; shift
        case " ${CANOPY_X2_NT_RUNS:-real-g2 canopy-g2 real-np2 canopy-np2} " in  # which of the four runs
          *" ${name#*-}"*) ;;
          *) return 0 ;;
        esac
        nt_run "$name" "$out/x2-nt-$name.log" "$@"
      }
      for t in ${CANOPY_X2_NCCLTESTS:-all_reduce all_gather broadcast reduce_scatter reduce}; do
        LD_LIBRARY_PATH="$real_dir:$LD_LIBRARY_PATH" x2_nt_run "$t-real-g2" "$ntb/plain/${t}_perf" "${x2_nt[@]}" -g 2
        LD_LIBRARY_PATH="$real_dir:$LD_LIBRARY_PATH" CANOPY_NCCL_LIBRARY="$real_nccl" LD_PRELOAD="$library" \
          x2_nt_run "$t-canopy-g2" env "${x2_nt_env[@]}" "$ntb/plain/${t}_perf" "${x2_nt[@]}" -g 2
        [ -x "$ntb/mpi/${t}_perf" ] || continue
        LD_LIBRARY_PATH="$real_dir:$LD_LIBRARY_PATH" x2_nt_run "$t-real-np2" mpirun -np 2 --bind-to none \
          -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE "$ntb/mpi/${t}_perf" "${x2_nt[@]}" -g 1
        LD_LIBRARY_PATH="$real_dir:$LD_LIBRARY_PATH" CANOPY_NCCL_LIBRARY="$real_nccl" x2_nt_run "$t-canopy-np2" \
          mpirun -np 2 --bind-to none -x LD_PRELOAD="$library" -x LD_LIBRARY_PATH -x CANOPY_NCCL_LIBRARY \
          -x CANOPY_CACHE_DIR -x NCCL_NVLS_ENABLE "${x2_nt_export[@]}" "$ntb/mpi/${t}_perf" "${x2_nt[@]}" -g 1
      done 2>&1 | tee "$out/x2-nccltests.log" ;;
    torch)
      step x2 torch
      x2_samples_start torch
      x2_torch() {  # NAME SCRIPT ARGS... (env before: LD_PRELOAD or not): torchrun, 2 ranks, a GPU each
        local name="$1" script="$2"
        shift 2
        echo "-- $name: tests/torch/$script $* ($(date +%T))"
        timeout "${CANOPY_TORCH_TIMEOUT:-300}" "${torchrun[@]}" --standalone --nproc_per_node 2 \
          "$root/tests/torch/$script" "$@" >"$out/x2-torch-$name.log" 2>&1
        echo "   exit $?"
        grep -E '^(c10d_check|train_bench): |WRONG|^wrong:|Error' "$out/x2-torch-$name.log" | tail -n 12
      }
      {
        CANOPY_TORCH_DEVICES=0,1 LD_PRELOAD="$library" CANOPY_NCCL_LIBRARY="$real_nccl" x2_torch c10d-canopy c10d_check.py
        runs=()
        # Which library goes first alternates by round (and so by mode within it), as train_compare.py asks.
        for round in $(seq "${CANOPY_X2_TORCH_ROUNDS:-5}"); do
          for mode in ddp fsdp; do
            order=(real canopy); [ $((round % 2)) = 0 ] && order=(canopy real)
            for lib_name in "${order[@]}"; do
              if [ "$lib_name" = real ]; then
                x2_torch "$mode-real-$round" train_bench.py --mode "$mode" --out "$out/x2-train-$mode-real-$round.json"
              else
                LD_PRELOAD="$library" CANOPY_NCCL_LIBRARY="$real_nccl" x2_torch "$mode-canopy-$round" train_bench.py \
                  --mode "$mode" --out "$out/x2-train-$mode-canopy-$round.json"
              fi
              runs+=("$out/x2-train-$mode-$lib_name-$round.json")
            done
          done
        done
        python3 "$root/tests/torch/train_compare.py" "${runs[@]}"
      } 2>&1 | tee "$out/x2-torch.log"
      x2_samples_stop ;;
    torchab)
      # A/B of library settings in training: each round runs the real NCCL, then the library under each setting;
      # each setting's runs are then compared with the real NCCL's of the same rounds.
      step x2 torch settings
      x2_samples_start torchab
      IFS=';' read -r -a settings <<<"${CANOPY_X2_TORCH_VARIANTS-}"
      [ "${#settings[@]}" = 0 ] && settings=("")
      {
        for mode in ${CANOPY_X2_TORCH_MODES:-ddp}; do
          for round in $(seq "${CANOPY_X2_TORCH_ROUNDS:-2}"); do
            for v in real "${!settings[@]}"; do
              name="$mode-$v-$round" preload=() setting=()
              [ "$v" != real ] && { preload=(LD_PRELOAD="$library"); read -r -a setting <<<"${settings[$v]}"; }
              echo "-- $name: $([ "$v" = real ] && echo the real NCCL || echo "library, ${setting[*]:-defaults}") ($(date +%T))"
              env "${preload[@]}" "${setting[@]}" CANOPY_NCCL_LIBRARY="$real_nccl" timeout \
                "${CANOPY_TORCH_TIMEOUT:-300}" "${torchrun[@]}" --standalone --nproc_per_node 2 \
                "$root/tests/torch/train_bench.py" --mode "$mode" --out "$out/x2-ab-$name.json" \
                >"$out/x2-torchab-$name.log" 2>&1
              echo "   exit $?"
              grep -E '^train_bench: |Error' "$out/x2-torchab-$name.log" | tail -n 4
            done
          done
          for v in "${!settings[@]}"; do
            echo "-- $mode, setting $v: ${settings[$v]:-defaults}"
            pairs=()
            for round in $(seq "${CANOPY_X2_TORCH_ROUNDS:-2}"); do
              pairs+=("$out/x2-ab-$mode-real-$round.json" "$out/x2-ab-$mode-$v-$round.json")
            done
            python3 "$root/tests/torch/train_compare.py" "${pairs[@]}"
          done
        done
      } 2>&1 | tee "$out/x2-torchab.log"
      x2_samples_stop ;;
    cost)
      # The host's and the GPU's time per c10d call, the real NCCL and then the library, alternating, each run's
      # table beside the first real NCCL run's.
      step x2 torch call cost
      {
        runs=()
        for round in $(seq "${CANOPY_X2_COST_ROUNDS:-2}"); do
          for lib in real canopy; do
            preload=()
            [ "$lib" = canopy ] && preload=(LD_PRELOAD="$library")
            echo "-- cost-$lib-$round ($(date +%T))"
            env "${preload[@]}" CANOPY_TORCH_DEVICES=0,1 CANOPY_NCCL_LIBRARY="$real_nccl" \
              timeout "${CANOPY_TORCH_TIMEOUT:-300}" \
              "${torchrun[@]}" --standalone --nproc_per_node 2 "$root/tests/torch/call_cost.py" \
              --sizes "${CANOPY_X2_COST_SIZES:-8,64K,1M,32M,64M}" --out "$out/x2-cost-$lib-$round.json" \
              >"$out/x2-cost-$lib-$round.log" 2>&1
            echo "   exit $?"
            runs+=("$out/x2-cost-$lib-$round.json")
          done
        done
        python3 "$root/tests/torch/call_cost.py" --compare "${runs[@]}" | sed "s|$out/||g"
      } 2>&1 | tee "$out/x2-cost.log" ;;
    hosts)
      # Two "hosts" of one GPU each (CANOPY_HOST_ID/NCCL_HOSTID per process through canopy run --hosts 1,1):
      # the real NCCL between them over its socket transport, every collective datachecked.
      step x2 two hosts
      timeout "${CANOPY_HOSTS_TIMEOUT:-420}" env CANOPY_LOG=info NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET \
        NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1 CANOPY_NCCL_LIBRARY="$real_nccl" CANOPY_BOOTSTRAP_TIMEOUT_S=120 \
        CANOPY_STALL_TIMEOUT_S=120 "$build/bin/canopy" run -n 2 --hosts 1,1 -- "$build/tests/canopy_mp_check" \
        --spread 1 --topology detect --collectives broadcast,reduce,allreduce,allgather,reduce_scatter \
        --dtypes f32,bf16,i32 --ops sum,max --counts "${CANOPY_HOSTS_COUNTS:-1,1028,65540,3000004,40000004}" \
        >"$out/x2-hosts.log" 2>&1
      echo "exit $?"
      grep -E '^process [0-9]+ \(ranks|ranks on [0-9]* hosts|through NCCL' "$out/x2-hosts.log" | head -8
      grep -m 2 'NET/Socket' "$out/x2-hosts.log" ;;
    *) echo "x2: unknown part '$part' (tests bench profile staged shared own owntrees sharedown variant variants" \
      "nccltests torch torchab cost hosts)" ;;
  esac
  pack_so_far  # device-run's: this part's logs kept if the call is stopped later
done
