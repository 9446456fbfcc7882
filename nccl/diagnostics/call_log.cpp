// The NCCL API's CANOPY_LOG=info texts (call_log.hpp).
#include "nccl/diagnostics/call_log.hpp"

#include <fmt/format.h>

#include "nccl/base/nccl_types.hpp"

namespace canopy::nccl_api {

namespace {

// 1, 4, 16, 64, 256, 1K, 4K, ... (every power of 4 is a whole number of its unit).
std::string bytes_text(std::uint64_t b) {
  const char* units[] = {"", "K", "M", "G", "T", "P", "E"};
  int u = 0;
  while (b >= 1024 && b % 1024 == 0 && u < 6) b /= 1024, ++u;
  return fmt::format("{}{}", b, units[u]);
}

}  // namespace

std::string size_class(std::uint64_t bytes) {
  if (bytes == 0) return "0 B";
  int k = 0;
  while (k < 31 && (std::uint64_t{1} << (2 * (k + 1))) <= bytes) ++k;
  const std::uint64_t low = std::uint64_t{1} << (2 * k);
  if (k == 31) return fmt::format("[{}, 16E]", bytes_text(low));
  return fmt::format("[{}, {})", bytes_text(low), bytes_text(low * 4));
}

std::string choice_text(const Communicator::Choice& c) {
  switch (c.protocol) {
    case Protocol::low_latency: return c.two_shot ? "LL two-shot" : "LL";
    case Protocol::ll128: return "LL128";
    case Protocol::direct: return c.two_shot ? "direct two-shot" : "direct";
    case Protocol::planned: break;
  }
  if (c.copy_engine) return "copy engines";
  if (c.trees < 0) return "planned trees";
  return fmt::format("planned trees ({} tree{})", c.trees, c.trees == 1 ? "" : "s");
}

std::string call_log_line(const std::string& function, ncclDataType_t datatype, std::uint64_t bytes, int rank,
                          int nranks, const std::string& outcome) {
  if (static_cast<int>(datatype) < 0 || static_cast<int>(datatype) >= ncclNumTypes)  // a call without a type
    return fmt::format("nccl: {} (rank {} of {}): {}", function, rank, nranks, outcome);
  return fmt::format("nccl: {} {} {} (rank {} of {}): {}", function, nccl_type_name(datatype), size_class(bytes), rank,
                     nranks, outcome);
}

}  // namespace canopy::nccl_api
