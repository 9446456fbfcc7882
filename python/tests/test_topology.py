"""canopy.Topology and canopy.load: shipped names, .topo text and files, GPUs, switches, links, subsets, DOT, SVG."""
import pathlib
import shutil

import pytest

import canopy

BOX = """# a 4-GPU box: two NVLink pairs joined by a PCIe switch
topology box4
gpus 4
switch pcie0
link gpu0 gpu1 50 nvlink2
link gpu2 gpu3 50 nvlink2
link gpu0 pcie0 15.75 pcie3
link gpu1 pcie0 15.75 pcie3
link gpu2 pcie0 15.75 pcie3
link gpu3 pcie0 15.75 pcie3
"""

def test_shipped_topologies_are_listed_and_load_by_name():
    names = [name for name, _ in canopy.shipped_topologies()]
    assert "dgx1-v100" in names and names == sorted(names)
    t = canopy.load("dgx1-v100")
    assert t.name == "dgx1-v100"
    assert t.gpus == [f"gpu{i}" for i in range(8)]
    assert repr(t).startswith("Topology('dgx1-v100', 8 GPUs")


def test_an_unknown_name_is_an_error_listing_the_shipped_ones():
    with pytest.raises(canopy.Error, match="dgx1-v100"):
        canopy.load("no-such-machine")


def test_topo_text_and_files_read_alike(tmp_path):
    from_text = canopy.load(BOX)
    path = tmp_path / "box4.topo"
    path.write_text(BOX)
    assert canopy.load(pathlib.Path(path)) == from_text
    assert canopy.Topology.from_file(str(path)) == from_text
    assert canopy.Topology.from_text(from_text.to_topo()) == from_text
    assert from_text.switches == ["pcie0"]


def test_links_are_plain_data():
    links = canopy.load(BOX).links
    pair = [l for l in links if l["from"] == "gpu0" and l["to"] == "gpu1"]
    assert pair == [{"from": "gpu0", "to": "gpu1", "gbps": 50.0, "kind": "nvlink2", "latency_us": 0.7}]
    assert len(links) == 12  # 6 links, both directions


def test_bad_topo_text_names_the_line_and_column():
    with pytest.raises(canopy.Error, match=r"<text>:3:\d+: error"):
        canopy.Topology.from_text("topology t\ngpus 2\nlink gpu0 gpu9 25 nvlink2\n")


def test_a_subset_keeps_the_chosen_gpus():
    t = canopy.load("dgx1-v100")
    sub = t.subset(["0", "gpu3"])
    assert sub.gpus == ["gpu0", "gpu3"]
    with pytest.raises(canopy.Error, match="gpu42"):
        t.subset(["gpu42"])


def test_a_topology_that_is_not_one_is_a_type_error():
    with pytest.raises(TypeError, match="canopy.Topology"):
        canopy.load(42)


def test_dot_and_svg():
    t = canopy.load(BOX)
    assert t.to_dot().startswith("graph") or t.to_dot().startswith("digraph")
    if shutil.which("dot"):
        assert "<svg" in t.svg()
        assert "<svg" in t._repr_svg_()
    else:
        with pytest.raises(canopy.Error, match="Graphviz"):
            t.svg()
        assert t._repr_svg_() is None


def test_detect_without_a_gpu_says_so():
    try:
        t = canopy.detect()
    except canopy.Error as e:
        assert "CUDA" in str(e) or "GPU" in str(e) or "driver" in str(e)
    else:
        assert t.gpus
