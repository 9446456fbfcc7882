// topology_from_facts: MachineFacts -> Topology with nominal bandwidths, and notes saying where every figure came
// from. Pure (no CUDA, no NVML): tests feed it fabricated facts. The rules, in order:
//   - GPUs are gpu0..gpuN-1 in the order of the facts (rank order).
//   - NVLink lanes between two of these GPUs become one `link gpuA gpuB <lanes x per-lane> nvlinkV` per pair.
//   - Lanes to NVSwitches: one switch nvs0, nvs1, ... per distinct switch bus id (in order of first appearance),
//     and `link gpuK nvsJ <lanes x per-lane>`.
//   - When NVLink does not join every GPU to every other (through GPUs or switches), PCIe does: GPUs that reach each
//     other by P2P share a PCIe switch (pcie0, pcie1, ...), each GPU linked at its PCIe gen/width (x16: gen3 15.75,
//     gen4 31.5, gen5 63 GB/s; unknown: gen4 x16). Groups of one GPU, and the PCIe switches when there are several
//     groups, hang off one host node (host0), so the graph stays connected; pairs without P2P are named in a note.
//   - Lanes to a GPU not among the facts, to a CPU, or to an unknown end are left out, with a note.
//   - Every GPU whose PCIe generation and width are known gets a host link (Topology::host_link) at that PCIe rate,
//     kind pcieG; without them, none, with a note.
// Per-lane NVLink figures: nvlink1..nvlink4 from topology/topology.hpp; NVLink5 53.125 (2 x 212.5 Gb/s raw, as nvlink4
// is 2 x 106.25); GA10x (sm_86) bridge lanes 14.0625 (112.5 GB/s both ways over 4); an unknown version is taken
// for nvlink4 with a note.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "topology/topology.hpp"
#include "runtime/detect/machine_facts.hpp"

namespace canopy {

struct DetectedTopology {
  Topology topology;
  std::string source;                  // "nvml" or "cuda": MachineFacts::source
  std::vector<std::string> gpu_names;  // device names in rank order, e.g. "NVIDIA H200"
  std::vector<std::string> notes;      // provenance of the figures and warnings, one sentence each
};

// Throws canopy::Error when `facts` has no GPU, a peers matrix of the wrong shape, or `name` is not a valid
// topology name. The result has passed Topology::validate().
DetectedTopology topology_from_facts(const MachineFacts& facts, const std::string& name);

// One NVLink lane of generation `version` on a GPU of compute capability cc_major.cc_minor; nullopt when unknown.
std::optional<LinkType> nvlink_lane_type(int version, int cc_major, int cc_minor);

// A GPU's PCIe link of generation `generation` and `width` lanes (0: x16); nullopt when the generation is unknown.
std::optional<Bandwidth> pcie_bandwidth(int generation, int width);

}  // namespace canopy
