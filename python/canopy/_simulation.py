"""canopy.simulate's result: the rows of ``canopy simulate --json`` as a list of dicts, with what they compare, a
pandas DataFrame where pandas is installed, and a matplotlib plot of busbw against size."""
from __future__ import annotations

import json
from typing import Any, List, Optional

from ._canopy import Error, size_text

# Each curve plot() draws: (row key of busbw, label, colour); a key absent from the rows is left out.
_CURVES = [
    ("busbw_GBps", "Canopy (trees)", "#1f77b4"),
    ("ring_busbw_GBps", "NCCL-style rings", "#d62728"),
    ("tree_busbw_GBps", "NCCL double binary tree", "#2ca02c"),
    ("hier_busbw_GBps", "Canopy hierarchical", "#9467bd"),
    ("relay_busbw_GBps", "Canopy with relays (Blink+)", "#ff7f0e"),
]


class Simulation(list):
    """Rows (dicts, one per size, docs/simulator.md's keys) and what they compare: collective, topology, ranks,
    plan_algbw_GBps (the planner's rate), rings and ring_GBps (the NCCL-style baseline), relays_used."""

    collective: str
    topology: str
    ranks: List[str]
    plan_algbw_GBps: float
    rings: int
    ring_GBps: float
    relays_used: List[str]

    @classmethod
    def from_json(cls, text: str) -> "Simulation":
        data = json.loads(text)
        sim = cls(data.pop("rows"))
        for key, value in data.items():
            setattr(sim, key, value)
        return sim

    def __repr__(self) -> str:
        return (f"Simulation({self.collective} on {self.topology}, {len(self.ranks)} ranks, {len(self)} sizes, "
                f"planner {self.plan_algbw_GBps:.2f} GB/s beside {self.rings} ring(s) at {self.ring_GBps:.2f} GB/s)")

    def to_pandas(self):
        """The rows as a pandas DataFrame (pandas is an optional dependency: pip install pandas)."""
        try:
            import pandas
        except ImportError as e:
            raise Error("to_pandas() needs pandas: pip install pandas (or canopy[pandas])") from e
        return pandas.DataFrame(list(self))

    def plot(self, ax: Optional[Any] = None, title: Optional[str] = None):
        """busbw against size, Canopy beside the rings (and trees, hierarchical or relay curves where the rows have
        them), on a log2 size axis; returns the matplotlib Axes (matplotlib is optional: pip install matplotlib)."""
        try:
            import matplotlib.pyplot as plt
        except ImportError as e:
            raise Error("plot() needs matplotlib: pip install matplotlib (or canopy[plot])") from e
        if not self:
            raise Error("no rows to plot: simulate at least one size")
        if ax is None:
            _, ax = plt.subplots(figsize=(7, 4))
        sizes = [row["bytes"] for row in self]
        for key, label, colour in _CURVES:
            if key in self[0] and any(row[key] > 0 for row in self):
                ax.plot(sizes, [row[key] for row in self], marker="o", markersize=3, label=label, color=colour)
        ax.set_xscale("log", base=2)
        ax.set_xticks(sizes)
        ax.set_xticklabels([size_text(s) for s in sizes], rotation=45, fontsize=8)
        ax.set_xlabel("size")
        ax.set_ylabel("busbw (GB/s, simulated)")
        ax.set_title(title or f"{self.collective} on {self.topology} ({len(self.ranks)} ranks)")
        ax.grid(True, alpha=0.3)
        ax.legend()
        return ax
