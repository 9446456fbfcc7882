#!/usr/bin/env python3
# What the real NCCL communicator beside Canopy's costs a job that never uses it (issue 68 item 4): the time from
# init_process_group to the end of a first all_reduce, and the GPU memory the ranks' communicators take, with
# CANOPY_NCCL_REAL=1 (a real NCCL made beside Canopy's, as before c6272e4) against its default (made only where a call
# would use it). Under torchrun through libcanopy_nccl.so; every rank on GPU 0 with its own NCCL_HOSTID (so that a
# real NCCL can exist there at all):
#
#   LD_PRELOAD=build/libcanopy_nccl.so torchrun --standalone --nproc_per_node 2 tests/torch/init_cost.py --rounds 5
#
# Each round starts a process group in each mode (the order alternating per round), times it, reads the GPU's free
# memory before and after every rank has started (rank 0, torch.cuda.mem_get_info: the whole device's, so it counts
# every rank's communicators; the caching allocator's blocks are made before the first round), then destroys it. The
# ranks meet through a TCPStore of their own, never through the library measured. Prints a row per round and mode,
# then per mode the median and min-max of the init time (the slowest rank's) and of the memory; --json writes the rows.
import argparse
import datetime
import json
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist

MODES = {"default": None, "real=1": "1"}


def meet(store, name, rank, world, value=None):
    store.set(f"init_cost/{name}/{rank}", json.dumps(value))
    return [json.loads(store.get(f"init_cost/{name}/{r}")) for r in range(world)]


def main():
    parser = argparse.ArgumentParser(description="Init time and GPU memory of a process group through "
                                                 "libcanopy_nccl.so, with and without the real NCCL beside Canopy's.")
    parser.add_argument("--rounds", type=int, default=5, help="rounds, each starting both modes (default 5)")
    parser.add_argument("--json", help="write every round's row here (JSON lines)")
    parser.add_argument("--backend", default="nccl", choices=["nccl", "gloo"],
                        help="gloo: a self-test of the script on the CPU, never a measure of a library")
    args = parser.parse_args()
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    os.environ["NCCL_HOSTID"] = f"canopy-init-cost-{rank}"
    cuda = args.backend == "nccl"
    device = torch.device("cuda", 0) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
        torch.ones(1 << 20, device=device).sum().item()  # the context and the allocator's first block, before round 0
    # torchrun's own store (its agent holds it at MASTER_ADDR:MASTER_PORT); every rank is a client of it
    store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), world, False,
                          timeout=datetime.timedelta(seconds=300))
    rows = []
    for round_number in range(args.rounds):
        order = list(MODES) if round_number % 2 == 0 else list(reversed(MODES))
        for mode in order:
            tag = f"{round_number}/{mode}"
            if MODES[mode] is None:
                os.environ.pop("CANOPY_NCCL_REAL", None)
            else:
                os.environ["CANOPY_NCCL_REAL"] = MODES[mode]
            free_before = torch.cuda.mem_get_info(device)[0] if cuda else 0
            meet(store, f"{tag}/before", rank, world)
            started = time.perf_counter()
            bind = {"device_id": device} if cuda else {}
            dist.init_process_group(args.backend, store=dist.PrefixStore(f"pg/{tag}", store), rank=rank,
                                    world_size=world, **bind)
            x = torch.full((1024,), float(rank + 1), device=device)
            dist.all_reduce(x)
            if cuda:
                torch.cuda.synchronize(device)
            seconds = time.perf_counter() - started
            right = bool((x == world * (world + 1) / 2).all().item())
            everyone = meet(store, f"{tag}/after", rank, world, {"seconds": seconds, "right": right})
            free_after = torch.cuda.mem_get_info(device)[0] if cuda else 0
            meet(store, f"{tag}/measured", rank, world)
            dist.destroy_process_group()
            if cuda:
                torch.cuda.synchronize(device)
            meet(store, f"{tag}/destroyed", rank, world)
            row = {"round": round_number, "mode": mode, "ranks": world,
                   "init_s": max(r["seconds"] for r in everyone), "right": all(r["right"] for r in everyone),
                   "memory_MiB": (free_before - free_after) / (1 << 20)}
            rows.append(row)
            if rank == 0:
                print(f"round {round_number} {mode:8s} init {row['init_s']:.3f} s (slowest of {world} ranks), "
                      f"GPU memory taken {row['memory_MiB']:.0f} MiB, "
                      f"all_reduce {'right' if row['right'] else 'WRONG'}",
                      flush=True)
    if rank == 0:
        for mode in MODES:
            times = [r["init_s"] for r in rows if r["mode"] == mode]
            memory = [r["memory_MiB"] for r in rows if r["mode"] == mode]
            print(f"{mode:8s} {world} ranks, {len(times)} rounds: init median {statistics.median(times):.3f} s "
                  f"({min(times):.3f}-{max(times):.3f}), GPU memory median {statistics.median(memory):.0f} MiB "
                  f"({min(memory):.0f}-{max(memory):.0f})", flush=True)
        if args.json:
            with open(args.json, "w") as f:
                f.writelines(json.dumps(r) + "\n" for r in rows)
    wrong = sum(1 for r in rows if not r["right"])
    if rank == 0:
        print(f"init_cost: {len(rows)} process groups, {wrong} with a wrong all_reduce", flush=True)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
