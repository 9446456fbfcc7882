// NCCL's element types and reduction operators as Canopy names them: which ncclDataType_t and ncclRedOp_t Canopy's
// kernels serve, and their names for messages.
#pragma once

#include <nccl.h>

#include <cstddef>
#include <optional>
#include <string>

#include "core/data_type.hpp"

namespace canopy::nccl_api {

// Whether `t` is one of nccl.h's ncclDataType_t values (0 .. ncclNumTypes - 1).
bool is_nccl_type(ncclDataType_t t);
// Bytes per element of a valid ncclDataType_t.
std::size_t nccl_type_size(ncclDataType_t t);
// "ncclFloat32", or "ncclDataType_t 42" for a value nccl.h does not define.
std::string nccl_type_name(ncclDataType_t t);
// The Canopy type of `t` (every type of the nccl.h built against has one), or nullopt for a value it does not know.
std::optional<DataType> canopy_type(ncclDataType_t t);
// The Canopy operator for a built-in ncclRedOp_t (sum, prod, max, min, avg), else nullopt.
std::optional<ReduceOp> canopy_op(ncclRedOp_t op);
std::string nccl_op_name(ncclRedOp_t op);  // "ncclSum", or "ncclRedOp_t 7"

}  // namespace canopy::nccl_api
