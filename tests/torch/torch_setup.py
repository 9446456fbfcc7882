# What the PyTorch checks of tests/torch/ share (issue 32, docs/nccl-api.md "Checking it with PyTorch"): which
# device a rank takes, how the process group starts, and how the ranks agree on a verdict without the collective
# library under test (through torchrun's store).
#
# Each rank takes GPU 0, so that every rank of `torchrun --nproc_per_node N` shares the one GPU (which Canopy allows
# and the real NCCL refuses), unless CANOPY_TORCH_DEVICES lists the GPUs to use: rank LOCAL_RANK takes entry
# LOCAL_RANK mod their count ("0,1": ranks alternate between GPUs 0 and 1). Backend "gloo" runs everything on the
# CPU: a self-test of the scripts' own logic on a machine without a GPU, never a check of the NCCL library.
import datetime
import json
import os

import torch
import torch.distributed as dist


def rank_device(backend):
    """The device this rank computes on (set as the current CUDA device for nccl)."""
    if backend == "gloo":
        return torch.device("cpu")
    listed = os.environ.get("CANOPY_TORCH_DEVICES", "0")
    devices = [int(d) for d in listed.split(",") if d.strip()]
    if not devices:
        raise SystemExit(f"CANOPY_TORCH_DEVICES={listed!r} names no GPU (expected e.g. 0 or 0,1)")
    index = devices[int(os.environ.get("LOCAL_RANK", "0")) % len(devices)]
    torch.cuda.set_device(index)
    return torch.device("cuda", index)


def start(backend):
    """init_process_group for this rank; returns (rank, world size, device).

    The device is bound (device_id) so that barrier() and the eager communicator use it rather than guessing
    rank mod GPUs. CANOPY_TORCH_COLLECTIVE_TIMEOUT (seconds, default 300) bounds every collective: a hang ends in an
    error that names the collective instead of waiting for the step's timeout.
    """
    device = rank_device(backend)
    timeout = datetime.timedelta(seconds=int(os.environ.get("CANOPY_TORCH_COLLECTIVE_TIMEOUT", "300")))
    bind = {"device_id": device} if device.type == "cuda" else {}
    dist.init_process_group(backend, timeout=timeout, **bind)
    return dist.get_rank(), dist.get_world_size(), device


def describe(backend, world, device):
    """One line naming what runs: torch, the NCCL version torch sees, the world, the device, any LD_PRELOAD."""
    nccl = "-"
    if backend == "nccl":
        try:
            nccl = ".".join(str(v) for v in torch.cuda.nccl.version())
        except Exception as error:  # a library that answers no version: say so, the checks still run
            nccl = f"unknown ({error})"
    preload = os.environ.get("LD_PRELOAD", "") or "none"
    return (f"torch {torch.__version__}, backend {backend}, NCCL {nccl}, {world} ranks, rank 0 on {device}, "
            f"LD_PRELOAD {preload}")


def library(backend):
    """Which collective library ran: gloo, Canopy (LD_PRELOAD names a canopy library) or the real NCCL."""
    if backend != "nccl":
        return "gloo"
    preload = os.environ.get("LD_PRELOAD", "")
    return "canopy" if any("canopy" in p for p in preload.replace(":", " ").split()) else "real NCCL"


def gather_from_ranks(name, rank, world, value):
    """Every rank's JSON-able value, through torchrun's store (not a collective: the library under test may be
    the thing that is broken). Every rank must call it, with the same name."""
    store = dist.distributed_c10d._get_default_store()
    store.set(f"canopy_torch/{name}/{rank}", json.dumps(value))
    return [json.loads(store.get(f"canopy_torch/{name}/{r}")) for r in range(world)]


def finish():
    """Waits for every rank (so none tears its communicator down under another's last call), then ends."""
    dist.barrier()
    dist.destroy_process_group()
