"""The `canopy` console script: runs the wheel's CLI binary (bin/canopy) with the same arguments and exit code."""
from __future__ import annotations

import os
import sys


def binary() -> str:
    return os.path.join(os.path.dirname(__file__), "bin", "canopy")


def main() -> None:
    path = binary()
    if not os.access(path, os.X_OK):
        sys.exit(f"canopy: {path} is missing or not executable: reinstall the package (pip install . from the "
                 f"repository)")
    os.execv(path, [path] + sys.argv[1:])


if __name__ == "__main__":
    main()
