// NCCL's figures for the parts of a machine its topology XML names (src/graph/topo.h, topo.cc and xml.h of
// NVIDIA/nccl, restated here): PCI classes, PCIe lane rates, NVLink per-lane bandwidth by architecture, the
// bandwidth between CPU sockets by vendor and model, Broadcom switch generations, bus-id numbers. Pure functions,
// GB/s (1e9 bytes/s) per direction, as NCCL counts them (effective figures, below the raw signalling rates of
// topology/topology.hpp). topology/nccl_topo_import.cpp uses them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace canopy::nccl_topo {

// NCCL's LOC_BW: links it treats as free (a NIC on its CPU, a <pcilink> between switches).
inline constexpr double kLocGbps = 5000.0;

// What a <pci class="..."> is, by NCCL's prefix dictionary: 0x060400 and 0x080100 PCI switch, 0x068000 NVSwitch,
// 0x068001 CPU (an NVLink to the CPU), 0x03.. GPU, 0x02.. NIC, anything else a PCI switch.
enum class PciClass { pci_switch, nvswitch, cpu, gpu, nic };
PciClass pci_class(std::string_view cls);

// A link_speed such as "16.0 GT/s PCIe" or "8 GT/s" as NCCL's per-lane rate in units of 100 Mb/s (2.5 GT/s 15,
// 5 30, 8 60, 16 120, 32 240, 64 480); nullopt when NCCL does not know it (it then takes 60, gen3).
std::optional<int> pcie_lane_rate(std::string_view link_speed);
inline constexpr int kDefaultLaneRate = 60;
// The PCIe generation of a lane rate (15 -> 1 ... 480 -> 6).
int pcie_generation(int lane_rate);
// NCCL's PCIe link bandwidth: width (0 counts as 16) x lane rate / 80, GB/s.
double pcie_gbps(int width, int lane_rate);

// NCCL's NVLink bandwidth per lane for a GPU of this architecture (sm 60 18, 70 and 80 20, 86 12, 90 20.6,
// 100 40.1 GB/s; unknown: 20) and the .topo kind of its lanes (nvlink1 .. nvlink5).
double nvlink_lane_gbps(int sm);
std::string nvlink_kind(int sm);

// A <cpu> element's arch, vendor, familyid and modelid.
struct CpuType {
  std::string arch;    // "x86_64", "arm64", "ppc64"
  std::string vendor;  // "GenuineIntel", "AuthenticAMD", "CentaurHauls", "  Shanghai  "
  int family = -1;
  int model = -1;
};
// NCCL's bandwidth from this CPU socket to another of the same host (ncclTopoGetInterCpuBw): Intel by model
// (Broadwell and older 6, Skylake 10, Sapphire Rapids 22, Emerald Rapids and later 40), AMD 16, Zhaoxin 6 (Yongfeng
// 9), POWER 32, Arm 6, anything else 5000 (NCCL's LOC_BW).
double inter_cpu_gbps(const CpuType& cpu);
// The .topo kind of that link: qpi (Intel), xgmi (AMD), zpi (Zhaoxin), sys otherwise.
std::string inter_cpu_kind(const CpuType& cpu);
// "AMD x86_64, NCCL's AMD_BW", "Intel Skylake class (NCCL's SKL_QPI_BW)": how the figure was chosen, for notes.
std::string cpu_description(const CpuType& cpu);

// NCCL's busIdToInt64: the hex digits of "0000:18:00.0" up to the first other character ('.' and ':' skipped),
// at most 16; nullopt when there is none.
std::optional<std::int64_t> bus_id_value(std::string_view bus_id);

// NCCL's Broadcom PEX switch generation (4 or 5) of a PCI device id (vendor << 48 | device << 32 |
// subsystem_vendor << 16 | subsystem_device) at hierarchy level 0 or 1, or 0: such two-level switches are flattened.
int bcm_generation(std::uint64_t device, int level);

// An integer as NCCL's strtol(.., 0) reads attribute values, but whole: decimal or 0x-hex, optional sign; nullopt
// for anything else (an empty value included).
std::optional<long long> parse_integer(std::string_view text);

}  // namespace canopy::nccl_topo
