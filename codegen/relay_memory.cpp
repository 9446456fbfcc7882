// Relay memory and its cap (see relay_memory.hpp).
#include "codegen/relay_memory.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#include "codegen/lower.hpp"
#include "core/byte_size.hpp"
#include "core/error.hpp"

namespace canopy {

std::map<std::string, std::int64_t> relay_memory(const Schedule& s) {
  std::map<std::string, std::int64_t> bytes;
  for (int r = s.ranks; r < s.participants(); ++r) bytes[s.relays[r - s.ranks].gpu] += s.resources[r].scratch_bytes;
  return bytes;
}

std::int64_t relay_memory_cap_from_environment() {
  const char* text = std::getenv("CANOPY_RELAY_MEMORY");
  if (!text || !*text) return kDefaultRelayMemoryBytes;
  std::int64_t cap = 0;
  try {
    cap = parse_byte_size(text, "CANOPY_RELAY_MEMORY");
  } catch (const Error& e) {
    throw Error(
        fmt::format("{} (the memory each relay GPU may give the rings it forwards through, e.g. 64MiB)", e.what()));
  }
  if (cap < (1ll << 20))
    throw Error(
        fmt::format("CANOPY_RELAY_MEMORY={}: give each relay GPU at least 1 MiB for its rings (e.g. 64MiB)", text));
  return cap;
}

CodegenOptions fit_relay_memory(const Plan& plan, CodegenOptions o, std::int64_t cap) {
  if (o.relay_gpus.empty()) return o;
  const std::int64_t least_chunk = std::min<std::int64_t>(o.chunk_bytes, 16 * 1024);
  for (;;) {
    const Schedule s = lower(plan, o);
    std::string over;
    std::int64_t most = 0;
    for (const auto& [gpu, bytes] : relay_memory(s))
      if (bytes > cap && bytes > most) over = gpu, most = bytes;
    if (over.empty()) return o;
    if (o.fifo_depth > 2) {
      o.fifo_depth = std::max(2, o.fifo_depth / 2);
    } else if (o.chunk_bytes / 2 >= least_chunk && (o.chunk_bytes / 2) % 16 == 0 &&
               (o.chunk_bytes / 2) % size_of(o.dtype) == 0) {
      o.chunk_bytes /= 2;
    } else {
      throw Error(
          fmt::format("relay {} needs {} for its rings even at {} chunks and {} slots ({} blocks a rank), over "
                      "CANOPY_RELAY_MEMORY={}: raise the cap, or give fewer blocks (CANOPY_BLOCKS)",
                      over, format_byte_size(most), format_byte_size(o.chunk_bytes), o.fifo_depth, o.blocks_per_rank,
                      format_byte_size(cap)));
    }
  }
}

}  // namespace canopy
