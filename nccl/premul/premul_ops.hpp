// PreMulOps: the PreMulSum operators ncclRedOpCreatePreMulSum made for one rank of a communicator, as NCCL keeps them:
// each is an ncclRedOp_t from ncclNumOps up, carrying its element type and its scalar (a value copied at creation for
// ncclScalarHostImmediate, a device address read by the kernel for ncclScalarDevice); ncclRedOpDestroy frees its
// value for reuse. Each rank may have its own scalar: result = sum over ranks of scalar_r * x_r. Pure bookkeeping,
// tested on any CPU.
#pragma once

#include <nccl.h>

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "nccl/base/rank_call.hpp"  // PreMulScalar

namespace canopy::nccl_api {

struct PreMulOp {
  ncclDataType_t datatype = ncclFloat32;
  ncclScalarResidence_t residence = ncclScalarHostImmediate;
  PreMulScalar scalar;
  ncclRedOp_t real = ncclNumOps;  // the same operator on the real NCCL communicator, when made there too
};

class PreMulOps {
 public:
  // A new operator (the lowest free value from ncclNumOps); ncclInvalidArgument with the last error naming `who`
  // (the call and communicator) for a NULL scalar, a type that is not an ncclDataType_t, or a residence that is
  // neither ncclScalarDevice nor ncclScalarHostImmediate. `type_size`: bytes of one element of `datatype`.
  ncclResult_t create(ncclRedOp_t* op, const void* scalar, ncclDataType_t datatype, ncclScalarResidence_t residence,
                      std::size_t type_size, const std::string& who);
  // Frees `op`; ncclInvalidArgument when it is a built-in operator or not a live one of this rank.
  ncclResult_t destroy(ncclRedOp_t op, const std::string& who);
  // The live operator `op`, else nullopt.
  std::optional<PreMulOp> find(ncclRedOp_t op) const;
  // Records the real NCCL's operator made beside `op`.
  void set_real(ncclRedOp_t op, ncclRedOp_t real);
  int live() const;  // how many are live

 private:
  mutable std::mutex mutex_;
  std::vector<std::optional<PreMulOp>> ops_;  // index = op - ncclNumOps
};

}  // namespace canopy::nccl_api
