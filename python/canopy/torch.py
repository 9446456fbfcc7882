"""Inside a PyTorch job: whether Canopy's NCCL library serves this process's NCCL calls, and how.

    import canopy.torch
    print(canopy.torch.status())

status() reads the library's own answer (its exported ncclCanopyStatus: every live Canopy communicator with its
ranks, topology, the protocol each collective takes at three sizes, and the real NCCL beside it). The library is
loaded by LD_PRELOAD (``python -m canopy.torchrun``) before PyTorch's NCCL; status() never loads it itself.
"""
from __future__ import annotations

import ctypes
import json
from typing import Optional


def _loaded_library_path() -> Optional[str]:
    """The path of a libcanopy_nccl.so mapped into this process, if one is."""
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.split(maxsplit=5)[-1].strip()
                if path.endswith("/libcanopy_nccl.so") or path.endswith("libcanopy_nccl.so.2"):
                    return path
    except OSError:
        pass
    return None


def status() -> dict:
    """{"serving": bool, "library": path or None, "why_not": text when not serving, and the library's own keys:
    "version", "communicators": [{rank, nranks, device, ranks_in_process, across_processes, topology,
    topology_source, protocols: {collective: {bytes: protocol}}, real_nccl: {made, path | why_not}, forwarded,
    library_choices}]}. A communicator appears once PyTorch has made it (after the first collective of a group)."""
    path = _loaded_library_path()
    if path is None:
        return {"serving": False, "library": None,
                "why_not": "libcanopy_nccl.so is not loaded in this process: start the job with "
                           "`python -m canopy.torchrun ...` (or LD_PRELOAD=$(python -c 'import canopy; "
                           "print(canopy.nccl_library())'))"}
    library = ctypes.CDLL(path)  # already mapped: the same copy, not a second one
    answer = library.ncclCanopyStatus
    answer.restype = ctypes.c_char_p
    info = json.loads(answer().decode())
    info.pop("library", None)
    return {"serving": True, "library": path, **info}
