#!/usr/bin/env python3
# The calls libcanopy_nccl.so once only borrowed from a real NCCL (issues 66 and 68; docs/nccl-api.md "Checking it with
# PyTorch"): all_to_all_single (equal and uneven splits), all_to_all of lists, batch_isend_irecv, send/recv, gather and
# scatter, each followed by a plain all_reduce of 1 Mi floats checked element by element. Run under torchrun, all
# ranks on GPU 0:
#
#   LD_PRELOAD=build/libcanopy_nccl.so torchrun --standalone --nproc_per_node 2 tests/torch/borrowed_check.py
#   LD_PRELOAD=build/libcanopy_nccl.so torchrun --standalone --nproc_per_node 2 tests/torch/borrowed_check.py --real
#
# Without --real, the ranks share GPU 0 and no real NCCL communicator can exist beside Canopy's (NCCL 2.28 refuses two
# ranks on one GPU): Canopy serves every call itself, pair by pair across the processes. With --real, each process
# sets its own NCCL_HOSTID before the process group starts, so the real NCCL treats the ranks as separate hosts and a
# real communicator is made beside Canopy's (which takes these calls only where CANOPY_NCCL_FORWARD names them). Either
# way every call must give the right values, and every all_reduce after one must be right too. Inputs are small integers (exact in float32), outputs are poisoned first, so a call
# that writes nothing is caught. The ranks agree on the verdict through torchrun's store (not the library under test).
# Ends with `borrowed_check: N cases, W wrong` (a case is wrong when it did not do what its mode expects, or when the
# all_reduce after it is wrong); exit 1 on any wrong case.
import argparse
import os
import sys
import time

import torch
import torch.distributed as dist

sys.dont_write_bytecode = True  # importing the helpers beside it leaves no __pycache__ in the tree
import torch_setup  # noqa: E402 (after the line above)

POISON = -77.0
AFTER_COUNT = 1 << 20


def poisoned(n, device):
    return torch.full((n,), POISON, dtype=torch.float32, device=device)


def values(seq, device):
    return torch.tensor(seq, dtype=torch.float32, device=device)


def all_to_all_single_equal(rank, world, device, n=1031):
    send = torch.cat([values([1000 * rank + 100 * j + k for k in range(n)], device) for j in range(world)])
    recv = poisoned(world * n, device)
    dist.all_to_all_single(recv, send)
    expect = torch.cat([values([1000 * j + 100 * rank + k for k in range(n)], device) for j in range(world)])
    return recv, expect


def all_to_all_single_uneven(rank, world, device):
    # rank r sends r + j + 1 elements to rank j; receives j + r + 1 from rank j
    sizes_out = [rank + j + 1 for j in range(world)]
    sizes_in = [j + rank + 1 for j in range(world)]
    send = torch.cat([values([1000 * rank + 100 * j + k for k in range(sizes_out[j])], device) for j in range(world)])
    recv = poisoned(sum(sizes_in), device)
    dist.all_to_all_single(recv, send, output_split_sizes=sizes_in, input_split_sizes=sizes_out)
    expect = torch.cat([values([1000 * j + 100 * rank + k for k in range(sizes_in[j])], device) for j in range(world)])
    return recv, expect


def all_to_all_lists(rank, world, device, n=257):
    sends = [values([1000 * rank + 100 * j + k for k in range(n)], device) for j in range(world)]
    recvs = [poisoned(n, device) for _ in range(world)]
    dist.all_to_all(recvs, sends)
    expect = [values([1000 * j + 100 * rank + k for k in range(n)], device) for j in range(world)]
    return torch.cat(recvs), torch.cat(expect)


def batch_isend_irecv_ring(rank, world, device, n=4099):
    send = torch.full((n,), float(rank + 1), device=device)
    recv = poisoned(n, device)
    ops = [dist.P2POp(dist.isend, send, (rank + 1) % world), dist.P2POp(dist.irecv, recv, (rank - 1) % world)]
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    return recv, torch.full((n,), float((rank - 1) % world + 1), device=device)


def send_recv_pairs(rank, world, device, n=65537):
    partner = rank ^ 1  # pairs (0, 1), (2, 3): the world is even
    send = torch.full((n,), float(10 + rank), device=device)
    recv = poisoned(n, device)
    if rank % 2 == 0:
        dist.send(send, partner)
        dist.recv(recv, partner)
    else:
        dist.recv(recv, partner)
        dist.send(send, partner)
    return recv, torch.full((n,), float(10 + partner), device=device)


def gather_to_root(rank, world, device, n=1023):
    mine = torch.full((n,), float(rank + 1), device=device)
    gathered = [poisoned(n, device) for _ in range(world)] if rank == 0 else None
    dist.gather(mine, gathered, dst=0)
    if rank != 0:
        return mine, mine  # only the root receives
    return torch.cat(gathered), torch.cat([torch.full((n,), float(j + 1), device=device) for j in range(world)])


def scatter_from_root(rank, world, device, n=1023):
    pieces = [torch.full((n,), float(100 + j), device=device) for j in range(world)] if rank == 0 else None
    out = poisoned(n, device)
    dist.scatter(out, pieces, src=0)
    return out, torch.full((n,), float(100 + rank), device=device)


CASES = [
    ("all_to_all_single", all_to_all_single_equal),
    ("all_to_all_single uneven", all_to_all_single_uneven),
    ("all_to_all lists", all_to_all_lists),
    ("batch_isend_irecv", batch_isend_irecv_ring),
    ("send/recv", send_recv_pairs),
    ("gather", gather_to_root),
    ("scatter", scatter_from_root),
]


def first_line(error):
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"


def why_refused(error):
    """The line of a raised error that says why (Canopy's own message, which torch appends as 'Last error')."""
    for line in str(error).splitlines():
        if "Canopy" in line or "real NCCL" in line:
            return line.strip()
    return first_line(error)


def all_reduce_after(rank, world, device, case_number):
    """A plain all_reduce of 1 Mi floats: every element must be the exact sum (never a silent wrong result)."""
    x = torch.full((AFTER_COUNT,), float(rank + 1 + case_number), device=device)
    started = time.perf_counter()
    dist.all_reduce(x)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    seconds = time.perf_counter() - started
    expect = float(world * (world + 1) // 2 + world * case_number)
    wrong = int((x != expect).sum().item())
    return wrong, seconds


def main():
    parser = argparse.ArgumentParser(description="Point-to-point calls through libcanopy_nccl.so (all-to-all, "
                                                 "send/recv, gather, scatter), each followed by an all_reduce checked "
                                                 "element by element.")
    parser.add_argument("--real", action="store_true",
                        help="give each process its own NCCL_HOSTID, so a real NCCL communicator exists beside "
                             "Canopy's (CANOPY_NCCL_FORWARD then may send these calls to it)")
    parser.add_argument("--backend", default="nccl", choices=["nccl", "gloo"])
    args = parser.parse_args()
    if args.real:  # before the process group (and the real NCCL's init) starts
        os.environ["NCCL_HOSTID"] = f"canopy-borrowed-check-{os.environ.get('LOCAL_RANK', '0')}"
    rank, world, device = torch_setup.start(args.backend)
    if world % 2 != 0:
        raise SystemExit(f"borrowed_check: needs an even number of ranks (send/recv pairs them), got {world}")
    if rank == 0:
        expectation = ("a real NCCL beside Canopy" if args.real or torch_setup.library(args.backend) != "canopy"
                       else "no real NCCL can exist beside Canopy") + ": every call must give the right values"
        print(f"borrowed_check: {torch_setup.describe(args.backend, world, device)}; {expectation}", flush=True)
    wrong_cases = 0
    for number, (name, case) in enumerate(CASES):
        outcome, detail = "", ""
        try:
            got, expect = case(rank, world, device)
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            bad = int((got != expect).sum().item())
            outcome = "right" if bad == 0 else "WRONG"
            detail = f"{bad} of {got.numel()} elements wrong" if bad else f"{got.numel()} elements"
        except Exception as error:  # noqa: BLE001 (any exception is this case's outcome)
            outcome, detail = "raised", why_refused(error)
        after_wrong, after_s = all_reduce_after(rank, world, device, number)
        mine = {"outcome": outcome, "detail": detail, "after_wrong": after_wrong, "after_s": round(after_s, 4)}
        everyone = torch_setup.gather_from_ranks(f"borrowed/{number}", rank, world, mine)
        ok = all(r["outcome"] == "right" and r["after_wrong"] == 0 for r in everyone)
        wrong_cases += 0 if ok else 1
        if rank == 0:
            ranks = ", ".join(f"{r['outcome']}" for r in everyone)
            print(f"{'ok   ' if ok else 'WRONG'} {name:26s} ranks: {ranks}; all_reduce after: "
                  f"{sum(r['after_wrong'] for r in everyone)} wrong, {max(r['after_s'] for r in everyone):.3f} s",
                  flush=True)
            for r_index, r in enumerate(everyone):
                if not ok or r_index == 0:
                    print(f"      rank {r_index}: {r['detail']}", flush=True)
    if rank == 0:
        print(f"borrowed_check: {len(CASES)} cases, {wrong_cases} wrong", flush=True)
    torch_setup.finish()
    return 1 if wrong_cases else 0


if __name__ == "__main__":
    sys.exit(main())
