"""SVG from Graphviz DOT text (Topology.svg, Plan.svg), through the `dot` program where it is installed."""
from __future__ import annotations

import shutil
import subprocess

from ._canopy import Error


def svg_of_dot(dot: str) -> str:
    """Runs `dot -Tsvg` on the text; canopy.Error naming the fix when Graphviz is missing or fails."""
    program = shutil.which("dot")
    if program is None:
        raise Error("drawing needs Graphviz's `dot`: install it (Debian: apt install graphviz; conda: graphviz), "
                    "or take the DOT text from to_dot()")
    run = subprocess.run([program, "-Tsvg"], input=dot, capture_output=True, text=True)
    if run.returncode != 0:
        raise Error(f"dot -Tsvg failed ({run.returncode}): {run.stderr.strip()}")
    return run.stdout
