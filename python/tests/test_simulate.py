"""canopy.simulate: `canopy simulate --json`'s rows, a DataFrame, a plot, and its errors."""
import json

import pytest

import canopy


def test_rows_are_the_clis(cli):
    sim = canopy.simulate("h200x2", "allreduce", sizes="64K:1M", chunk="256KiB")
    code, out, err = cli("simulate", "-t", "h200x2", "-c", "allreduce", "--sizes", "64K:1M", "--chunk", "256KiB",
                         "--json", "-")
    assert code == 0, err
    assert list(sim) == json.loads(out)
    assert [row["bytes"] for row in sim] == [64 << 10, 128 << 10, 256 << 10, 512 << 10, 1 << 20]
    assert {"time_us", "busbw_GBps", "ring_busbw_GBps", "tree_busbw_GBps", "speedup"} <= set(sim[0])
    assert sim.collective == "allreduce" and sim.topology == "h200x2" and sim.ranks == ["gpu0", "gpu1"]
    assert sim.rings >= 1 and sim.plan_algbw_GBps > 0
    assert "Simulation(allreduce on h200x2" in repr(sim)


def test_sizes_as_byte_counts_and_gpus_and_relays():
    sim = canopy.simulate("dgx1-p100", "broadcast", sizes=[1 << 20, 256 << 20], gpus=[0, 1], relay=True)
    assert [row["bytes"] for row in sim] == [1 << 20, 256 << 20]
    assert "relay_busbw_GBps" in sim[0] and sim.relays_used
    assert sim[1]["relay_speedup"] > 1


def test_to_pandas():
    pandas = pytest.importorskip("pandas")
    frame = canopy.simulate("dgx1-v100", "allgather", sizes="1M,64M").to_pandas()
    assert isinstance(frame, pandas.DataFrame)
    assert list(frame["bytes"]) == [1 << 20, 64 << 20]


def test_plot_draws_canopy_beside_rings_and_trees(tmp_path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    ax = canopy.simulate("dgx1-v100", "allreduce", sizes="1M:64M:4").plot()
    labels = [line.get_label() for line in ax.get_lines()]
    assert labels == ["Canopy (trees)", "NCCL-style rings", "NCCL double binary tree"]
    ax.figure.savefig(tmp_path / "busbw.png")
    assert (tmp_path / "busbw.png").stat().st_size > 0


def test_errors():
    with pytest.raises(canopy.Error, match="--sizes"):
        canopy.simulate("dgx1-v100", "allreduce", sizes="1M:64M:1")
    with pytest.raises(canopy.Error, match="alltoall"):
        canopy.simulate("dgx1-v100", "alltoall")
    with pytest.raises(canopy.Error, match="subset"):
        canopy.simulate("dgx1-v100", "allreduce", relay=True)
    with pytest.raises(canopy.Error, match="positive"):
        canopy.simulate("dgx1-v100", "allreduce", sizes=[0])
    with pytest.raises(canopy.Error, match="chunk"):
        canopy.simulate("dgx1-v100", "allreduce", sizes="1M", chunk="lots")
    with pytest.raises(canopy.Error, match="no rows"):
        canopy.Simulation.from_json('{"collective": "allreduce", "topology": "t", "ranks": [], "plan_algbw_GBps": 0, '
                                    '"rings": 0, "ring_GBps": 0, "relays_used": [], "rows": []}').plot()


def test_sizes_read_as_the_cli_reads_them():
    assert canopy._canopy.parse_sizes("1K,64K,1M") == [1 << 10, 64 << 10, 1 << 20]
    assert canopy._canopy.parse_sizes("1M:64M:4") == [1 << 20, 4 << 20, 16 << 20, 64 << 20]
    assert [canopy._canopy.size_text(b) for b in (8, 64 << 10, 1 << 30)] == ["8", "64K", "1G"]
    with pytest.raises(canopy.Error, match="--sizes"):
        canopy._canopy.parse_sizes("lots")
