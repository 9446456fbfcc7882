// Where the real NCCL may be, for the one loader that opens it (nccl_loader.hpp: for the runtime between hosts and
// libcanopy_nccl.so's forwarding), and NCCL's enum values of Canopy's types (for those and the bench's comparison):
// one list, one mapping.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/data_type.hpp"

namespace canopy {

// The libnccl.so.2 files to try, in order (CANOPY_NCCL_LIBRARY aside, which the loader reads first): objects named
// libnccl.so* already loaded, the nvidia-nccl wheel beside a loaded libtorch_cuda.so, the wheel in Python's
// site-packages and dist-packages (the virtual environment's, the user's, /usr/local/lib's, /usr/lib's), each
// LD_LIBRARY_PATH folder, then the system's library folders and the CUDA toolkit's. Some may not exist.
std::vector<std::filesystem::path> nccl_library_candidates();

// The path with every link resolved; empty when it does not exist.
std::string canonical_or_empty(const std::filesystem::path& path);

// ncclDataType_t and ncclRedOp_t values (nccl.h of NCCL 2.24 and later: fp8 types 10 and 11; ncclAvg 4).
int nccl_data_type(DataType dtype);
int nccl_reduce_op(ReduceOp op);

}  // namespace canopy
