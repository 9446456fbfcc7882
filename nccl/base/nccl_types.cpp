// ncclDataType_t and ncclRedOp_t against Canopy's DataType and ReduceOp (nccl_types.hpp).
#include "nccl/base/nccl_types.hpp"

#include <fmt/format.h>

namespace canopy::nccl_api {

bool is_nccl_type(ncclDataType_t t) { return static_cast<int>(t) >= 0 && static_cast<int>(t) < ncclNumTypes; }

std::size_t nccl_type_size(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: case ncclUint8: case ncclFloat8e4m3: case ncclFloat8e5m2: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
    default: return 0;
  }
}

std::string nccl_type_name(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: return "ncclInt8";
    case ncclUint8: return "ncclUint8";
    case ncclInt32: return "ncclInt32";
    case ncclUint32: return "ncclUint32";
    case ncclInt64: return "ncclInt64";
    case ncclUint64: return "ncclUint64";
    case ncclFloat16: return "ncclFloat16";
    case ncclFloat32: return "ncclFloat32";
    case ncclFloat64: return "ncclFloat64";
    case ncclBfloat16: return "ncclBfloat16";
    case ncclFloat8e4m3: return "ncclFloat8e4m3";
    case ncclFloat8e5m2: return "ncclFloat8e5m2";
    default: return fmt::format("ncclDataType_t {}", static_cast<int>(t));
  }
}

std::optional<DataType> canopy_type(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: return DataType::i8;
    case ncclUint8: return DataType::u8;
    case ncclInt32: return DataType::i32;
    case ncclUint32: return DataType::u32;
    case ncclInt64: return DataType::i64;
    case ncclUint64: return DataType::u64;
    case ncclFloat16: return DataType::f16;
    case ncclFloat32: return DataType::f32;
    case ncclFloat64: return DataType::f64;
    case ncclBfloat16: return DataType::bf16;
    case ncclFloat8e4m3: return DataType::f8e4m3;
    case ncclFloat8e5m2: return DataType::f8e5m2;
    default: return std::nullopt;
  }
}

std::optional<ReduceOp> canopy_op(ncclRedOp_t op) {
  switch (op) {
    case ncclSum: return ReduceOp::sum;
    case ncclProd: return ReduceOp::prod;
    case ncclMax: return ReduceOp::max;
    case ncclMin: return ReduceOp::min;
    case ncclAvg: return ReduceOp::avg;
    default: return std::nullopt;
  }
}

std::string nccl_op_name(ncclRedOp_t op) {
  switch (op) {
    case ncclSum: return "ncclSum";
    case ncclProd: return "ncclProd";
    case ncclMax: return "ncclMax";
    case ncclMin: return "ncclMin";
    case ncclAvg: return "ncclAvg";
    default: return fmt::format("ncclRedOp_t {}", static_cast<int>(op));
  }
}

}  // namespace canopy::nccl_api
