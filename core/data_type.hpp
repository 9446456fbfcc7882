// The element types and reduction operators of a collective (NCCL's ncclDataType_t and ncclRedOp_t, as Canopy
// names them), their names for users and for the CUDA templates, and their sizes. Shared by every stage.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace canopy {

enum class DataType { f32, f16, bf16, f64, i32, i64, u8 };
// avg (as ncclAvg): the sum divided by the number of ranks; kernels sum (kernel_op), the runtime divides after.
enum class ReduceOp { sum, prod, min, max, avg };
constexpr int kDataTypeCount = 7;  // DataType's values are 0 .. kDataTypeCount - 1 (tables indexed by them)
constexpr int kReduceOpCount = 5;  // likewise ReduceOp's

std::string to_string(DataType t);
std::string to_string(ReduceOp op);
std::optional<DataType> parse_data_type(std::string_view name);  // f32 f16 bf16 f64 i32 i64 u8 (also float, half...)
std::optional<ReduceOp> parse_reduce_op(std::string_view name);   // sum prod min max avg
int size_of(DataType t);
std::string cuda_type_name(DataType t);  // the type templates/ use: float, canopy::half_t, ...
// The operator the kernels apply: op itself, sum for avg (whose division by the ranks comes after the collective).
constexpr ReduceOp kernel_op(ReduceOp op) { return op == ReduceOp::avg ? ReduceOp::sum : op; }
std::string cuda_op_name(ReduceOp op);   // the operator templates/ use for kernel_op(op): canopy::OpSum, ...

}  // namespace canopy
