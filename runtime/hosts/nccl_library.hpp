// NcclLibrary: the real NCCL's functions the inter-host phase of a multi-host communicator calls (a few collectives,
// the rails' init and teardown), a typed table filled through the one loader of the real NCCL
// (runtime/cuda/nccl_loader.hpp: CANOPY_NCCL_LIBRARY when set, that file only, else an NCCL already loaded, beside
// PyTorch's nvidia-nccl wheel, LD_LIBRARY_PATH, the system's library folders; never Canopy's own libcanopy_nccl.so,
// which exports ncclCanopyOwnLibrary). A candidate that lacks one of these functions is passed over. The few types
// of NCCL's C API are declared here (the ABI of nccl.h 2.x), so the runtime builds without nccl.h.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

#include "core/data_type.hpp"
#include "core/status.hpp"
#include "runtime/cuda/nccl_locations.hpp"  // nccl_data_type, nccl_reduce_op

namespace canopy {

class LoadedNccl;

namespace nccl_abi {
using Result = int;  // ncclResult_t: 0 success, 7 in progress
struct UniqueId {
  char internal[128];
};
struct CommOpaque;
using Comm = CommOpaque*;
}  // namespace nccl_abi

struct NcclLibrary {
  const LoadedNccl* library = nullptr;  // the library, as the loader holds it
  std::string path;                     // the file opened
  int version = 0;                      // ncclGetVersion, e.g. 22809
  nccl_abi::Result (*get_unique_id)(nccl_abi::UniqueId*) = nullptr;
  nccl_abi::Result (*comm_init_rank)(nccl_abi::Comm*, int, nccl_abi::UniqueId, int) = nullptr;
  nccl_abi::Result (*all_reduce)(const void*, void*, std::size_t, int, int, nccl_abi::Comm, cudaStream_t) = nullptr;
  nccl_abi::Result (*reduce_scatter)(const void*, void*, std::size_t, int, int, nccl_abi::Comm, cudaStream_t) = nullptr;
  nccl_abi::Result (*all_gather)(const void*, void*, std::size_t, int, nccl_abi::Comm, cudaStream_t) = nullptr;
  nccl_abi::Result (*broadcast)(const void*, void*, std::size_t, int, int, nccl_abi::Comm, cudaStream_t) = nullptr;
  nccl_abi::Result (*reduce)(const void*, void*, std::size_t, int, int, int, nccl_abi::Comm, cudaStream_t) = nullptr;
  nccl_abi::Result (*group_start)() = nullptr;
  nccl_abi::Result (*group_end)() = nullptr;
  nccl_abi::Result (*comm_destroy)(nccl_abi::Comm) = nullptr;
  nccl_abi::Result (*comm_abort)(nccl_abi::Comm) = nullptr;
  const char* (*get_error_string)(nccl_abi::Result) = nullptr;
  nccl_abi::Result (*comm_get_async_error)(nccl_abi::Comm, nccl_abi::Result*) = nullptr;

  // "NCCL call failed: <NCCL's error string> (code N)", for messages.
  std::string error(nccl_abi::Result r) const;
};

// The process's one NcclLibrary (opened at the first call, kept for the process), or an error that names
// CANOPY_NCCL_LIBRARY and where it looked.
Status open_nccl_library(const NcclLibrary** out);

}  // namespace canopy
