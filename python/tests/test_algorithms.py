"""canopy.Algorithm: shipped programs, MSCCL-IR XML both ways (msccl-tools' real output), verify()."""
import pathlib

import pytest

import canopy

# msccl-tools' own output, committed with its source and version (tests/data/msccl-tools/).
MSCCL_DATA = pathlib.Path(__file__).resolve().parents[2] / "tests" / "data" / "msccl-tools"


def test_shipped_algorithms_verify_and_round_trip_through_msccl_ir():
    names = [name for name, _ in canopy.shipped_algorithms()]
    assert "ring-allreduce" in names
    ring = canopy.Algorithm.shipped("ring-allreduce", 8)
    assert (ring.name, ring.goal, ring.ranks, ring.chunks) == ("ring-allreduce", "allreduce", 8, 8)
    assert ring.verify() == []
    on_links = ring.verify(canopy.load("dgx1-v100"))  # gpu7 -> gpu0 closes the ring: is it a link of the DGX-1?
    assert all(d.startswith("ring-allreduce:") and "error" in d for d in on_links)
    back = canopy.Algorithm.from_msccl(ring.to_msccl())
    assert back.ranks == 8 and back.statements == ring.statements and back.verify() == []
    assert "Algorithm('ring-allreduce', allreduce, 8 ranks" in repr(ring)


def test_msccl_tools_output_imports_and_verifies():
    files = sorted(MSCCL_DATA.glob("**/*.xml")) if MSCCL_DATA.exists() else []
    if not files:
        pytest.skip(f"no msccl-tools output under {MSCCL_DATA} (run from a repository checkout)")
    for f in files[:5]:
        program = canopy.Algorithm.read_msccl(str(f))
        assert program.ranks >= 2
        assert isinstance(program.verify(), list)


def test_errors():
    with pytest.raises(canopy.Error, match="ring-allreduce"):
        canopy.Algorithm.shipped("no-such-algorithm", 8)
    with pytest.raises(canopy.Error, match="<xml>"):
        canopy.Algorithm.from_msccl("<algo name='x'")
    with pytest.raises(canopy.Error, match="cannot read"):
        canopy.Algorithm.read_msccl("/nonexistent.xml")
