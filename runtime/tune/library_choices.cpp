// LibraryChoices (library_choices.hpp).
#include "runtime/tune/library_choices.hpp"

#include <fmt/format.h>

#include "core/sha256.hpp"
#include "core/byte_size.hpp"

namespace canopy {

LibraryEntry library_entry(const std::string& topology, int rounds, double canopy_us, double canopy_min_us,
                           double canopy_max_us, double nccl_us, double nccl_min_us, double nccl_max_us,
                           const std::string& nccl_version) {
  LibraryEntry e{topology,      Library::canopy, rounds,  canopy_us,  canopy_min_us,
                 canopy_max_us, nccl_us,         nccl_min_us, nccl_max_us, nccl_version};
  e.library = nccl_us > 0 && nccl_us < canopy_us ? Library::nccl : Library::canopy;
  return e;
}

LibraryChoices::LibraryChoices(const TuningFile& file, const std::string& machine) : source_(file.path()) {
  for (const auto& [k, e] : file.libraries())
    if (k.machine == machine) by_key_[{k.collective, k.dtype, k.bucket_bytes}] = e;
}

const LibraryEntry* LibraryChoices::find(Collective collective, DataType dtype, std::uint64_t bytes) const {
  const auto it = by_key_.find({collective, dtype, tuning_bucket(bytes)});
  return it == by_key_.end() ? nullptr : &it->second;
}

int LibraryChoices::nccl_count() const {
  int n = 0;
  for (const auto& [k, e] : by_key_) n += e.library == Library::nccl ? 1 : 0;
  return n;
}

std::string LibraryChoices::digest() const {
  if (by_key_.empty()) return "";
  Sha256 h;
  for (const auto& [k, e] : by_key_)
    h.update(fmt::format("{} {} {} {};", to_string(std::get<0>(k)), to_string(std::get<1>(k)), std::get<2>(k),
                         to_string(e.library)));
  return h.hex_digest();
}

std::string LibraryChoices::describe(Collective collective, DataType dtype, std::uint64_t bytes,
                                     const LibraryEntry& e) const {
  const std::uint64_t bucket = tuning_bucket(bytes);
  return fmt::format("{} ({}) chose {} for {} {} [{}, {}): NCCL {:.2f} us ({:.2f}–{:.2f}) against Canopy's {:.2f} us "
                     "({:.2f}–{:.2f}), {} rounds{}",
                     source_.filename().string(), source_.string(),
                     e.library == Library::nccl ? "the real NCCL" : "Canopy's kernels", to_string(collective),
                     to_string(dtype), format_byte_size(static_cast<std::int64_t>(bucket)),
                     format_byte_size(static_cast<std::int64_t>(2 * bucket)), e.nccl_us, e.nccl_min_us,
                     e.nccl_max_us, e.canopy_us, e.canopy_min_us, e.canopy_max_us, e.rounds,
                     e.nccl_version.empty() ? "" : ", NCCL " + e.nccl_version);
}

}  // namespace canopy
