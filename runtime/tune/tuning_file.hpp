// TuningFile: what `canopy tune` chose, remembered in a small JSON file beside the kernel cache (tuning.json), so the
// next process starts tuned: chunk sizes per (machine, collective, element type, size bucket), and protocol limits
// (`canopy tune --protocols`) per (machine, collective). A bucket is the largest power of two not above the call's
// size S (nccl-tests' convention). The machine is the topology's canonical text's digest, so a choice never applies
// to another machine of the same name. Written whole to a temporary file and renamed; a file that cannot be read or
// parsed is reported and treated as empty.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <tuple>

#include "codegen/codegen_options.hpp"
#include "core/collective.hpp"
#include "runtime/protocol/protocol_choice.hpp"

namespace canopy {

struct TuningKey {
  std::string machine;  // sha256 of the topology's canonical text (topology/topo_writer.hpp)
  Collective collective = Collective::allreduce;
  DataType dtype = DataType::f32;
  std::uint64_t bucket_bytes = 0;
  auto operator<=>(const TuningKey&) const = default;
};

struct TuningEntry {
  std::string topology;  // its name, for people reading the file
  std::int64_t chunk_bytes = 0;
  double time_us = 0;    // measured with it
  double default_time_us = 0;  // measured with the chunk the runtime would have used
};

struct ProtocolKey {
  std::string machine;
  Collective collective = Collective::allreduce;
  auto operator<=>(const ProtocolKey&) const = default;
};

struct ProtocolEntry {
  std::string topology;            // its name, for people reading the file
  DataType dtype = DataType::f32;  // measured with
  ProtocolLimits limits;
  double cost = 0;          // protocol_choice.hpp's cost of these limits over the sizes measured
  double untuned_cost = 0;  // and of the untuned choice
};

// Which library serves a call of one (collective, type, size bucket) through libcanopy_nccl.so where a real NCCL
// communicator exists beside Canopy's (`canopy tune --vs-nccl`): the faster one measured on this machine.
enum class Library { canopy, nccl };
const char* to_string(Library library);  // "canopy", "nccl"

struct LibraryEntry {
  std::string topology;  // its name, for people reading the file
  Library library = Library::canopy;
  int rounds = 0;  // each timing both libraries, the first alternating (bench/harness/paired_rounds.hpp)
  double canopy_us = 0, canopy_min_us = 0, canopy_max_us = 0;  // Canopy's median time and its rounds' extremes
  double nccl_us = 0, nccl_min_us = 0, nccl_max_us = 0;        // NCCL's
  std::string nccl_version;                                    // the real NCCL measured
};

// The largest power of two <= bytes (0 for 0).
std::uint64_t tuning_bucket(std::uint64_t bytes);

class TuningFile {
 public:
  // Reads `path` if it exists. `warning`, when given, receives why an unreadable file was ignored.
  explicit TuningFile(std::filesystem::path path, std::string* warning = nullptr);
  // CANOPY_TUNING where set (a tuning file of its own: one per machine kind, say), else tuning.json in
  // `cache_directory`.
  static std::filesystem::path default_path(const std::filesystem::path& cache_directory);

  std::optional<TuningEntry> find(const TuningKey& key) const;
  void set(const TuningKey& key, const TuningEntry& entry);
  std::optional<ProtocolEntry> find(const ProtocolKey& key) const;
  void set(const ProtocolKey& key, const ProtocolEntry& entry);
  void erase(const ProtocolKey& key);
  // Library choices, keyed as chunks are (machine, collective, type, size bucket).
  std::optional<LibraryEntry> find_library(const TuningKey& key) const;
  void set_library(const TuningKey& key, const LibraryEntry& entry);
  // Writes the file (temporary + rename); throws canopy::Error naming the path when it cannot.
  void save() const;

  const std::filesystem::path& path() const { return path_; }
  const std::map<TuningKey, TuningEntry>& entries() const { return entries_; }
  const std::map<ProtocolKey, ProtocolEntry>& protocols() const { return protocols_; }
  const std::map<TuningKey, LibraryEntry>& libraries() const { return libraries_; }

 private:
  std::filesystem::path path_;
  std::map<TuningKey, TuningEntry> entries_;
  std::map<ProtocolKey, ProtocolEntry> protocols_;
  std::map<TuningKey, LibraryEntry> libraries_;
};

}  // namespace canopy
