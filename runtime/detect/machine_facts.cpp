// MachineFacts' helpers: P2P lookup, PCI bus id normalization, NVLink generation (see machine_facts.hpp).
#include "runtime/detect/machine_facts.hpp"

#include <fmt/format.h>

#include <charconv>
#include <system_error>

namespace canopy {

std::string to_string(NvlinkRemoteKind kind) {
  switch (kind) {
    case NvlinkRemoteKind::gpu: return "gpu";
    case NvlinkRemoteKind::nvswitch: return "switch";
    case NvlinkRemoteKind::cpu: return "cpu";
    case NvlinkRemoteKind::unknown: break;
  }
  return "unknown";
}

bool MachineFacts::p2p(int a, int b) const {
  const auto n = static_cast<int>(peers.size());
  if (a < 0 || b < 0 || a >= n || b >= n || a == b) return false;
  if (static_cast<int>(peers[a].size()) != n || static_cast<int>(peers[b].size()) != n) return false;
  return peers[a][b].can_access && peers[b][a].can_access;
}

std::string format_pci_bus_id(unsigned domain, unsigned bus, unsigned device, unsigned function) {
  return fmt::format("{:04x}:{:02x}:{:02x}.{:x}", domain, bus, device, function);
}

namespace {

// One hexadecimal field of at most 8 digits.
bool parse_hex(std::string_view word, unsigned& value) {
  if (word.empty() || word.size() > 8) return false;
  const auto [ptr, ec] = std::from_chars(word.data(), word.data() + word.size(), value, 16);
  return ec == std::errc{} && ptr == word.data() + word.size();
}

}  // namespace

std::string normalize_pci_bus_id(std::string_view bus_id) {
  // [domain:]bus:device.function, every field hexadecimal.
  const std::size_t dot = bus_id.rfind('.');
  if (dot == std::string_view::npos) return "";
  unsigned function = 0;
  if (!parse_hex(bus_id.substr(dot + 1), function)) return "";
  std::string_view rest = bus_id.substr(0, dot);
  unsigned fields[3] = {0, 0, 0};
  int count = 0;
  while (true) {
    if (count == 3) return "";
    const std::size_t colon = rest.find(':');
    if (!parse_hex(rest.substr(0, colon), fields[count++])) return "";
    if (colon == std::string_view::npos) break;
    rest.remove_prefix(colon + 1);
  }
  if (count == 2) return format_pci_bus_id(0, fields[0], fields[1], function);
  if (count == 3) return format_pci_bus_id(fields[0], fields[1], fields[2], function);
  return "";
}

int nvlink_generation(unsigned nvml_version, int cc_major) {
  switch (cc_major) {
    case 6: return 1;   // P100
    case 7: return 2;   // V100, Xavier, Turing bridges
    case 8: return 3;   // A100, GA10x bridges
    case 9: return 4;   // H100, H200, GH200
    case 10: return 5;  // B200, GB200, B300
    default: break;
  }
  if (nvml_version == 1 || nvml_version == 2) return static_cast<int>(nvml_version);
  return 0;
}

}  // namespace canopy
