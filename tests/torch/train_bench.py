#!/usr/bin/env python3
# A training-step benchmark of PyTorch through the NCCL library (issue 32's performance acceptance; docs/nccl-api.md
# "Checking it with PyTorch"): DDP or FSDP2 on a ~100 M parameter fp32 MLP, one process per GPU, the time per step
# and the share of it spent in communication, the same run through the real NCCL and through libcanopy_nccl.so:
#
#   torchrun --standalone --nproc_per_node 2 tests/torch/train_bench.py --mode ddp --out ddp-real-1.json
#   LD_PRELOAD=build/libcanopy_nccl.so \
#     torchrun --standalone --nproc_per_node 2 tests/torch/train_bench.py --mode ddp --out ddp-canopy-1.json
#   python3 tests/torch/train_compare.py ddp-real-1.json ddp-canopy-1.json ...    # the table and the verdict
#
# Rank LOCAL_RANK computes on GPU LOCAL_RANK where the machine has a GPU for each rank (CANOPY_TORCH_DEVICES, when
# set, chooses instead, as for the other scripts of tests/torch/); with fewer GPUs every rank takes GPU 0, which only
# Canopy allows.
#
# The model (--width 4096, --layers 6): (Linear, GELU) x 5, LayerNorm, Linear: 6 x (4096 x 4096 + 4096) + 2 x 4096 =
# 100,696,064 float32 parameters, built from --seed on the host so that every rank and every run starts the same.
# Rank r's batch of step s (--batch rows, regression targets tanh(x reversed)) comes from a generator seeded with
# (seed, step, rank); all of them are drawn and copied to the GPU before the first step (drawn between steps, the
# host's ~30 ms a batch would let one rank start a step late and the other count the wait in its step). SGD
# (momentum 0.9) or AdamW, float32 matmuls in float32 (no TF32). --mode ddp: DistributedDataParallel with its
# default buckets (25 MB, which cannot split a 64 MiB weight: 6 or 7 bucketed all_reduces a step at this size;
# --bucket-mb to change); --mode fsdp: FSDP2, fully_shard on each Linear then on the whole model (all-gathers before
# forward and backward, reduce-scatters of the gradients).
#
# Timed: --warmup steps (10) then --steps (50), each between torch.cuda.synchronize() and time.perf_counter(); rank
# 0's times are the run's (every step ends in collectives, so the ranks finish within microseconds of each other).
# Loss: each rank's own loss of every step, gathered after the run through torchrun's store (not a collective: no
# extra call in the step) and averaged over the ranks: the global mean loss, for warm-up and timed steps alike.
#
# Communication (--profile-steps 5 more steps under torch.profiler, after one profiled step thrown away): the time
# during which communication runs on rank 0's GPU (the union of its intervals: FSDP's all-gather and reduce-scatter at
# once count once; the plain sum is in the JSON too) divided by the wall time of those steps. Communication is every
# kernel named nccl* (the real NCCL's ncclDevKernel_*/ncclKernel_*) or canopy* (every kernel Canopy generates or
# launches), every memcpy/memset on a stream that runs such a kernel (Canopy stages through copies on the collective's
# stream) and every peer-to-peer copy; torch's own copies (a bucket's gradients, the batch) are not. "Exposed"
# communication is the part of it during which no other work runs on the GPU (the union of communication intervals
# less the union of everything else). A collective's kernels also run while they wait for a slower rank, so where the
# ranks' steps are skewed (host-bound steps) one rank's share is far from another's: the line names the other ranks'
# shares beside rank 0's (2026-11-28, FSDP2 on two H200s: 9.5 % on rank 0, 85.6 % on rank 1). For DDP,
# --nosync-steps (10) more steps under no_sync() (no all_reduce at all) give a second estimate: the median step less
# the median no_sync step. Those steps come last: they let the ranks' models differ.
#
# Rank 0 writes --out (JSON: the configuration, which library ran, every step's time, start (Unix seconds, to line
# steps up with samples of the GPUs' clocks) and loss, medians, the communication figures) and prints `train_bench: ddp
# 2 ranks (real NCCL), 100.7M params, median step 41.2 ms, comm 23.0 % of step (kernels and their copies), exposed
# 5.1 % (other ranks: 24.1 %), loss 1.234 -> 0.987`. --backend gloo runs it all on the CPU (with e.g. --width 256
# --batch 16 --warmup 2 --steps 5): a self-test of this script, with no device timeline to measure communication on.
import argparse
import json
import os
import socket
import statistics
import sys
import tempfile
import time
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

sys.dont_write_bytecode = True  # importing the helpers beside it leaves no __pycache__ in the tree
import torch_setup  # noqa: E402 (after the line above)
import train_setup

COMM_PREFIXES = ("nccl", "canopy")  # kernel names: the real NCCL's ncclDevKernel_*/ncclKernel_*, Canopy's canopy_*
DEVICE_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")  # the chrome trace's device-side events


def spread_over_gpus(backend):
    """Rank LOCAL_RANK on GPU LOCAL_RANK where there is a GPU for each local rank and CANOPY_TORCH_DEVICES does not
    say otherwise (torch_setup's default, every rank on GPU 0, is for the checks; a benchmark of the real NCCL needs a
    GPU per rank). Returns a note for the log."""
    if backend != "nccl":
        return None
    if os.environ.get("CANOPY_TORCH_DEVICES"):
        return f"CANOPY_TORCH_DEVICES={os.environ['CANOPY_TORCH_DEVICES']} chooses the GPUs"
    local_world = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    count = torch.cuda.device_count()
    if count >= local_world:
        os.environ["CANOPY_TORCH_DEVICES"] = ",".join(str(i) for i in range(local_world))
        return f"rank LOCAL_RANK on GPU LOCAL_RANK ({count} GPUs, {local_world} local ranks)"
    return (f"{count} GPU(s) for {local_world} local ranks: every rank on GPU 0 (the real NCCL refuses this, "
            f"Canopy allows it)")


def make_model(width, layers, seed, device):
    """(Linear, GELU) x (layers - 1), LayerNorm, Linear, initialised on the host from seed (the same everywhere)."""
    torch.manual_seed(seed)
    stack = []
    for _ in range(layers - 1):
        stack += [nn.Linear(width, width), nn.GELU()]
    stack += [nn.LayerNorm(width), nn.Linear(width, width)]
    return nn.Sequential(*stack).to(device)


def batch(seed, step, rank, rows, width, device):
    """Rank `rank`'s batch of step `step`: inputs and a learnable target (tanh of the inputs reversed)."""
    g = torch.Generator().manual_seed(seed * 1_000_003 + step * 1009 + rank)
    x = torch.randn(rows, width, generator=g)
    y = torch.tanh(x.flip(-1))
    return x.to(device), y.to(device)


def batches(args, first_step, count, rank, device):
    """The batches of steps first_step .. first_step + count - 1, all on the device before the first of them runs.
    Drawing a batch takes the host ~30 ms; drawn between steps, a rank that finished drawing later would start its
    step later, and the other rank's step would wait for it inside its first all_reduce and count the wait."""
    made = [batch(args.seed, first_step + i, rank, args.batch, args.width, device) for i in range(count)]
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return made


def make_optimizer(name, params, lr):
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr, momentum=0.9)
    return torch.optim.AdamW(params, lr=lr, weight_decay=0.01)


def train_step(model, optimizer, x, y):
    optimizer.zero_grad(set_to_none=True)
    loss = F.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.detach()


class Clock:
    """Wall time of a step: the GPU drained before the start and before the end."""

    def __init__(self, device):
        self.cuda = device.type == "cuda"

    def now(self):
        if self.cuda:
            torch.cuda.synchronize()
        return time.perf_counter()


def union(intervals):
    """Sorted, disjoint [start, end) intervals covering the given ones."""
    merged = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return merged


def length(intervals):
    return sum(end - start for start, end in intervals)


def overlap(a, b):
    """Total length of the intersection of two unions (sorted, disjoint)."""
    total, i, j = 0.0, 0, 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        total += max(0.0, hi - lo)
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def device_time(trace_events):
    """Sorts the device events of a chrome trace (torch.profiler's export) into communication and the rest; times in
    ms. Communication: kernels named nccl*/canopy*, memcpy/memset on the streams those kernels run on, peer copies."""
    events = []
    for e in trace_events:
        if e.get("ph") != "X" or str(e.get("cat", "")).lower() not in DEVICE_CATEGORIES:
            continue
        name = str(e.get("name", ""))
        if name.startswith("void "):
            name = name[5:]
        args = e.get("args", {})
        events.append((str(e["cat"]).lower(), name, (args.get("device"), args.get("stream")), float(e["ts"]),
                       float(e["ts"]) + float(e.get("dur", 0))))
    comm_streams = {stream for cat, name, stream, _, _ in events
                    if cat == "kernel" and name.startswith(COMM_PREFIXES)}
    by = {"nccl_kernels": 0.0, "canopy_kernels": 0.0, "copies_on_comm_streams": 0.0, "peer_copies": 0.0,
          "other_kernels": 0.0, "other_copies": 0.0}
    comm, rest = [], []
    for cat, name, stream, start, end in events:
        if cat == "kernel" and name.startswith("nccl"):
            kind = "nccl_kernels"
        elif cat == "kernel" and name.startswith("canopy"):
            kind = "canopy_kernels"
        elif cat == "kernel":
            kind = "other_kernels"
        elif stream in comm_streams:
            kind = "copies_on_comm_streams"
        elif "PtoP" in name or "Peer" in name:
            kind = "peer_copies"
        else:
            kind = "other_copies"
        by[kind] += (end - start) / 1e3
        (rest if kind.startswith("other") else comm).append((start, end))
    comm_union, rest_union = union(comm), union(rest)
    return {"events": len(events), "comm_streams": len(comm_streams), "by_kind_ms": by,
            "comm_ms": sum(v for k, v in by.items() if not k.startswith("other")),
            "comm_busy_ms": length(comm_union) / 1e3,
            "exposed_ms": (length(comm_union) - overlap(comm_union, rest_union)) / 1e3}


def profile_steps(args, model, optimizer, rank, device, first_step):
    """--profile-steps steps under torch.profiler (one more before them, thrown away: the profiler's start-up); the
    communication figures of this rank's device timeline, or None where there is none (CPU)."""
    from torch.profiler import ProfilerActivity, profile, schedule
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    clock = Clock(device)
    walls = []
    prepared = batches(args, first_step, args.profile_steps + 1, rank, device)
    with warnings.catch_warnings():  # the schedule's warm-up makes the profiler say it keeps only the active cycle
        warnings.filterwarnings("ignore", message=".*Profiler clears events")
        steps = schedule(wait=0, warmup=1, active=args.profile_steps, repeat=1)
        prof = profile(activities=activities, schedule=steps)
        prof.start()
    try:
        for i, (x, y) in enumerate(prepared):
            start = clock.now()
            train_step(model, optimizer, x, y)
            end = clock.now()
            if i > 0:
                walls.append(end - start)
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message=".*Profiler clears events")
                prof.step()
    finally:
        prof.stop()
    keep = args.trace if (args.trace and rank == 0) else None
    handle, path = tempfile.mkstemp(prefix=f"train_bench_rank{rank}_", suffix=".json")
    os.close(handle)
    try:
        prof.export_chrome_trace(keep or path)
        with open(keep or path) as f:
            trace = json.load(f)
    finally:
        os.unlink(path)
    times = device_time(trace.get("traceEvents", []) if isinstance(trace, dict) else trace)
    wall_ms = sum(walls) * 1e3
    result = {"steps": len(walls), "wall_ms": wall_ms, "median_step_ms": statistics.median(walls) * 1e3, **times}
    if device.type != "cuda" or times["events"] == 0:
        result.update(comm_fraction=None, exposed_fraction=None, why="no device timeline (CPU run)")
    else:
        result.update(comm_fraction=times["comm_busy_ms"] / wall_ms, comm_sum_fraction=times["comm_ms"] / wall_ms,
                      exposed_fraction=times["exposed_ms"] / wall_ms)
    return result


def nosync_steps(args, ddp, optimizer, rank, device, first_step):
    """DDP steps under no_sync(): the same work without the gradients' all_reduce. Their wall times (s)."""
    clock, walls = Clock(device), []
    for x, y in batches(args, first_step, args.nosync_steps, rank, device):
        start = clock.now()
        with ddp.no_sync():
            train_step(ddp, optimizer, x, y)
        walls.append(clock.now() - start)
    return walls


def main():
    parser = argparse.ArgumentParser(description="DDP/FSDP2 training-step benchmark (run under torchrun)")
    parser.add_argument("--mode", required=True, choices=("ddp", "fsdp"))
    parser.add_argument("--backend", default="nccl", choices=("nccl", "gloo"))
    parser.add_argument("--width", type=int, default=4096)
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--batch", type=int, default=512, help="rows per rank per step")
    parser.add_argument("--optimizer", default="sgd", choices=("sgd", "adamw"))
    parser.add_argument("--lr", type=float, default=None, help="default 0.01 (sgd), 1e-4 (adamw)")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--profile-steps", type=int, default=5, help="0: no communication figures")
    parser.add_argument("--nosync-steps", type=int, default=10, help="ddp only; 0: none")
    parser.add_argument("--bucket-mb", type=float, default=None, help="DDP's bucket_cap_mb (default torch's, 25)")
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--out", help="rank 0 writes the run here (JSON)")
    parser.add_argument("--trace", help="rank 0 keeps its profiler trace here (chrome trace JSON)")
    args = parser.parse_args()
    if args.lr is None:
        args.lr = 0.01 if args.optimizer == "sgd" else 1e-4

    placement = spread_over_gpus(args.backend)
    rank, world, device = torch_setup.start(args.backend)
    train_setup.exact_float32()
    if rank == 0:
        print("train_bench:", torch_setup.describe(args.backend, world, device), flush=True)
        if placement:
            print(f"train_bench: {placement}", flush=True)

    model = make_model(args.width, args.layers, args.seed, device)
    params = sum(p.numel() for p in model.parameters())
    if args.mode == "ddp":
        bucket = {} if args.bucket_mb is None else {"bucket_cap_mb": args.bucket_mb}
        model = DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None, **bucket)
    else:
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import fully_shard
        mesh = init_device_mesh(device.type, (world,))
        for layer in model:
            if isinstance(layer, nn.Linear):
                fully_shard(layer, mesh=mesh)
        fully_shard(model, mesh=mesh)
    optimizer = make_optimizer(args.optimizer, model.parameters(), args.lr)
    if rank == 0:
        print(f"train_bench: {args.mode}, {params:,} parameters ({args.layers} x Linear({args.width}, {args.width}), "
              f"LayerNorm), batch {args.batch} rows a rank, {args.optimizer} lr {args.lr}, "
              f"{args.warmup} warm-up + {args.steps} timed steps", flush=True)

    clock, times, losses, started = Clock(device), [], [], []
    for step, (x, y) in enumerate(batches(args, 0, args.warmup + args.steps, rank, device)):
        start = clock.now()
        wall = time.time()  # when it began, to line the steps up with samples of the GPUs' clocks
        loss = train_step(model, optimizer, x, y)
        end = clock.now()
        losses.append(float(loss))
        if step >= args.warmup:
            times.append(end - start)
            started.append(round(wall, 4))
        if rank == 0 and (step % 10 == 0 or step == args.warmup + args.steps - 1):
            print(f"train_bench: step {step}: {(end - start) * 1e3:.2f} ms, rank 0's loss {losses[-1]:.6f}", flush=True)

    next_step = args.warmup + args.steps
    comm = profile_steps(args, model, optimizer, rank, device, next_step) if args.profile_steps > 0 else None
    next_step += args.profile_steps + 1
    nosync = nosync_steps(args, model, optimizer, rank, device, next_step) if args.mode == "ddp" else []

    # Through the store, not a collective: the library under test has done its part.
    per_rank = torch_setup.gather_from_ranks("train_bench", rank, world, {
        "losses": losses, "median_ms": statistics.median(times) * 1e3 if times else None,
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "device_index": device.index, "comm_fraction": comm and comm["comm_fraction"]})
    if rank == 0:
        mean_losses = [sum(r["losses"][s] for r in per_rank) / world for s in range(len(losses))]
        step_ms = [t * 1e3 for t in times]
        median = statistics.median(step_ms) if step_ms else float("nan")
        nccl = None
        if args.backend == "nccl":
            try:
                nccl = ".".join(str(v) for v in torch.cuda.nccl.version())
            except Exception as error:  # a library that answers no version: say so
                nccl = f"unknown ({error})"
        exposed_nosync = None
        if nosync:
            nosync_median = statistics.median(nosync) * 1e3
            exposed_nosync = {"nosync_median_step_ms": nosync_median, "exposed_ms": median - nosync_median,
                              "exposed_fraction": (median - nosync_median) / median}
        run = {
            "mode": args.mode, "world": world, "params": params, "library": torch_setup.library(args.backend),
            "backend": args.backend, "ld_preload": os.environ.get("LD_PRELOAD", ""),
            "device": per_rank[0]["device"], "devices": [r["device_index"] for r in per_rank],
            "torch": torch.__version__, "nccl_version": nccl, "host": socket.gethostname(),
            "config": {"width": args.width, "layers": args.layers, "batch": args.batch, "optimizer": args.optimizer,
                       "lr": args.lr, "seed": args.seed, "warmup": args.warmup, "steps": args.steps,
                       "bucket_mb": args.bucket_mb, "float32_matmul_precision": "highest"},
            "loss_is": "mean over the ranks of each rank's own loss, every step (warm-up first)",
            "losses": mean_losses, "rank0_losses": losses,
            "step_ms": step_ms, "step_start_unix": started, "median_step_ms": median,
            "mean_step_ms": statistics.fmean(step_ms) if step_ms else float("nan"),
            "median_step_ms_by_rank": [r["median_ms"] for r in per_rank],
            "comm": comm, "comm_fraction_by_rank": [r["comm_fraction"] for r in per_rank],
            "exposed_by_nosync": exposed_nosync,
        }
        if args.out:
            with open(args.out, "w") as f:
                json.dump(run, f, indent=1)
        share = "comm n/a (no device timeline)"
        if comm and comm["comm_fraction"] is not None:
            share = (f"comm {comm['comm_fraction'] * 100:.1f} % of step (kernels and their copies), exposed "
                     f"{comm['exposed_fraction'] * 100:.1f} %")
            others = [r["comm_fraction"] for r in per_rank[1:] if r["comm_fraction"] is not None]
            if others:  # a rank's collective kernels also hold its wait for the slower ranks: the spread says so
                share += f" (other ranks: {', '.join(f'{f * 100:.1f}' for f in others)} %)"
        if exposed_nosync:
            share += f", no_sync {exposed_nosync['exposed_fraction'] * 100:.1f} %"
        print(f"train_bench: {args.mode} {world} ranks ({run['library']}), {params / 1e6:.1f}M params, median step "
              f"{median:.2f} ms, {share}, loss {mean_losses[0]:.6g} -> {mean_losses[-1]:.6g}"
              f"{f' (wrote {args.out})' if args.out else ''}", flush=True)
    torch_setup.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
