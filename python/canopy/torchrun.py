"""``python -m canopy.torchrun ARGS`` (and the ``canopy-torchrun`` script): torchrun with Canopy's NCCL library in
front of the real one for every rank.

It prepends the wheel's libcanopy_nccl.so (canopy.nccl_library()) to LD_PRELOAD and runs
``python -m torch.distributed.run ARGS``; every rank inherits it, so PyTorch's ProcessGroupNCCL calls Canopy, which
keeps the real NCCL (PyTorch's nvidia-nccl wheel) beside it for what it does not serve. Nothing else changes: the
arguments are torchrun's, and so is the exit code. ``canopy.torch.status()`` inside a rank says how calls are served.
"""
from __future__ import annotations

import os
import sys
from typing import List, Optional


def preload_environment(environ: Optional[dict] = None) -> dict:
    """A copy of `environ` (default os.environ) with the library first in LD_PRELOAD (once)."""
    from . import nccl_library

    env = dict(os.environ if environ is None else environ)
    library = nccl_library()
    preload = [p for p in env.get("LD_PRELOAD", "").replace(":", " ").split() if p and p != library]
    env["LD_PRELOAD"] = " ".join([library] + preload)
    return env


def command(args: List[str]) -> List[str]:
    """What runs: this Python's torch.distributed.run with the given arguments."""
    return [sys.executable, "-m", "torch.distributed.run"] + list(args)


def main(argv: Optional[List[str]] = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] in (["-h"], ["--help"]):
        print(__doc__.strip() + "\n\ntorchrun's own options follow.\n", flush=True)
    try:
        import torch.distributed.run  # noqa: F401  (only to say clearly when PyTorch is missing)
    except ImportError as e:
        sys.exit(f"canopy.torchrun: PyTorch is not importable here ({e}): install torch in this environment")
    env = preload_environment()
    os.execve(sys.executable, command(args), env)


if __name__ == "__main__":
    main()
