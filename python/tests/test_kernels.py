"""canopy.generate and canopy.compile: `canopy gen`'s source and schedule, NVRTC through the disk cache."""
import json

import pytest

import canopy


def test_generate_gives_the_source_the_schedule_and_the_keys(cli, tmp_path):
    p = canopy.plan("dgx1-v100", "allreduce")
    k = canopy.generate(p, dtype="bf16", chunk="1MiB")
    assert k["name"].endswith(".cu") and k["entry"] in k["source"]
    assert "bf16" in k["entry"] or "bf16" in k["name"]
    assert k["schedule"] and len(k["key"]) == 64 and len(k["schedule_key"]) == 64
    manifest = json.loads(k["manifest"])
    assert manifest["entry"] == k["entry"] and manifest["dtype"] == "bf16" and manifest["schedule_key"] == k["schedule_key"]
    code, out, err = cli("gen", "-t", "dgx1-v100", "-c", "allreduce", "--dtype", "bf16", "--chunk", "1MiB", "--print")
    assert code == 0, err
    assert out == k["source"], "the same source as `canopy gen --print`"


def test_generate_a_program():
    ring = canopy.Algorithm.shipped("ring-allreduce", 4)
    k = canopy.generate(ring, "dgx1-v100")
    assert "ring" in k["name"] or "ring" in k["source"]


def test_compile_goes_through_the_disk_cache(kernel_cache):
    p = canopy.plan("h200x2", "allgather")
    first = canopy.compile(p, arch="sm_90")
    assert first["outcome"] == "compiled"
    assert first["cubin_bytes"] > 0 and first["kernels"]
    assert any(k["name"] == first["entry"] and k["registers"] > 0 for k in first["kernels"])
    assert any(kernel_cache.rglob("module.cubin"))
    again = canopy.compile(p, arch="sm_90")
    assert again["outcome"] == "disk hit" and again["cache_key"] == first["cache_key"]


def test_kernel_errors():
    p = canopy.plan("dgx1-v100", "allreduce")
    with pytest.raises(canopy.Error, match="dtype 'f31'"):
        canopy.generate(p, dtype="f31")
    with pytest.raises(canopy.Error, match="chunk"):
        canopy.generate(p, chunk="big")
    with pytest.raises(canopy.Error, match="devices=9"):
        canopy.generate(p, devices=9)
    with pytest.raises(canopy.Error, match="leave out topology"):
        canopy.generate(p, "dgx1-v100")
    with pytest.raises(canopy.Error, match="say where"):
        canopy.generate(canopy.Algorithm.shipped("ring-allreduce", 4))
    with pytest.raises(canopy.Error, match="sm_1"):
        canopy.compile(p, arch="sm_1")
    with pytest.raises(TypeError, match="canopy.Plan"):
        canopy.generate("dgx1-v100")


def test_a_relay_plan_generates_the_relays_kernels_too():
    # Blink+ on dgx1-p100 {0,1}: four other GPUs forward; their forwarding kernels are generated beside the ranks'.
    k = canopy.generate(canopy.plan("dgx1-p100", "broadcast", gpus=[0, 1], relay=True))
    assert k["name"] == "canopy_broadcast_dgx1p100_t5_c256k_f32_relays4.cu"
    manifest = json.loads(k["manifest"])
    assert len(manifest["memory_per_rank"]) == 2
    # Each relay's scratch: 5 MiB at the default shape (docs/codegen.md "Relays"), within CANOPY_RELAY_MEMORY.
    assert [(r["relay"], r["scratch_bytes"]) for r in manifest["relays"]] == [
        ("gpu2", 5 << 20), ("gpu3", 5 << 20), ("gpu4", 5 << 20), ("gpu5", 5 << 20)]
