// LibraryChoices: which library serves each (collective, type, size bucket) of one machine through libcanopy_nccl.so,
// as `canopy tune --vs-nccl` measured and recorded it in tuning.json ("libraries"): Canopy's kernels or the real NCCL
// communicator beside Canopy's. Untuned sizes take Canopy's kernels. The NCCL library reads it once at init, agrees on
// it across ranks by its digest (every rank must make the same choice, or a collective would run half on each), and
// asks it per call. Pure, tested on any CPU.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <tuple>

#include "core/collective.hpp"
#include "core/data_type.hpp"
#include "runtime/tune/tuning_file.hpp"

namespace canopy {

// What `canopy tune --vs-nccl` records for one size from both libraries' rounds (median, min, max each): the real
// NCCL where its median time is below Canopy's, else Canopy (a tie stays with Canopy's kernels).
LibraryEntry library_entry(const std::string& topology, int rounds, double canopy_us, double canopy_min_us,
                           double canopy_max_us, double nccl_us, double nccl_min_us, double nccl_max_us,
                           const std::string& nccl_version);

class LibraryChoices {
 public:
  LibraryChoices() = default;
  // The choices `file` holds for `machine` (Communicator::machine_key()).
  LibraryChoices(const TuningFile& file, const std::string& machine);

  // The recorded choice for a call of `collective` and `dtype` whose nccl-tests size S is `bytes` (its bucket's);
  // null: untuned, so Canopy's kernels.
  const LibraryEntry* find(Collective collective, DataType dtype, std::uint64_t bytes) const;
  bool empty() const { return by_key_.empty(); }
  int nccl_count() const;  // how many buckets the real NCCL serves
  // A digest of every choice (the same on ranks that read the same choices; "" when empty).
  std::string digest() const;
  const std::filesystem::path& source() const { return source_; }

  // "tuning.json (PATH) chose the real NCCL for allreduce f32 [1M, 2M): 9.80 us (9.60–10.10) against Canopy's 10.40 us
  // (10.20–10.90), 5 rounds, NCCL 2.28.9": what CANOPY_LOG=info says of a call served by its choice.
  std::string describe(Collective collective, DataType dtype, std::uint64_t bytes, const LibraryEntry& e) const;

 private:
  std::filesystem::path source_;
  std::map<std::tuple<Collective, DataType, std::uint64_t>, LibraryEntry> by_key_;
};

}  // namespace canopy
