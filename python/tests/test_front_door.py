"""What a new user meets first: the console script, the NCCL library's place, canopy.torchrun and canopy.torch."""
import os
import pathlib
import subprocess
import sys

import pytest

import canopy
import canopy.torch
import canopy.torchrun


def test_the_console_script_runs_the_cli(cli):
    code, out, err = cli("--help")
    assert code == 0, err
    assert "canopy" in out and "plan" in out
    code, out, _ = cli("--version")
    assert code == 0 and canopy.__version__ in out
    code, _, err = cli("frobnicate")
    assert code != 0 and "frobnicate" in err


def test_the_nccl_library_never_shadows_the_systems():
    path = pathlib.Path(canopy.nccl_library())
    assert path.name == "libcanopy_nccl.so" and path.is_file()
    package = pathlib.Path(canopy.__file__).parent
    assert not [p for p in package.rglob("libnccl*")], "nothing in the package may be found as libnccl.so.2"
    readelf = subprocess.run(["readelf", "-d", str(path)], capture_output=True, text=True)
    if readelf.returncode == 0:
        assert "Library soname: [libnccl.so.2]" in readelf.stdout  # what LD_PRELOAD stands it in for
    for name in ("LD_LIBRARY_PATH", "LD_PRELOAD"):
        assert str(path.parent) not in os.environ.get(name, "")


def test_torchrun_preloads_the_library_once_and_runs_torch_distributed_run():
    env = canopy.torchrun.preload_environment({"LD_PRELOAD": "/x/libother.so", "PATH": "/bin"})
    assert env["LD_PRELOAD"].split() == [canopy.nccl_library(), "/x/libother.so"]
    again = canopy.torchrun.preload_environment(env)
    assert again["LD_PRELOAD"] == env["LD_PRELOAD"]
    assert canopy.torchrun.command(["--nproc_per_node", "2", "train.py"]) == [
        sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "train.py"]


def test_torchrun_without_torch_says_so():
    try:
        import torch  # noqa: F401
    except ImportError:
        done = subprocess.run([sys.executable, "-m", "canopy.torchrun", "--nproc_per_node", "1", "x.py"],
                              capture_output=True, text=True)
        assert done.returncode != 0 and "PyTorch is not importable" in done.stderr
    else:
        pytest.skip("torch is installed here: the GPU machine runs canopy.torchrun for real")


def test_status_without_the_library_says_how_to_load_it():
    s = canopy.torch.status()
    assert s["serving"] is False and "canopy.torchrun" in s["why_not"]


def test_status_with_the_library_preloaded_reads_its_answer():
    code = "import canopy.torch, json; print(json.dumps(canopy.torch.status()))"
    env = canopy.torchrun.preload_environment()
    env["CANOPY_NCCL_LIBRARY"] = "/nonexistent/libnccl.so.2"  # no real NCCL is needed to answer
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    import json
    s = json.loads(done.stdout)
    assert s["serving"] is True and s["library"] == canopy.nccl_library()
    assert s["version"] == canopy.__version__ and s["communicators"] == []
