# bench/device-run step `msccl`, sourced by it inside its loop over the steps (`return` ends the step). What it
# runs, its settings and its logs:
#   msccl     canopy bench -a FILE.xml --vs-nccl --check for every tests/data/msccl-tools/ program of one of Canopy's
#             collectives (not custom, not the 4 known-wrong ones of tests/dsl/msccl_corpus_test.cpp), its ranks
#             spread over this machine's GPUs round-robin (--devices; virtual ranks when fewer GPUs), sizes
#             CANOPY_MSCCL_SIZES (default 1M:256M:16)                        -> msccl-NAME.json, msccl.log
# shellcheck shell=bash disable=SC2154  # root, build, out, canopy, jobs, step, mps_*, bench_args: bench/device-run
# Every program of the msccl-tools corpus that computes its collective, on its own rank count: ranks are GPUs
# of the dgx2 topology (NVSwitch: every pair joined), as many devices as there are (virtual ranks in blocks
# beyond that); NCCL beside it where every rank has a GPU of its own. CANOPY_MSCCL_MATCH: a regex of names.
step msccl-tools corpus
gpus=$(nvidia-smi -L | wc -l)
wrong='allreduce_a100_pcie_hierarchical_8r_1i|allgather_recursive_doubling_16r_2i_LL128|pipeline_a100_'
for xml in tests/data/msccl-tools/*.xml; do
  name=$(basename "$xml" .xml)
  grep -q 'coll="custom"' "$xml" && continue
  echo "$name" | grep -qE "$wrong" && continue
  echo "$name" | grep -qE "${CANOPY_MSCCL_MATCH:-.}" || continue
  ranks=$(grep -o 'ngpus="[0-9]*"' "$xml" | head -1 | tr -dc 0-9)
  used=$((ranks < gpus ? ranks : gpus))
  rank_list=$(seq -s, 0 $((ranks - 1)))
  devices=$(seq -s, 0 $((used - 1)))
  nccl=(); [ "$used" = "$ranks" ] && nccl=(--vs-nccl)
  echo "-- $name on $ranks ranks (dgx2 GPUs $rank_list, devices $devices)"
  timeout "${CANOPY_BENCH_TIMEOUT:-400}" "$canopy" bench -a "$xml" -t dgx2 --gpus "$rank_list" --devices "$devices" \
    --sizes "${CANOPY_MSCCL_SIZES:-1M:256M:16}" "${nccl[@]}" --check --json "$out/msccl-$name.json" 2>&1
done 2>&1 | tee "$out/msccl.log" | grep -vE '^canopy: (info|debug)' | tail -200
