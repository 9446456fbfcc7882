// The real NCCL, for what Canopy does not serve: found and opened once, on first need, by the one loader of the real
// NCCL (runtime/cuda/nccl_loader.hpp: CANOPY_NCCL_LIBRARY when set, only that path; else a libnccl.so* the process
// has already loaded (torch preloads its nvidia-nccl wheel's); else the wheel beside a loaded libtorch_cuda.so or in
// the usual site-packages folders; else libnccl.so.2 in LD_LIBRARY_PATH's folders and the system's and CUDA toolkit's
// library folders. Never by the bare name, and never this library itself, nor another copy of it: both export
// ncclCanopyOwnLibrary). It is bound plainly, so its calls to its own exported functions reach this library, which
// hands their untagged handles back to the real NCCL's own definitions (nccl_loader.hpp says why not RTLD_DEEPBIND).
// The whole API is forwarded by name: real_nccl<F>("ncclXxx") is the table.
#pragma once

#include <string>

namespace canopy::nccl_api {

// The real NCCL's `name`, or nullptr when it is not loaded (real_nccl_why_not says why) or lacks it.
void* real_nccl_symbol(const char* name);
template <class F>
F real_nccl(const char* name) {
  return reinterpret_cast<F>(real_nccl_symbol(name));
}
bool real_nccl_loaded();         // tries to load it (once) and says whether it is there
std::string real_nccl_path();    // "" when not loaded
std::string real_nccl_why_not(); // why it could not be loaded ("" when it is)
// Whether `return_address` (a caller's __builtin_return_address(0)) lies in the real NCCL: its internal calls to its
// own exported names (ncclCommInitAll calls ncclGetUniqueId, ...) land in this library, which must then answer as
// the real NCCL would, by calling its definition.
bool called_by_real_nccl(const void* return_address);

}  // namespace canopy::nccl_api
