// MachineTuning: what `canopy tune` chose for this machine, as a communicator reads it once at creation: its key in
// tuning.json (sha256 of the topology's canonical text), the file beside the kernel cache, the chunk a call of a size
// takes and the protocol limits of a collective. Empty (no file) where nothing is tuned, as across hosts: no chunk,
// no limits.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "core/collective.hpp"
#include "core/data_type.hpp"
#include "core/logger.hpp"
#include "topology/topology.hpp"
#include "runtime/protocol/protocol_choice.hpp"
#include "runtime/tune/tuning_file.hpp"

namespace canopy {

class MachineTuning {
 public:
  // Reads the tuning file of `cache_directory` for `topology`; the log says where tuned chunks come from unless
  // `chunk_fixed` (CANOPY_CHUNK or CommunicatorOptions::chunk_bytes: tuning does not apply).
  void read(const Topology& topology, const std::filesystem::path& cache_directory, bool chunk_fixed,
            const Logger& log);
  const std::string& machine_key() const { return machine_; }
  const std::filesystem::path& path() const { return path_; }
  // The chunk tuning.json holds for a call of `collective`, `count` and `dtype` over `ranks` ranks; 0: none, or
  // `chunk_fixed`.
  std::int64_t chunk(bool chunk_fixed, Collective collective, std::uint64_t count, DataType dtype, int ranks) const;
  // The protocol limits tuning.json holds for `collective` on this machine, if any.
  std::optional<ProtocolLimits> limits(Collective collective) const;

 private:
  std::string machine_;
  std::filesystem::path path_;
  std::unique_ptr<TuningFile> file_;
};

}  // namespace canopy
