// RelayScratch (see relay_scratch.hpp).
#include "runtime/local/relay_scratch.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "core/byte_size.hpp"
#include "core/error.hpp"
#include "runtime/cuda/gpu_devices.hpp"

namespace canopy {

std::vector<std::int64_t> relay_bytes_needed(const std::vector<RelayRing>& rings, int relays) {
  std::vector<std::int64_t> need(relays, 0);
  for (const RelayRing& ring : rings)
    need[ring.relay] = std::max(need[ring.relay], ring.offset + ring.bytes);
  return need;
}

RelayScratch::RelayScratch(std::vector<std::string> names, std::vector<int> ordinals, std::int64_t cap, Logger log)
    : names_(std::move(names)),
      ordinals_(std::move(ordinals)),
      cap_(cap),
      log_(std::move(log)),
      areas_(names_.size(), nullptr),
      bytes_(names_.size(), 0) {}

RelayScratch::~RelayScratch() {
  CurrentDevice keep;
  for (std::size_t k = 0; k < areas_.size(); ++k)
    if (areas_[k] && cudaSetDevice(ordinals_[k]) == cudaSuccess) (void)cudaFree(areas_[k]);
  for (const auto& [ordinal, area] : retired_)
    if (cudaSetDevice(ordinal) == cudaSuccess) (void)cudaFree(area);
  (void)cudaGetLastError();
}

bool RelayScratch::short_for(const PreparedCollective& p) const {
  const std::vector<std::int64_t> need = relay_bytes_needed(p.relay_rings, static_cast<int>(names_.size()));
  for (std::size_t k = 0; k < need.size(); ++k)
    if (need[k] > bytes_[k]) return true;
  return false;
}

void RelayScratch::grow_for(const PreparedCollective& p, bool keep_old) {
  const std::vector<std::int64_t> need = relay_bytes_needed(p.relay_rings, static_cast<int>(names_.size()));
  CurrentDevice keep;
  for (std::size_t k = 0; k < need.size(); ++k) {
    if (need[k] <= bytes_[k]) continue;
    if (need[k] > cap_)
      throw Error(fmt::format("relay {} would need {} for the rings of {}, over its cap {} (relay_memory, "
                              "CANOPY_RELAY_MEMORY): raise the cap",
                              names_[k], format_byte_size(need[k]), p.built->source.entry, format_byte_size(cap_)));
    if (cudaSetDevice(ordinals_[k]) != cudaSuccess) {
      (void)cudaGetLastError();
      throw Error(fmt::format("relay {}: selecting CUDA device {} failed", names_[k], ordinals_[k]));
    }
    if (areas_[k]) {
      if (keep_old)
        retired_.emplace_back(ordinals_[k], areas_[k]);
      else
        (void)cudaFree(areas_[k]);
      areas_[k] = nullptr;
      bytes_[k] = 0;
    }
    void* area = nullptr;
    if (const cudaError_t e = cudaMalloc(&area, static_cast<std::size_t>(need[k])); e != cudaSuccess) {
      (void)cudaGetLastError();
      throw Error(fmt::format("relay {}: allocating {} for its rings on CUDA device {} failed: {}", names_[k],
                              format_byte_size(need[k]), ordinals_[k], cudaGetErrorString(e)));
    }
    areas_[k] = area;
    bytes_[k] = need[k];
    log_.info(LogSubsys::init, fmt::format("relay {}: rings grown to {} on CUDA device {} (cap {})", names_[k],
                                           format_byte_size(need[k]), ordinals_[k], format_byte_size(cap_)));
  }
}

void RelayScratch::rings_of(const PreparedCollective& p, std::vector<void*>* out) const {
  out->clear();
  for (const RelayRing& ring : p.relay_rings)
    out->push_back(static_cast<unsigned char*>(areas_[ring.relay]) + ring.offset);
}

}  // namespace canopy
