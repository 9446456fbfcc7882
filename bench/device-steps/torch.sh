# bench/device-run step `torch`, sourced by it inside its loop over the steps (`return` ends the step). What it
# runs, its settings and its logs:
#   torch     PyTorch through libcanopy_nccl.so (LD_PRELOAD, CANOPY_LOG=info), all ranks on GPU 0: tests/torch/
#             borrowed_check.py (without a real NCCL beside; with one: --real; with one taking them:
#             CANOPY_NCCL_FORWARD), pipeline_check.py, c10d_check.py, ddp_check.py and fsdp_check.py under torchrun for
#             each of CANOPY_TORCH_PROCS (2 4), ddp_check with 1 rank, and c10d_check with 1 rank on the real NCCL (the
#             baseline: it refuses 2 ranks on one GPU); CANOPY_TORCH_CHECKS picks some (default "borrowed pipeline
#             c10d ddp fsdp"); "initcost" adds tests/torch/init_cost.py (init time and GPU memory with and without
#             the real NCCL beside, CANOPY_INITCOST_ROUNDS rounds, 5; rows in initcost-N.json); each run cut at
#             CANOPY_TORCH_TIMEOUT seconds (900)
#                                                                            -> torch-*.log, torch.log
# shellcheck shell=bash disable=SC2154  # root, build, out, canopy, jobs, step, mps_*, bench_args: bench/device-run
# PyTorch's c10d, DDP and FSDP2 through the NCCL library, every rank on GPU 0 (tests/torch/; docs/nccl-api.md
# "Checking it with PyTorch"). Each run's whole output in torch-NAME.log; its closing lines and how many of
# CANOPY_LOG's lines say served or forwarded in torch.log.
step torch
library="$build/libcanopy_nccl.so"  # nccl/CMakeLists.txt writes it at the top of the build tree
[ -e "$library" ] || echo "torch: no $library (the build did not make target canopy_nccl): LD_PRELOAD will fail"
torchrun=(torchrun)
command -v torchrun >/dev/null || torchrun=(python3 -m torch.distributed.run)
torch_run() {  # NAME NPROC "SCRIPT [ARGS...]" [ENV...]: one check under torchrun
  local name="$1" nproc="$2" script=()
  read -r -a script <<<"$3"
  shift 3
  echo "-- $name: $nproc ranks, tests/torch/${script[*]} $* ($(date +%T))"
  timeout "${CANOPY_TORCH_TIMEOUT:-900}" env "$@" "${torchrun[@]}" --standalone --nproc_per_node "$nproc" \
    "$root/tests/torch/${script[0]}" "${script[@]:1}" >"$out/torch-$name.log" 2>&1
  local rc=$?
  grep -E '^(c10d_check|ddp_check|fsdp_check|borrowed_check|pipeline_check): [0-9]+ (cases|ranks|skipped)|^(ok|WRONG) |WRONG|^wrong:|Error' \
    "$out/torch-$name.log" | tail -n 25
  echo "   exit $rc; $(grep -ciE 'canopy.*served' "$out/torch-$name.log") log lines served by Canopy," \
    "$(grep -c 'forwarded to the real NCCL' "$out/torch-$name.log") forwarded"
}
checks=" ${CANOPY_TORCH_CHECKS:-borrowed pipeline c10d ddp fsdp} "
{
  if [[ "$checks" == *" borrowed "* ]]; then
    for n in ${CANOPY_TORCH_PROCS:-2 4}; do
      torch_run "borrowed-$n" "$n" borrowed_check.py LD_PRELOAD="$library" CANOPY_LOG=info
      torch_run "borrowed-real-$n" "$n" "borrowed_check.py --real" LD_PRELOAD="$library" CANOPY_LOG=info
      torch_run "borrowed-forward-$n" "$n" "borrowed_check.py --real" LD_PRELOAD="$library" CANOPY_LOG=info \
        CANOPY_NCCL_FORWARD=sendrecv,alltoall,gather,scatter
    done
  fi
  if [[ "$checks" == *" pipeline "* ]]; then
    for n in ${CANOPY_TORCH_PROCS:-2 4}; do
      torch_run "pipeline-$n" "$n" pipeline_check.py LD_PRELOAD="$library" CANOPY_LOG=info
    done
  fi
  if [[ "$checks" == *" c10d "* ]]; then
    for n in ${CANOPY_TORCH_PROCS:-2 4}; do
      torch_run "c10d-$n" "$n" c10d_check.py LD_PRELOAD="$library" CANOPY_LOG=info
    done
  fi
  if [[ "$checks" == *" ddp "* ]]; then
    for n in 1 ${CANOPY_TORCH_PROCS:-2 4}; do
      torch_run "ddp-$n" "$n" ddp_check.py LD_PRELOAD="$library" CANOPY_LOG=info
    done
  fi
  if [[ "$checks" == *" fsdp "* ]]; then
    for n in ${CANOPY_TORCH_PROCS:-2 4}; do
      torch_run "fsdp-$n" "$n" fsdp_check.py LD_PRELOAD="$library" CANOPY_LOG=info
    done
  fi
  if [[ "$checks" == *" initcost "* ]]; then  # not in the default list: a measure, not a check
    for n in ${CANOPY_TORCH_PROCS:-2 4}; do
      torch_run "initcost-$n" "$n" "init_cost.py --rounds ${CANOPY_INITCOST_ROUNDS:-5} --json $out/initcost-$n.json" \
        LD_PRELOAD="$library" CANOPY_LOG=info
      grep -E '^(default|real=1) |^init_cost:' "$out/torch-initcost-$n.log"
    done
  fi
  [[ "$checks" == *" c10d "* ]] && torch_run c10d-1-real-nccl 1 c10d_check.py
} 2>&1 | tee "$out/torch.log"
