// gather_machine_facts: the CUDA runtime for devices and P2P, then NVML (when it loads) for NVLink and PCIe.
#include "runtime/detect/gather_machine_facts.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <set>

#include "core/error.hpp"
#include "runtime/cuda/cuda_check.hpp"
#include "runtime/cuda/nvml_library.hpp"

namespace canopy {
namespace {

// NVML_NVLINK_MAX_LINKS is 18 in current headers (6 and 12 in older ones); indices past a GPU's last lane answer
// an error and are skipped, so asking a few more costs nothing and leaves room for future GPUs.
constexpr unsigned kMaxNvlinkLanes = 32;

constexpr const char* kNoDeviceFix =
    "run on a machine with an NVIDIA GPU and its driver, check CUDA_VISIBLE_DEVICES, or describe the machine in a "
    ".topo file instead (docs/topology.md)";

int visible_device_count() {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    (void)cudaGetLastError();
    const char* meaning = error == cudaErrorInsufficientDriver ? ": no NVIDIA driver is loaded, or it is older than "
                                                                 "this CUDA runtime"
                          : error == cudaErrorNoDevice ? ": no GPU, or CUDA_VISIBLE_DEVICES hides them all"
                                                       : "";
    throw Error(fmt::format("no CUDA device visible: cudaGetDeviceCount says {} ({}{}); {}",
                            cudaGetErrorString(error), cudaGetErrorName(error), meaning, kNoDeviceFix));
  }
  if (count <= 0) throw Error(fmt::format("no CUDA device visible: cudaGetDeviceCount found none; {}", kNoDeviceFix));
  return count;
}

std::vector<int> resolve_devices(const std::vector<int>& devices, int count) {
  if (devices.empty()) {
    std::vector<int> all(count);
    for (int i = 0; i < count; ++i) all[i] = i;
    return all;
  }
  std::set<int> seen;
  for (int d : devices) {
    if (d < 0 || d >= count)
      throw Error(fmt::format("CUDA device {} does not exist: {} device{} visible (0..{}); check the device list "
                              "and CUDA_VISIBLE_DEVICES",
                              d, count, count == 1 ? " is" : "s are", count - 1));
    if (!seen.insert(d).second)
      throw Error(fmt::format("CUDA device {} is listed twice: give each device once", d));
  }
  return devices;
}

// The bus id as NVML prints it ("00000000:18:00.0"); nvmlDeviceGetHandleByPciBusId_v2 reads it with %x fields.
std::string nvml_bus_id(unsigned domain, unsigned bus, unsigned device) {
  return fmt::format("{:08X}:{:02X}:{:02X}.0", domain, bus, device);
}

// NVML fills the far end of a lane to an NVSwitch it cannot see (a VM given part of an HGX board, the fabric
// manager owning the switches) with all ones, FFFFFFFF:FF:FF.0: that, zeros, or a device number past 31 (PCI has 5
// bits for it) is no address.
bool plausible_pci_address(const nvml::PciInfo& pci) {
  if (pci.domain == 0xFFFFFFFFu || pci.bus > 0xFF || pci.device > 0x1F) return false;
  return (pci.domain | pci.bus | pci.device) != 0;
}

struct CudaGpu {
  GpuFacts facts;
  std::string nvml_bus_id;
};

CudaGpu cuda_gpu(int ordinal) {
  cudaDeviceProp p{};
  CANOPY_CUDA_CHECK(cudaGetDeviceProperties(&p, ordinal));
  CudaGpu gpu;
  GpuFacts& g = gpu.facts;
  g.cuda_ordinal = ordinal;
  g.name = p.name;
  const auto domain = static_cast<unsigned>(p.pciDomainID), bus = static_cast<unsigned>(p.pciBusID),
             device = static_cast<unsigned>(p.pciDeviceID);
  g.pci_bus_id = format_pci_bus_id(domain, bus, device);
  g.cc_major = p.major;
  g.cc_minor = p.minor;
  g.memory_bytes = p.totalGlobalMem;
  gpu.nvml_bus_id = nvml_bus_id(domain, bus, device);
  return gpu;
}

std::vector<std::vector<PeerFacts>> cuda_peers(const std::vector<int>& ordinals) {
  const std::size_t n = ordinals.size();
  std::vector<std::vector<PeerFacts>> peers(n, std::vector<PeerFacts>(n));
  for (std::size_t a = 0; a < n; ++a)
    for (std::size_t b = 0; b < n; ++b) {
      if (a == b) continue;
      PeerFacts& p = peers[a][b];
      int value = 0;
      CANOPY_CUDA_CHECK(cudaDeviceCanAccessPeer(&value, ordinals[a], ordinals[b]));
      p.can_access = value != 0;
      CANOPY_CUDA_CHECK(cudaDeviceGetP2PAttribute(&value, cudaDevP2PAttrAccessSupported, ordinals[a], ordinals[b]));
      p.access_supported = value != 0;
      CANOPY_CUDA_CHECK(cudaDeviceGetP2PAttribute(&value, cudaDevP2PAttrPerformanceRank, ordinals[a], ordinals[b]));
      p.performance_rank = value;
    }
  return peers;
}

// The first of NVML's max-then-current queries that answers a positive number, else 0. "Max" is the most the GPU
// and its slot allow; "current" drops when an idle GPU trains its link down to save power.
int pcie_fact(nvml::Device device, nvml::Return (*max_fn)(nvml::Device, unsigned int*),
              nvml::Return (*curr_fn)(nvml::Device, unsigned int*)) {
  for (auto fn : {max_fn, curr_fn}) {
    unsigned value = 0;
    if (fn && fn(device, &value) == nvml::kSuccess && value > 0) return static_cast<int>(value);
  }
  return 0;
}

// What sits at the far end of `lane`: NVML's answer when this driver gives one, otherwise a GPU when the bus id is
// a GPU NVML knows (NVML manages GPUs, not switches), otherwise an NVSwitch.
NvlinkRemoteKind remote_kind(const NvmlLibrary& nvml, nvml::Device device, unsigned link, const nvml::PciInfo& remote,
                             bool remote_known, const std::vector<CudaGpu>& gpus, bool& guessed) {
  if (nvml.device_get_nvlink_remote_device_type) {
    int type = nvml::kNvLinkDeviceTypeUnknown;
    if (nvml.device_get_nvlink_remote_device_type(device, link, &type) == nvml::kSuccess) {
      switch (type) {
        case nvml::kNvLinkDeviceTypeGpu: return NvlinkRemoteKind::gpu;
        case nvml::kNvLinkDeviceTypeSwitch: return NvlinkRemoteKind::nvswitch;
        case nvml::kNvLinkDeviceTypeIbmNpu: return NvlinkRemoteKind::cpu;
        default: return NvlinkRemoteKind::unknown;
      }
    }
  }
  if (!remote_known) return NvlinkRemoteKind::unknown;
  guessed = true;
  const std::string id = format_pci_bus_id(remote.domain, remote.bus, remote.device);
  for (const CudaGpu& g : gpus)
    if (g.facts.pci_bus_id == id) return NvlinkRemoteKind::gpu;
  nvml::Device other = nullptr;
  const std::string nvml_id = nvml_bus_id(remote.domain, remote.bus, remote.device);
  const nvml::Return r = nvml.device_get_handle_by_pci_bus_id_v2(nvml_id.c_str(), &other);
  if (r == nvml::kSuccess) return NvlinkRemoteKind::gpu;
  if (r == nvml::kErrorNotFound) return NvlinkRemoteKind::nvswitch;
  return NvlinkRemoteKind::unknown;
}

std::vector<NvlinkLane> nvlink_lanes(const NvmlLibrary& nvml, nvml::Device device, const GpuFacts& gpu,
                                     const std::vector<CudaGpu>& gpus, bool& guessed) {
  std::vector<NvlinkLane> lanes;
  if (!nvml.device_get_nvlink_state) return lanes;
  for (unsigned link = 0; link < kMaxNvlinkLanes; ++link) {
    int active = 0;
    if (nvml.device_get_nvlink_state(device, link, &active) != nvml::kSuccess) continue;
    if (active != nvml::kFeatureEnabled) continue;
    NvlinkLane lane;
    lane.link = static_cast<int>(link);
    unsigned version = 0;
    if (nvml.device_get_nvlink_version && nvml.device_get_nvlink_version(device, link, &version) == nvml::kSuccess)
      lane.nvml_version = version;
    lane.version = nvlink_generation(lane.nvml_version, gpu.cc_major);
    // Room past the struct in case a future NVML writes a longer nvmlPciInfo_t.
    struct {
      nvml::PciInfo info;
      char slack[256];
    } remote{};
    const bool remote_known =
        nvml.device_get_nvlink_remote_pci_info_v2 &&
        nvml.device_get_nvlink_remote_pci_info_v2(device, link, &remote.info) == nvml::kSuccess &&
        plausible_pci_address(remote.info);
    if (remote_known) lane.remote_bus_id = format_pci_bus_id(remote.info.domain, remote.info.bus, remote.info.device);
    lane.remote = remote_kind(nvml, device, link, remote.info, remote_known, gpus, guessed);
    lanes.push_back(std::move(lane));
  }
  return lanes;
}

// Adds NVLink lanes and PCIe links from NVML to `gpus`; returns why not (and changes nothing) when it cannot.
std::optional<std::string> add_nvml_facts(std::vector<CudaGpu>& gpus, std::vector<std::string>& notes) {
  std::string why_not;
  std::optional<NvmlLibrary> nvml = NvmlLibrary::load(&why_not);
  if (!nvml) return why_not;
  std::vector<nvml::Device> devices;
  for (const CudaGpu& g : gpus) {
    nvml::Device device = nullptr;
    if (const nvml::Return r = nvml->device_get_handle_by_pci_bus_id_v2(g.nvml_bus_id.c_str(), &device);
        r != nvml::kSuccess)
      return fmt::format("NVML has no GPU at {} (CUDA device {}): {}", g.nvml_bus_id, g.facts.cuda_ordinal,
                         nvml->error_string(r));
    devices.push_back(device);
  }
  std::vector<GpuFacts> found;
  bool guessed = false;
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    GpuFacts g = gpus[i].facts;
    g.pcie_generation = pcie_fact(devices[i], nvml->device_get_max_pcie_link_generation,
                                  nvml->device_get_curr_pcie_link_generation);
    g.pcie_width = pcie_fact(devices[i], nvml->device_get_max_pcie_link_width,
                             nvml->device_get_curr_pcie_link_width);
    g.nvlinks = nvlink_lanes(*nvml, devices[i], g, gpus, guessed);
    found.push_back(std::move(g));
  }
  for (std::size_t i = 0; i < gpus.size(); ++i) gpus[i].facts = std::move(found[i]);
  if (!nvml->device_get_nvlink_state)
    notes.push_back("this driver's NVML has no nvmlDeviceGetNvLinkState: NVLink lanes are unknown (update the "
                    "driver)");
  if (guessed)
    notes.push_back("this driver's NVML cannot say what is at the far end of a lane "
                    "(nvmlDeviceGetNvLinkRemoteDeviceType): a bus id NVML knows as a GPU was taken for a GPU, any "
                    "other for an NVSwitch");
  return std::nullopt;
}

}  // namespace

MachineFacts gather_machine_facts(const std::vector<int>& devices) {
  const std::vector<int> ordinals = resolve_devices(devices, visible_device_count());
  std::vector<CudaGpu> gpus;
  for (int d : ordinals) gpus.push_back(cuda_gpu(d));

  MachineFacts facts;
  facts.peers = cuda_peers(ordinals);
  if (auto why_not = add_nvml_facts(gpus, facts.notes)) {
    facts.source = "cuda";
    facts.nvml_unavailable = *why_not;
  } else {
    facts.source = "nvml";
  }
  for (CudaGpu& g : gpus) facts.gpus.push_back(std::move(g.facts));
  return facts;
}

}  // namespace canopy
