// LoadedSegments: the address ranges a loaded shared object's PT_LOAD segments occupy, found once with
// dl_iterate_phdr, so "does this return address lie in that object?" is a few compares. called_by_real_nccl asks it on
// every ncclGroupStart/End; dladdr, which it used before, scans the caller's symbol table and cost ~15 µs a call under
// nccl-tests -g 2 (2026-11-27: 42 µs an iteration against the real NCCL's 15) and more in a caller as large as
// libtorch_cuda.so.
#pragma once

#include <cstdint>
#include <vector>

namespace canopy::nccl_api {

class LoadedSegments {
 public:
  // The segments of the loaded object one of whose segments holds `address` (a function of it); none when `address`
  // is null or in no loaded object.
  static LoadedSegments of_object_holding(const void* address);

  bool contains(const void* address) const;
  bool empty() const { return ranges_.empty(); }

 private:
  struct Range {
    std::uintptr_t begin = 0, end = 0;  // [begin, end)
  };
  std::vector<Range> ranges_;
};

}  // namespace canopy::nccl_api
