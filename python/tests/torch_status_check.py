"""Run under `python -m canopy.torchrun --nproc_per_node N` (bench/device-steps/python.sh): every rank on GPU 0 makes
an NCCL process group, runs an all_reduce (checked), then asks canopy.torch.status(), which must say that Canopy's
library serves this process and name the communicator PyTorch made. Not collected by pytest (it needs torch and a GPU).
"""
import json
import os
import sys

import torch
import torch.distributed as dist

import canopy.torch


def main() -> int:
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(0)
    dist.init_process_group("nccl", device_id=torch.device("cuda", 0))
    x = torch.full((1 << 20,), float(rank + 1), device="cuda")
    dist.all_reduce(x)
    torch.cuda.synchronize()
    want = world * (world + 1) / 2
    right = bool((x == want).all().item())
    status = canopy.torch.status()
    comms = status.get("communicators", [])
    ok = right and status["serving"] and any(c["nranks"] == world for c in comms)
    print(f"torch_status_check: rank {rank}: all_reduce {'right' if right else 'WRONG'}, serving "
          f"{status['serving']}, {len(comms)} communicator(s): {json.dumps(status)}", flush=True)
    dist.destroy_process_group()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
