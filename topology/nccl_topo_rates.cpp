// NCCL's figures (nccl_topo_rates.hpp), restated from src/graph/topo.h and topo.cc of NVIDIA/nccl.
#include "topology/nccl_topo_rates.hpp"

#include <cctype>
#include <charconv>
#include <utility>

namespace canopy::nccl_topo {

PciClass pci_class(std::string_view cls) {
  // NCCL matches each key as a prefix of the class, in this order.
  static const std::pair<std::string_view, PciClass> kClasses[] = {
      {"0x060400", PciClass::pci_switch}, {"0x080100", PciClass::pci_switch}, {"0x068000", PciClass::nvswitch},
      {"0x068001", PciClass::cpu},        {"0x03", PciClass::gpu},            {"0x02", PciClass::nic}};
  for (const auto& [key, value] : kClasses)
    if (cls.substr(0, key.size()) == key) return value;
  return PciClass::pci_switch;
}

std::optional<int> pcie_lane_rate(std::string_view link_speed) {
  static const std::pair<std::string_view, int> kSpeeds[] = {
      {"2.5 GT/s", 15},        {"5 GT/s", 30},           {"8 GT/s", 60},           {"16 GT/s", 120},
      {"32 GT/s", 240},        {"2.5 GT/s PCIe", 15},    {"5.0 GT/s PCIe", 30},    {"8.0 GT/s PCIe", 60},
      {"16.0 GT/s PCIe", 120}, {"32.0 GT/s PCIe", 240}, {"64.0 GT/s PCIe", 480}};
  for (const auto& [key, value] : kSpeeds)
    if (link_speed.substr(0, key.size()) == key) return value;
  return std::nullopt;
}

int pcie_generation(int lane_rate) {
  return lane_rate >= 480 ? 6 : lane_rate >= 240 ? 5 : lane_rate >= 120 ? 4 : lane_rate >= 60 ? 3 : lane_rate >= 30 ? 2 : 1;
}

double pcie_gbps(int width, int lane_rate) { return (width == 0 ? 16 : width) * lane_rate / 80.0; }

double nvlink_lane_gbps(int sm) {
  return sm >= 100 ? 40.1 : sm >= 90 ? 20.6 : sm == 86 ? 12.0 : sm >= 80 ? 20.0 : sm >= 70 ? 20.0 : sm >= 60 ? 18.0 : 20.0;
}

std::string nvlink_kind(int sm) {
  return sm >= 100 ? "nvlink5" : sm >= 90 ? "nvlink4" : sm >= 80 ? "nvlink3" : sm >= 70 ? "nvlink2" : sm >= 60 ? "nvlink1"
                                                                                                    : "nvlink";
}

namespace {

enum class Arch { unknown, x86, power, arm };
enum class Vendor { unknown, intel, amd, zhaoxin };

Arch arch_of(const CpuType& cpu) {
  // NCCL's dictionaries match prefixes too.
  if (cpu.arch.rfind("x86_64", 0) == 0) return Arch::x86;
  if (cpu.arch.rfind("arm64", 0) == 0) return Arch::arm;
  if (cpu.arch.rfind("ppc64", 0) == 0) return Arch::power;
  return Arch::unknown;
}

Vendor vendor_of(const CpuType& cpu) {
  if (cpu.vendor.rfind("GenuineIntel", 0) == 0) return Vendor::intel;
  if (cpu.vendor.rfind("AuthenticAMD", 0) == 0) return Vendor::amd;
  if (cpu.vendor.rfind("CentaurHauls", 0) == 0 || cpu.vendor.rfind("  Shanghai  ", 0) == 0) return Vendor::zhaoxin;
  return Vendor::unknown;
}

struct InterCpu {
  double gbps;
  const char* why;
};

InterCpu inter_cpu(const CpuType& cpu) {
  const Arch arch = arch_of(cpu);
  if (arch == Arch::power) return {32.0, "POWER (NCCL's P9_BW)"};
  if (arch == Arch::arm) return {6.0, "Arm (NCCL's ARM_BW)"};
  if (arch == Arch::x86) {
    switch (vendor_of(cpu)) {
      case Vendor::intel:
        if (cpu.family == 6 && cpu.model >= 0xCF) return {40.0, "Intel Emerald Rapids class (NCCL's ERP_QPI_BW)"};
        if (cpu.family == 6 && cpu.model >= 0x8F) return {22.0, "Intel Sapphire Rapids class (NCCL's SRP_QPI_BW)"};
        if (cpu.family == 6 && cpu.model >= 0x55) return {10.0, "Intel Skylake class (NCCL's SKL_QPI_BW)"};
        return {6.0, "Intel Broadwell class (NCCL's BDW_QPI_BW)"};
      case Vendor::amd: return {16.0, "AMD (NCCL's AMD_BW)"};
      case Vendor::zhaoxin:
        if (cpu.family == 7 && cpu.model == 0x5B) return {9.0, "Zhaoxin Yongfeng (NCCL's YONGFENG_ZPI_BW)"};
        return {6.0, "Zhaoxin (NCCL's ZPI_BW)"};
      case Vendor::unknown: break;
    }
  }
  return {kLocGbps, "an unknown CPU (NCCL's LOC_BW)"};
}

}  // namespace

double inter_cpu_gbps(const CpuType& cpu) { return inter_cpu(cpu).gbps; }

std::string inter_cpu_kind(const CpuType& cpu) {
  if (arch_of(cpu) != Arch::x86) return "sys";
  switch (vendor_of(cpu)) {
    case Vendor::intel: return "qpi";
    case Vendor::amd: return "xgmi";
    case Vendor::zhaoxin: return "zpi";
    case Vendor::unknown: break;
  }
  return "sys";
}

std::string cpu_description(const CpuType& cpu) { return inter_cpu(cpu).why; }

std::optional<std::int64_t> bus_id_value(std::string_view bus_id) {
  std::uint64_t value = 0;
  int digits = 0;
  for (const char c : bus_id) {
    if (c == '.' || c == ':') continue;
    if (!std::isxdigit(static_cast<unsigned char>(c)) || digits == 16) break;
    value = value * 16 + static_cast<std::uint64_t>(std::isdigit(static_cast<unsigned char>(c))
                                                        ? c - '0'
                                                        : std::tolower(static_cast<unsigned char>(c)) - 'a' + 10);
    ++digits;
  }
  if (digits == 0) return std::nullopt;
  return static_cast<std::int64_t>(value);
}

int bcm_generation(std::uint64_t device, int level) {
  if ((device & 0xfffffffffffff000ULL) == 0x1000c0101000a000ULL) return 4;
  if ((device & 0xfffffffffffff000ULL) == (0x1000c03010000000ULL | static_cast<std::uint64_t>(level) * 0x1000)) return 5;
  return 0;
}

std::optional<long long> parse_integer(std::string_view text) {
  bool negative = false;
  if (!text.empty() && (text[0] == '-' || text[0] == '+')) negative = text[0] == '-', text.remove_prefix(1);
  int base = 10;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) base = 16, text.remove_prefix(2);
  long long value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, base);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return negative ? -value : value;
}

}  // namespace canopy::nccl_topo
