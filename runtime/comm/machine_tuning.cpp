// MachineTuning (machine_tuning.hpp): tuning.json read once, then looked up per call size and per collective.
#include "runtime/comm/machine_tuning.hpp"

#include <fmt/format.h>

#include "core/sha256.hpp"
#include "topology/topo_writer.hpp"
#include "runtime/call/collective_call.hpp"

namespace canopy {

void MachineTuning::read(const Topology& topology, const std::filesystem::path& cache_directory, bool chunk_fixed,
                         const Logger& log) {
  machine_ = Sha256().update(write_topo(topology)).hex_digest();
  path_ = TuningFile::default_path(cache_directory);
  std::string warning;
  file_ = std::make_unique<TuningFile>(path_, &warning);
  if (!warning.empty()) log.info(LogSubsys::init, warning);
  if (!chunk_fixed && !file_->entries().empty())
    log.info(LogSubsys::init, fmt::format("tuned chunk sizes from {}", path_.string()));
}

std::int64_t MachineTuning::chunk(bool chunk_fixed, Collective collective, std::uint64_t count, DataType dtype,
                                  int ranks) const {
  if (chunk_fixed || !file_ || file_->entries().empty()) return 0;
  const std::uint64_t bucket = tuning_bucket(size_bytes(collective, count, dtype, ranks));
  const std::optional<TuningEntry> e = file_->find({machine_, collective, dtype, bucket});
  return e ? e->chunk_bytes : 0;
}

std::optional<ProtocolLimits> MachineTuning::limits(Collective collective) const {
  const std::optional<ProtocolEntry> e = file_->find(ProtocolKey{machine_, collective});
  return e ? std::optional(e->limits) : std::nullopt;
}

}  // namespace canopy
