"""Canopy from Python: topologies, plans, predictions, kernels and collective-algorithm programs (docs/python.md).

    import canopy
    p = canopy.plan("dgx1-v100", "allreduce")
    print(p.rate, p.bound)          # GB/s, as `canopy plan` prints them

The C++ API is bound in ``canopy._canopy``; this module makes it take Python's usual inputs (names or Topology
objects, GPU indices or names, sizes as text or byte counts) and adds pictures and plots. Errors are
``canopy.Error`` with the C++ message unchanged.
"""
from __future__ import annotations

import os
from typing import Iterable, Optional, Sequence, Union

from . import _canopy
from ._canopy import Algorithm, Error, Plan, Topology, __version__, shipped_algorithms, shipped_topologies
from ._pictures import svg_of_dot
from ._simulation import Simulation

__all__ = [
    "Algorithm", "Error", "Plan", "Simulation", "Topology", "__version__", "compile", "detect", "generate",
    "load", "nccl_library", "plan", "plan_alltoall", "shipped_algorithms", "shipped_topologies", "simulate",
]

TopologyLike = Union[Topology, str, os.PathLike]
Gpus = Optional[Iterable[Union[int, str]]]
# Blink+: True lets any GPU outside the ranks forward; a list of GPUs (names or indices) only those.
Relay = Union[bool, Iterable[Union[int, str]]]


def load(topology: TopologyLike) -> Topology:
    """A Topology from a Topology, a shipped name (``canopy.shipped_topologies()``), a .topo path, or .topo text."""
    if isinstance(topology, Topology):
        return topology
    if isinstance(topology, os.PathLike):
        return Topology.from_file(os.fspath(topology))
    if not isinstance(topology, str):
        raise TypeError(f"topology: expected a canopy.Topology, a shipped name, a .topo path or .topo text, "
                        f"not {type(topology).__name__}")
    if "\n" in topology:
        return Topology.from_text(topology)
    return Topology.load(topology)


def detect(devices: Sequence[int] = (), measure: bool = False) -> Topology:
    """This machine's GPUs as a Topology (NVML, else CUDA). Raises canopy.Error where no GPU is visible."""
    return _canopy.detect(list(devices), measure)


def _gpu_list(gpus: Gpus) -> list:
    if gpus is None:
        return []
    if isinstance(gpus, str):
        return [g.strip() for g in gpus.split(",")]
    return [str(g) for g in gpus]


def _root_name(topology: Topology, root: Union[int, str, None]) -> Optional[str]:
    """A root given by index is the topology's GPU of that index, as indices in `gpus` are."""
    if root is None or isinstance(root, str):
        return root
    names = topology.gpus
    if not 0 <= root < len(names):
        raise Error(f"root {root}: {topology.name} has GPUs 0 to {len(names) - 1}; give an index or a name")
    return names[root]


def _relay_args(relay: Relay):
    """relay as the bindings take it: (on, the GPUs that may forward; none listed: any outside the ranks)."""
    if isinstance(relay, bool):
        return relay, []
    return True, _gpu_list(relay)


def plan(topology: TopologyLike, collective: str, gpus: Gpus = None, root: Union[int, str, None] = None,
         relay: Relay = False) -> Plan:
    """Plans `collective` on `topology` as ``canopy plan`` does: weighted spanning trees at the proven optimum rate.

    gpus: the ranks, by name ("gpu3") or index (3), in rank order; default every GPU. root: broadcast and reduce, by
    name or index (default the first rank). relay: True lets GPUs outside `gpus` forward over their idle links
    (Blink+); a list of GPUs (names or indices, as ``--relays``) lets only those forward.
    """
    t = load(topology)
    on, relay_gpus = _relay_args(relay)
    return _canopy.plan(t, collective, _gpu_list(gpus), _root_name(t, root), on, relay_gpus)


def plan_alltoall(topology: TopologyLike, gpus: Gpus = None, relay: Relay = False) -> dict:
    """Routes every ordered pair's all-to-all block over the links (``canopy plan -c alltoall``): a maximum concurrent
    multicommodity flow through switches and relaying GPUs, with its proven bound and NCCL-style direct routes beside.

    Returns the dict ``canopy plan -c alltoall --json`` writes: pair_GBps (every ordered pair at once), algbw_GBps,
    busbw_GBps, bound_pair_GBps, direct_pair_GBps, direct_algbw_GBps, and pairs: [{from, to, paths: [{nodes, share}]}]
    (docs/planner.md, "All-to-all"). relay: let GPUs outside `gpus` forward too (a list: only those).
    """
    import json

    on, relay_gpus = _relay_args(relay)
    return json.loads(_canopy._plan_alltoall(load(topology), _gpu_list(gpus), on, relay_gpus))


def simulate(topology: TopologyLike, collective: str, sizes: Union[str, Iterable[int]] = "1K:1G", gpus: Gpus = None,
             root: Union[int, str, None] = None, chunk: str = "auto", launch_us: float = 8.0,
             chunk_cost_us: float = 0.5, latency_scale: float = 1.0, relay: Relay = False) -> Simulation:
    """Predicted time per size of Canopy's plan beside NCCL-style rings (``canopy simulate``).

    Returns a Simulation: a list of row dicts with docs/simulator.md's keys (allreduce adds NCCL's double binary
    tree, relay=True the plan with relays, relay=[2, 3] with only those GPUs relaying), with ``to_pandas()`` and
    ``plot()``. sizes: text as --sizes reads it
    ("8:1G", "1M:64M:4", "1K,64K,1M") or byte counts.
    """
    size_list = _canopy.parse_sizes(sizes) if isinstance(sizes, str) else [int(s) for s in sizes]
    t = load(topology)
    on, relay_gpus = _relay_args(relay)
    text = _canopy._simulate(t, collective, _gpu_list(gpus), _root_name(t, root), size_list, chunk, launch_us,
                             chunk_cost_us, latency_scale, on, relay_gpus)
    return Simulation.from_json(text)


def _shape(dtype, op, chunk, fifo_depth, blocks, threads, devices):
    return dict(dtype=dtype, op=op, chunk=chunk, fifo_depth=fifo_depth, blocks=blocks, threads=threads,
                devices=devices)


def generate(what: Union[Plan, Algorithm], topology: Optional[TopologyLike] = None, gpus: Gpus = None, *,
             dtype: str = "f32", op: str = "sum", chunk: str = "256KiB", fifo_depth: int = 4, blocks: int = 24,
             threads: int = 512, devices: int = 0) -> dict:
    """The kernel pipeline up to the CUDA source (``canopy gen``), for a Plan or an Algorithm.

    Returns {name, entry, source, schedule, key, schedule_key, manifest}: the .cu file's name and text, the lowered
    per-GPU schedule, the pipeline's lookup key, the schedule's key and the manifest JSON. An Algorithm runs on the
    first of `topology`'s GPUs (or `gpus`); a Plan carries its own topology.
    """
    shape = _shape(dtype, op, chunk, fifo_depth, blocks, threads, devices)
    if isinstance(what, Plan):
        if topology is not None or gpus is not None:
            raise Error("a Plan carries its topology and ranks: leave out topology and gpus")
        return _canopy._generate_plan(what, **shape)
    if isinstance(what, Algorithm):
        if topology is None:
            raise Error("say where the program runs: generate(algorithm, topology, ...)")
        return _canopy._generate_program(what, load(topology), _gpu_list(gpus), **shape)
    raise TypeError(f"generate: expected a canopy.Plan or canopy.Algorithm, not {type(what).__name__}")


def compile(what: Union[Plan, Algorithm], topology: Optional[TopologyLike] = None, gpus: Gpus = None, *,
            arch: str = "sm_90", dtype: str = "f32", op: str = "sum", chunk: str = "256KiB", fifo_depth: int = 4,
            blocks: int = 24, threads: int = 512, devices: int = 0) -> dict:
    """The kernel pipeline through NVRTC and the disk cache (``canopy compile``; no GPU needed).

    Returns {name, entry, arch, outcome ("compiled", "disk hit", ...), ms, cache_key, cubin_bytes, kernels: [{name,
    registers, spill_store_bytes, spill_load_bytes, shared_bytes, stack_bytes}]}. The cache is $CANOPY_CACHE_DIR's.
    """
    shape = _shape(dtype, op, chunk, fifo_depth, blocks, threads, devices)
    if isinstance(what, Plan):
        if topology is not None or gpus is not None:
            raise Error("a Plan carries its topology and ranks: leave out topology and gpus")
        return _canopy._compile_plan(what, arch, **shape)
    if isinstance(what, Algorithm):
        if topology is None:
            raise Error("say where the program runs: compile(algorithm, topology, ...)")
        return _canopy._compile_program(what, load(topology), _gpu_list(gpus), arch, **shape)
    raise TypeError(f"compile: expected a canopy.Plan or canopy.Algorithm, not {type(what).__name__}")


def nccl_library() -> str:
    """The path of the wheel's libcanopy_nccl.so (NCCL's API on Canopy), for those who set LD_PRELOAD themselves.

    It is named libcanopy_nccl.so and sits in a folder no loader searches, so it never shadows the system's NCCL
    unless it is asked to; ``python -m canopy.torchrun`` preloads it for every rank.
    """
    path = os.path.join(os.path.dirname(__file__), "lib", "canopy", "libcanopy_nccl.so")
    if not os.path.exists(path):
        raise Error(f"{path} is missing: this canopy package was installed without its NCCL library; reinstall "
                    f"it with `pip install .` from the repository")
    return path


# Pictures in notebooks: Topology and Plan draw themselves through Graphviz's `dot` where it is installed.
def _topology_svg(self: Topology) -> str:
    """The topology drawn as SVG (Graphviz's `dot`; canopy.Error naming the fix when it is missing)."""
    return svg_of_dot(self.to_dot())


def _plan_svg(self: Plan) -> str:
    """The plan's trees drawn over the links as SVG (Graphviz's `dot`)."""
    return svg_of_dot(self.to_dot())


def _repr_svg(self) -> Optional[str]:
    try:
        return self.svg()
    except Error:
        return None  # no Graphviz: the notebook shows the text repr instead


Topology.svg = _topology_svg
Topology._repr_svg_ = _repr_svg
Plan.svg = _plan_svg
Plan._repr_svg_ = _repr_svg
