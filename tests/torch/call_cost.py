#!/usr/bin/env python3
# The host's and the GPU's time per call of PyTorch's collectives (c10d over an NCCL library), so that the real NCCL
# and libcanopy_nccl.so can be put side by side under PyTorch itself (issue 34: the library should add nothing a call;
# where a training step is host-bound, as FSDP2's on the device machine, a call's host cost is part of the step):
#
#   torchrun --standalone --nproc_per_node 2 tests/torch/call_cost.py --out real.json
#   LD_PRELOAD=build/libcanopy_nccl.so torchrun --standalone --nproc_per_node 2 tests/torch/call_cost.py \
#     --out canopy.json
#   python3 tests/torch/call_cost.py --compare real.json canopy.json       # the table of ratios
#
# Per collective (all_reduce, broadcast from rank 0, all_gather_into_tensor, reduce_scatter_tensor; float32, sum) and
# size (--sizes, nccl-tests' S: all_gather's output, reduce_scatter's input, else the buffer), --calls calls are
# issued back to back after --warmup more; "host" is rank 0's time to issue them (a call returns once queued), "call"
# the time until its GPU finished them (torch.cuda.synchronize() after the loop), both in microseconds a call, each
# the median of --repeats loops. The ranks start every loop together (a barrier through the library, after a
# synchronize). Rank placement as the other scripts of tests/torch/ (torch_setup.py); --backend gloo runs on the CPU,
# a self-test of the script (tests/torch/train_bench_smoke), never a measure of any library.
import argparse
import json
import statistics
import sys
import time

sys.dont_write_bytecode = True  # importing the helpers beside it leaves no __pycache__ in the tree
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import torch_setup  # noqa: E402

OPS = ("all_reduce", "broadcast", "all_gather", "reduce_scatter")


def parse_size(text):
    """'8', '64K', '32M', '1G' -> bytes."""
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:].upper(), 1)
    digits = text[:-1] if scale > 1 else text
    if not digits.isdigit() or int(digits) <= 0:
        raise SystemExit(f"call_cost: size {text!r}: expected a positive count of bytes such as 8, 64K, 32M or 1G")
    return int(digits) * scale


def issue(op, size, world, device):
    """A function that issues one call of op at size bytes (nccl-tests' S), on buffers made once."""
    count = max(size // 4 // world * world, world)  # whole float32 elements, a multiple of the ranks
    big = torch.ones(count, dtype=torch.float32, device=device)
    part = torch.ones(count // world, dtype=torch.float32, device=device)
    if op == "all_reduce":
        return lambda: dist.all_reduce(big)
    if op == "broadcast":
        return lambda: dist.broadcast(big, src=0)
    if op == "all_gather":
        return lambda: dist.all_gather_into_tensor(big, part)
    return lambda: dist.reduce_scatter_tensor(part, big)


def synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def measure(call, calls, warmup, repeats, device):
    """(host, call) microseconds a call, medians of the repeats."""
    for _ in range(warmup):
        call()
    host, whole = [], []
    for _ in range(repeats):
        synchronize(device)
        dist.barrier()
        synchronize(device)
        start = time.perf_counter()
        for _ in range(calls):
            call()
        queued = time.perf_counter()
        synchronize(device)
        done = time.perf_counter()
        host.append((queued - start) / calls * 1e6)
        whole.append((done - start) / calls * 1e6)
    return statistics.median(host), statistics.median(whole)


def run(args):
    rank, world, device = torch_setup.start(args.backend)
    if rank == 0:
        print("call_cost:", torch_setup.describe(args.backend, world, device), flush=True)
    rows = []
    for op in args.ops.split(","):
        if op not in OPS:
            raise SystemExit(f"call_cost: --ops names {op!r}; expected some of {', '.join(OPS)}")
        for text in args.sizes.split(","):
            size = parse_size(text)
            host, whole = measure(issue(op, size, world, device), args.calls, args.warmup, args.repeats, device)
            rows.append({"op": op, "bytes": size, "host_us": host, "call_us": whole})
            if rank == 0:
                print(f"call_cost: {op:>14} {text:>6}: host {host:8.2f} us a call, GPU done {whole:9.2f} us a call",
                      flush=True)
    if rank == 0 and args.out:
        with open(args.out, "w") as f:
            json.dump({"library": torch_setup.library(args.backend), "world": world, "calls": args.calls,
                       "repeats": args.repeats, "rows": rows}, f, indent=1)
    torch_setup.finish()


def compare(paths):
    """Each later run's host and call time against the first's, per collective and size."""
    runs = []
    for path in paths:
        with open(path) as f:
            runs.append((path, json.load(f)))
    base_path, base = runs[0]
    key = {(r["op"], r["bytes"]): r for r in base["rows"]}
    for path, other in runs[1:]:
        print(f"# {other['library']} ({path}) against {base['library']} ({base_path}), {other['world']} ranks")
        print(f"{'op':>14} {'bytes':>11} {'host us':>9} {'base':>9} {'host x':>7} {'call us':>9} {'base':>9} "
              f"{'call x':>7}")
        for r in other["rows"]:
            b = key.get((r["op"], r["bytes"]))
            if b is None:
                print(f"{r['op']:>14} {r['bytes']:>11}  (not in {base_path})")
                continue
            print(f"{r['op']:>14} {r['bytes']:>11} {r['host_us']:9.2f} {b['host_us']:9.2f} "
                  f"{r['host_us'] / b['host_us']:7.3f} {r['call_us']:9.2f} {b['call_us']:9.2f} "
                  f"{r['call_us'] / b['call_us']:7.3f}")


def main():
    parser = argparse.ArgumentParser(description="host and GPU time per call of c10d collectives (under torchrun), "
                                     "or --compare of such runs")
    parser.add_argument("--backend", default="nccl", choices=("nccl", "gloo"))
    parser.add_argument("--ops", default=",".join(OPS), help="some of " + ", ".join(OPS))
    parser.add_argument("--sizes", default="8,64K,1M,32M,64M", help="bytes per call, e.g. 8,64K,32M")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", help="JSON of rank 0's measurements")
    parser.add_argument("--compare", nargs="+", metavar="JSON", help="runs to compare, the first the base")
    args = parser.parse_args()
    if args.compare:
        if len(args.compare) < 2:
            raise SystemExit("call_cost: --compare needs two runs or more, the first the base")
        compare(args.compare)
        return
    if args.calls < 1 or args.repeats < 1 or args.warmup < 0:
        raise SystemExit("call_cost: --calls and --repeats must be at least 1, --warmup at least 0")
    run(args)


if __name__ == "__main__":
    main()
