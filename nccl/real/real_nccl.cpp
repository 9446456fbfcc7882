// The real NCCL, opened once through the loader (real_nccl.hpp).
#include "nccl/real/real_nccl.hpp"

#include <mutex>

#include "nccl/real/loaded_segments.hpp"
#include "runtime/cuda/nccl_loader.hpp"

namespace canopy::nccl_api {

namespace {

struct RealNccl {
  const LoadedNccl* library = nullptr;
  std::string why_not;
};

// Any real NCCL will do: a function it lacks is reported when called (forward.hpp).
const RealNccl& real() {
  static std::once_flag once;
  static RealNccl r;
  std::call_once(once, [] { r.library = find_real_nccl(any_nccl, &r.why_not); });
  return r;
}

}  // namespace

void* real_nccl_symbol(const char* name) {
  const RealNccl& r = real();
  return r.library ? r.library->symbol(name) : nullptr;
}
bool real_nccl_loaded() { return real().library != nullptr; }
bool called_by_real_nccl(const void* return_address) {
  // Where the real NCCL lies, once it is loaded (it stays: a loaded real NCCL is never closed).
  static const LoadedSegments real_nccl = LoadedSegments::of_object_holding(real_nccl_symbol("ncclGetVersion"));
  return real_nccl.contains(return_address);
}
std::string real_nccl_path() { return real().library ? real().library->path() : std::string(); }
std::string real_nccl_why_not() { return real().why_not; }

}  // namespace canopy::nccl_api
