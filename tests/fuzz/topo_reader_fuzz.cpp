// libFuzzer target for the .topo reader: any bytes must give a Topology or a canopy::Error, never a crash, hang,
// sanitizer report or InternalError; whatever is accepted must survive write -> read unchanged and be drawable.
#include <cstdint>
#include <string_view>

#include "core/error.hpp"
#include "topology/topo_reader.hpp"
#include "topology/topo_writer.hpp"
#include "topology/topology_dot.hpp"
#include "topology/topology_table.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const canopy::Topology t = canopy::read_topo(text, "fuzz.topo");
    const std::string written = canopy::write_topo(t);
    if (!(canopy::read_topo(written, "written.topo") == t)) __builtin_trap();  // round-trip must hold
    (void)canopy::topology_dot(t);
    (void)canopy::describe_topology(t);
  } catch (const canopy::Error&) {
    // rejected input: fine
  }
  return 0;
}
