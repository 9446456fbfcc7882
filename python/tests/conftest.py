"""Shared fixtures of the Python package's tests (python/tests/): a private kernel cache, and the CLI console script."""
import os
import shutil
import subprocess

import pytest


@pytest.fixture(autouse=True)
def kernel_cache(tmp_path, monkeypatch):
    """Every test compiles into its own cache folder, never ~/.cache."""
    monkeypatch.setenv("CANOPY_CACHE_DIR", str(tmp_path / "kernel-cache"))
    return tmp_path / "kernel-cache"


@pytest.fixture
def cli():
    """Runs the `canopy` console script the wheel installed; returns (exit code, stdout, stderr)."""
    script = shutil.which("canopy")
    assert script, "the canopy console script is not on PATH: is the wheel installed in this environment?"

    def run(*args):
        done = subprocess.run([script, *args], capture_output=True, text=True, env=dict(os.environ))
        return done.returncode, done.stdout, done.stderr

    return run
