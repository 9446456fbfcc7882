#!/usr/bin/env python3
# FSDP2 (torch.distributed.fsdp.fully_shard) through torch's NCCL backend (issue 32's training acceptance;
# docs/nccl-api.md "Checking it with PyTorch"): the MLP of tests/torch/train_setup.py, each Linear and then the whole
# model sharded over a 1-D mesh of every rank, 20 steps (--steps), each rank on its own batch, all ranks on GPU 0
# (CANOPY_TORCH_DEVICES to spread them); then every parameter gathered whole (DTensor.full_tensor()) and compared
# with the model trained in one process on the ranks' batches concatenated: max abs diff <= 1e-5 (float32).
#
#   LD_PRELOAD=build/libcanopy_nccl.so torchrun --standalone --nproc_per_node 4 tests/torch/fsdp_check.py
#
# FSDP2's calls: all_gather_into_tensor of the parameters before each forward and backward, reduce_scatter_tensor
# of the gradients (ReduceOp.AVG for float32 on more than one rank), the final all-gathers of full_tensor(). Prints
# `fsdp_check: N ranks, S steps, max abs diff D (limit 1e-05)`; exit 1 when over on any rank. --backend gloo: the
# same on the CPU, a self-test of this script.
import argparse
import sys

import torch
import torch.nn as nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor import DTensor

sys.dont_write_bytecode = True  # importing the helpers beside it leaves no __pycache__ in the tree
import torch_setup  # noqa: E402 (after the line above)
import train_setup


def main():
    parser = argparse.ArgumentParser(description="FSDP2 against a one-process reference (run under torchrun)")
    parser.add_argument("--backend", default="nccl", choices=("nccl", "gloo"))
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()

    rank, world, device = torch_setup.start(args.backend)
    train_setup.exact_float32()
    if rank == 0:
        print("fsdp_check:", torch_setup.describe(args.backend, world, device), flush=True)

    mesh = init_device_mesh(device.type, (world,))
    model = train_setup.make_model(device)
    for layer in model:
        if isinstance(layer, nn.Linear):
            fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    optimizer = torch.optim.SGD(model.parameters(), lr=train_setup.LR)
    for step in range(args.steps):
        loss = train_setup.train_step(model, optimizer, *train_setup.batch(step, rank, device))
        if rank == 0 and (step % 5 == 0 or step == args.steps - 1):
            print(f"fsdp_check: step {step}: rank 0's loss {loss:.6f}", flush=True)

    # full_tensor() all-gathers each sharded parameter: every rank calls it, in the same order.
    trained = {}
    for name, p in model.named_parameters():
        if not isinstance(p, DTensor):
            raise SystemExit(f"fsdp_check: parameter {name} is a {type(p).__name__}, not a DTensor: not sharded?")
        trained[name] = p.detach().full_tensor()
    return train_setup.verdict("fsdp_check", rank, world, args.steps, trained, device)


if __name__ == "__main__":
    sys.exit(main())
