// MachineFacts: what topology detection found on this machine, as plain data (gather_machine_facts.hpp fills it
// from the CUDA runtime and NVML; topology_from_facts.hpp turns it into a Topology, and tests fabricate it).
// With source "nvml" the NVLink lanes and PCIe links come from the driver; with source "cuda" (NVML unavailable)
// only what the CUDA runtime says is known: the GPUs and their P2P reachability, and no NVLink at all.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace canopy {

// What sits at the other end of an NVLink lane.
enum class NvlinkRemoteKind { gpu, nvswitch, cpu, unknown };
std::string to_string(NvlinkRemoteKind kind);  // "gpu" | "switch" | "cpu" | "unknown"

// One active NVLink lane of a GPU: one NVML "link" (what `nvidia-smi topo -m` counts in NV18).
struct NvlinkLane {
  int link = 0;                // NVML's index of the lane on its GPU
  int version = 0;             // NVLink generation 1..5 used for bandwidth; 0 = unknown (see nvlink_generation)
  unsigned nvml_version = 0;   // what nvmlDeviceGetNvLinkVersion reported (0: not reported)
  std::string remote_bus_id;   // normalized PCI bus id of the other end ("0000:18:00.0"); empty if unknown
  NvlinkRemoteKind remote = NvlinkRemoteKind::unknown;
};

struct GpuFacts {
  int cuda_ordinal = 0;          // the CUDA runtime's device ordinal in this process
  std::string name;              // "NVIDIA H200"
  std::string pci_bus_id;        // normalized, "0000:18:00.0"
  int cc_major = 0;              // compute capability, e.g. 9.0
  int cc_minor = 0;
  std::uint64_t memory_bytes = 0;
  int pcie_generation = 0;       // 0: unknown (no NVML)
  int pcie_width = 0;            // lanes, 0: unknown
  std::vector<NvlinkLane> nvlinks;  // active lanes only, in NVML link order
};

// What the CUDA runtime says about copies from one GPU to another.
struct PeerFacts {
  bool can_access = false;       // cudaDeviceCanAccessPeer
  bool access_supported = false; // cudaDevP2PAttrAccessSupported
  int performance_rank = -1;     // cudaDevP2PAttrPerformanceRank (lower is faster); -1 unknown
};

struct MachineFacts {
  std::string source = "cuda";         // "nvml" or "cuda" (NVML unavailable: no NVLink, PCIe assumed)
  std::string nvml_unavailable;        // why NVML was not used, when source is "cuda"
  std::vector<GpuFacts> gpus;          // rank order: gpuK of the detected topology is gpus[K]
  std::vector<std::vector<PeerFacts>> peers;  // peers[a][b] for gpus a != b (same size as gpus, square)
  std::vector<std::string> notes;      // anything gathering noticed (a lookup that failed, ...)

  // Whether gpus a and b can reach each other's memory directly (P2P both ways).
  bool p2p(int a, int b) const;
};

// "0000:18:00.0" (domain at least 4 lowercase hex digits, then bus, device, function) from NVML's
// "00000000:18:00.0", CUDA's "0000:18:00.0" or "18:00.0"; empty when `bus_id` is not a PCI bus id.
std::string normalize_pci_bus_id(std::string_view bus_id);
std::string format_pci_bus_id(unsigned domain, unsigned bus, unsigned device, unsigned function = 0);

// The NVLink generation of a GPU's lanes. The architecture fixes it (sm_6x 1, sm_7x 2, sm_8x 3, sm_9x 4,
// sm_10x 5), as NCCL decides NVLink bandwidth by architecture. Otherwise NVML's report is used only where it is
// unambiguous: NVML documents nvmlNvlinkVersion_t codes (1_0=1, 2_0=2, 2_2=3, 3_0=4, 3_1=5, 4_0=6, 5_0=7) while
// older drivers reported the major version, so only 1 and 2 mean the same either way (driver 580 reports 6, the
// 4_0 code, on an H200). 0 when nothing settles it.
int nvlink_generation(unsigned nvml_version, int cc_major);

}  // namespace canopy
