// RankCall: one rank's part of a served collective, as its ncclXxx call gave it (already checked and mapped to
// Canopy's DataType and ReduceOp; a PreMulSum operator becomes sum with
// this rank's scalar). SharedComm matches the parts of every rank it holds and runs them as one call.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdint>

#include "core/collective.hpp"
#include "core/data_type.hpp"

namespace canopy::nccl_api {

// A PreMulSum operator's scalar, as the scale kernel takes it (premul_ops.hpp keeps the operators).
struct PreMulScalar {
  const void* device = nullptr;  // ncclScalarDevice: read at run time
  std::uint64_t host = 0;        // ncclScalarHostImmediate: the value's bytes (of the operator's type), low first
};

struct RankCall {
  const char* function = "";  // "ncclAllReduce", for messages
  Collective collective = Collective::allreduce;
  const void* send = nullptr;
  void* recv = nullptr;
  std::uint64_t count = 0;  // NCCL's count (allgather: per rank sent; reduce-scatter: per rank received)
  DataType dtype = DataType::f32;
  ReduceOp op = ReduceOp::sum;
  int root = 0;
  cudaStream_t stream = nullptr;
  ncclDataType_t datatype = ncclFloat32;  // as the caller named it (logs)
  bool premul = false;                    // a PreMulSum operator: the input is scaled by `scalar`, then summed
  PreMulScalar scalar;
};

}  // namespace canopy::nccl_api
