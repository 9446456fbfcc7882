#!/usr/bin/env python3
# DistributedDataParallel through torch's NCCL backend (issue 32's training acceptance; docs/nccl-api.md "Checking
# it with PyTorch"): a small MLP trained for 50 steps (--steps), each rank on its own batch, all ranks on GPU 0
# (CANOPY_TORCH_DEVICES to spread them), ends with parameters equal, max abs diff <= 1e-5 (float32), to the same
# model trained in one process on the ranks' batches concatenated (tests/torch/train_setup.py). Every rank compares
# its own parameters with a reference it trains itself; world size 1 works too.
#
#   LD_PRELOAD=build/libcanopy_nccl.so torchrun --standalone --nproc_per_node 4 tests/torch/ddp_check.py
#
# DDP's calls: the parameters' broadcast from rank 0 at construction and the gradients' all_reduce per bucket (small
# buckets, --bucket-mb, so that a step makes several). Prints `ddp_check: N ranks, S steps, max abs diff D (limit
# 1e-05)`; exit 1 when over on any rank. --backend gloo: the same on the CPU, a self-test of this script.
import argparse
import sys

import torch
from torch.nn.parallel import DistributedDataParallel

sys.dont_write_bytecode = True  # importing the helpers beside it leaves no __pycache__ in the tree
import torch_setup  # noqa: E402 (after the line above)
import train_setup


def main():
    parser = argparse.ArgumentParser(description="DDP against a one-process reference (run under torchrun)")
    parser.add_argument("--backend", default="nccl", choices=("nccl", "gloo"))
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--bucket-mb", type=float, default=0.004, help="DDP's bucket_cap_mb (0.004: ~4 buckets)")
    args = parser.parse_args()

    rank, world, device = torch_setup.start(args.backend)
    train_setup.exact_float32()
    if rank == 0:
        print("ddp_check:", torch_setup.describe(args.backend, world, device), flush=True)

    model = train_setup.make_model(device)
    ddp = DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None,
                                  bucket_cap_mb=args.bucket_mb)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=train_setup.LR)
    for step in range(args.steps):
        loss = train_setup.train_step(ddp, optimizer, *train_setup.batch(step, rank, device))
        if rank == 0 and (step % 10 == 0 or step == args.steps - 1):
            print(f"ddp_check: step {step}: rank 0's loss {loss:.6f}", flush=True)

    trained = {name: p.detach() for name, p in model.named_parameters()}
    return train_setup.verdict("ddp_check", rank, world, args.steps, trained, device)


if __name__ == "__main__":
    sys.exit(main())
