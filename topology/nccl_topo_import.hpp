// import_nccl_topology: NCCL's topology XML (what NCCL_TOPO_FILE reads and NCCL_TOPO_DUMP_FILE writes, and the
// partial files cloud images ship) -> Topology, read the way NCCL's src/graph/xml.cc and topo.cc read it:
//   - GPUs: every <pci class="0x03..">, named gpu0.. in NCCL's rank order (<gpu rank>, then dev; GPUs without a
//     <gpu> element after them, by PCI bus id, the order NVML and CUDA number them).
//   - switches (relay-only): each <cpu> (cpu0..), each PCIe switch (pci0..; Broadcom two-level switches flattened as
//     NCCL does), each NIC (nic0..), each <net> port (net<dev>), and one nvs0 for every NVSwitch target.
//   - links: PCIe at NCCL's width x lane rate (kind pcieG, and the GPU's host link), <nvlink> count x NCCL's per-lane
//     NVLink figure for the GPU's sm (to the target GPU, to nvs0 for tclass 0x068000 and other non-GPU classes, to the
//     GPU's own CPU for 0x068001), <c2c> count x bw / 1000 to the GPU's CPU, <net speed> Mb/s / 8000, <pcilink> and
//     NICs on a CPU at NCCL's LOC_BW, and every pair of CPUs of one host at NCCL's inter-socket figure.
// Pure: NVLink that detection found on the machine is passed in (options.detected), never looked up here.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "topology/topology.hpp"

namespace canopy {

// One NVLink entry in the terms of NCCL's <nvlink target=".." count=".." tclass=".."/>.
struct NcclNvlink {
  std::string target;  // the far end's PCI bus id
  int count = 0;       // lanes
  std::string tclass;  // the far end's PCI class: 0x030200 GPU, 0x068000 NVSwitch, 0x068001 CPU
};

// What detection found for one GPU of this machine.
struct NcclDetectedGpu {
  std::string bus_id;  // "0000:18:00.0"
  int sm = 0;          // compute capability x 10
  std::vector<NcclNvlink> nvlinks;
};

struct NcclImportOptions {
  std::string name = "nccl-topo";  // the topology's name
  // NVLink detected on the machine the file describes, for the GPUs the file lists without a <gpu> element (partial
  // files list none); matched by PCI bus id. nullopt: not looked for.
  std::optional<std::vector<NcclDetectedGpu>> detected;
};

struct NcclImport {
  Topology topology{"nccl-topo"};
  std::vector<std::string> legend;  // one line per node: what it is in the file
  std::vector<std::string> notes;   // how the rates were derived, and what was left out
  int partial_gpus = 0;             // GPUs listed without a <gpu> element: their NVLink can only come from detection
  int detected_gpus = 0;            // of those, the ones options.detected matched
};

// Throws canopy::Error "ORIGIN:LINE: error: ..." on malformed XML, a missing or bad attribute NCCL requires, a wrong
// <system version>, and "ORIGIN: error: ..." when the file has no GPU or its GPUs cannot reach each other.
// The result has passed Topology::validate().
NcclImport import_nccl_topology(std::string_view xml, std::string_view origin, const NcclImportOptions& options = {});

// The import as .topo text: the legend and notes as '#' comments, then canonical .topo (write_topo).
std::string nccl_import_text(const NcclImport& imported, std::string_view origin);

}  // namespace canopy
