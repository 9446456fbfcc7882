// libFuzzer target for NCCL topology XML import (canopy topo import): any bytes must give a Topology or a
// canopy::Error, never a crash, hang or sanitizer report; what is accepted must be valid and survive its own .topo
// text (comments included) -> read_topo unchanged.
#include <cstdint>
#include <string_view>

#include "core/error.hpp"
#include "topology/nccl_topo_import.hpp"
#include "topology/topo_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const canopy::NcclImport r = canopy::import_nccl_topology(text, "fuzz.xml");
    r.topology.validate();
    const std::string written = canopy::nccl_import_text(r, "fuzz.xml");
    if (!(canopy::read_topo(written, "written.topo") == r.topology)) __builtin_trap();  // round-trip must hold
  } catch (const canopy::Error&) {
    // rejected input: fine
  }
  return 0;
}
