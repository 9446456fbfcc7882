"""canopy.plan and canopy.Plan: the figures `canopy plan` prints, trees as data, JSON both ways, loads, checks."""
import json
import shutil

import pytest

import canopy


def test_rate_and_bound_are_the_clis(cli):
    p = canopy.plan("dgx1-v100", "allreduce")
    code, out, err = cli("plan", "-t", "dgx1-v100", "-c", "allreduce", "--json")
    assert code == 0, err
    from_cli = json.loads(out)
    assert p.rate == from_cli["algbw_GBps"]
    assert p.bound == from_cli["bound_algbw_GBps"]
    assert json.loads(p.to_json()) == from_cli
    code, text, err = cli("plan", "-t", "dgx1-v100", "-c", "allreduce")
    assert code == 0, err
    assert f"{p.rate:.2f}" in text and f"{p.bound:.2f}" in text


def test_the_plan_is_plain_data():
    p = canopy.plan("dgx1-v100", "broadcast", gpus=[0, 1, 2, 3], root="gpu2")
    assert p.collective == "broadcast"
    assert p.ranks == ["gpu0", "gpu1", "gpu2", "gpu3"]
    assert p.root == "gpu2"
    assert p.topology.gpus == p.ranks
    assert p.trees and all(t["root"] == "gpu2" and t["direction"] == "out" for t in p.trees)
    assert abs(sum(t["fraction"] for t in p.trees) - 1.0) < 1e-9
    edge = p.trees[0]["edges"][0]
    assert set(edge) == {"from", "to", "path"}
    assert p.check() == []
    assert canopy.plan("dgx1-v100", "allreduce").strategy.startswith("reduce-scatter trees, then allgather trees")
    assert 0 < p.rate <= p.bound + 1e-9
    busiest = max(p.link_loads, key=lambda l: l["utilization"])
    assert busiest["utilization"] == pytest.approx(1.0)
    assert "Plan(broadcast on dgx1-v100, 4 ranks" in repr(p)
    assert canopy.plan("dgx1-v100", "broadcast", gpus=[0, 1, 2, 3], root=2).root == "gpu2", "a root by index"


def test_json_round_trips():
    p = canopy.plan("dgx1-v100", "allgather", gpus="0,1,4,5")
    q = canopy.Plan.from_json(p.to_json(), topology=p.topology)
    assert q.to_json() == p.to_json()
    assert q.rate == p.rate


def test_json_read_back_without_a_topology_takes_the_one_it_was_planned_on():
    subset = canopy.Plan.from_json(canopy.plan("dgx1-v100", "allgather", gpus=[0, 1, 4, 5]).to_json())
    assert subset.topology.gpus == ["gpu0", "gpu1", "gpu4", "gpu5"] and subset.check() == []
    relayed = canopy.Plan.from_json(canopy.plan("dgx1-v100", "allreduce", gpus=[0, 1], relay=True).to_json())
    assert len(relayed.topology.gpus) == 8 and relayed.check() == []


def test_bad_json_names_the_field():
    with pytest.raises(canopy.Error, match="trees"):
        canopy.Plan.from_json('{"collective": "allreduce", "topology": "dgx1-v100", "ranks": ["gpu0", "gpu1"], '
                              '"algbw_GBps": 1, "bound_algbw_GBps": 1, "trees": 7}')
    with pytest.raises(canopy.Error, match='p.json: .*missing field "topology"'):
        canopy.Plan.from_json('{"collective": "allreduce"}', origin="p.json")


def test_relays_raise_the_rate_of_a_two_gpu_tenant():
    alone = canopy.plan("dgx1-v100", "allreduce", gpus=[0, 1])
    relayed = canopy.plan("dgx1-v100", "allreduce", gpus=[0, 1], relay=True)
    assert relayed.rate > alone.rate
    assert len(relayed.topology.gpus) == 8  # the whole machine: other GPUs forward


def test_a_list_of_relays_lets_only_those_forward():
    # As `canopy plan --relays 2,3`: Blink+'s own case with two of its four relays lent.
    two = canopy.plan("dgx1-p100", "broadcast", gpus=[0, 1], relay=[2, "gpu3"])
    assert two.rate == pytest.approx(75.75)
    assert two.topology.gpus == ["gpu0", "gpu1", "gpu2", "gpu3"]
    crossed = {node for tree in two.trees for edge in tree["edges"] for node in edge["path"]}
    assert crossed & {"gpu2", "gpu3"} and not crossed & {"gpu4", "gpu5", "gpu6", "gpu7"}
    assert canopy.plan("dgx1-p100", "broadcast", gpus=[0, 1], relay=True).rate > two.rate
    with pytest.raises(canopy.Error, match="relay GPU gpu1 is also a rank"):
        canopy.plan("dgx1-p100", "broadcast", gpus=[0, 1], relay=[1])
    sim = canopy.simulate("dgx1-p100", "broadcast", sizes=[256 << 20], gpus=[0, 1], relay=[2, 3])
    assert sim.relays_used == ["gpu2", "gpu3"]


def test_errors_are_canopy_errors():
    with pytest.raises(canopy.Error, match="collective 'allsum'"):
        canopy.plan("dgx1-v100", "allsum")
    with pytest.raises(canopy.Error, match="root"):
        canopy.plan("dgx1-v100", "broadcast", gpus=[0, 1], root="gpu7")
    with pytest.raises(canopy.Error, match="root 9: dgx1-v100 has GPUs 0 to 7"):
        canopy.plan("dgx1-v100", "broadcast", root=9)
    with pytest.raises(canopy.Error):
        canopy.plan("dgx1-v100", "allreduce", gpus=[0])


def test_plan_pictures():
    p = canopy.plan("dgx1-v100", "allreduce", gpus=[0, 1, 2, 3])
    assert "digraph" in p.to_dot()
    if shutil.which("dot"):
        assert "<svg" in p._repr_svg_()


def test_the_alltoall_routes_are_the_clis(cli):
    routes = canopy.plan_alltoall("dgx1-v100", gpus=[0, 1, 4, 5])
    code, out, err = cli("plan", "-t", "dgx1-v100", "-c", "alltoall", "--gpus", "0,1,4,5", "--json")
    assert code == 0, err
    assert routes == json.loads(out)
    assert routes["pair_GBps"] <= routes["bound_pair_GBps"] * (1 + 1e-9)
    assert routes["pair_GBps"] > 2 * routes["direct_pair_GBps"], "routing through relaying GPUs beats direct paths"
    assert len(routes["pairs"]) == 12 and all(abs(sum(p["share"] for p in pair["paths"]) - 1) < 1e-9
                                              for pair in routes["pairs"])
    with pytest.raises(canopy.Error, match="canopy.plan_alltoall"):
        canopy.plan("dgx1-v100", "alltoall")
    with pytest.raises(canopy.Error):
        canopy.plan_alltoall("dgx1-v100", gpus=[0])
