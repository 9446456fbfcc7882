// The element types and reduction operators of a collective (NCCL's ncclDataType_t and ncclRedOp_t, as Canopy
// names them), their names for users and for the CUDA templates, and their sizes. Shared by every stage.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace canopy {

// New types are appended (the values index tables and travel between processes); f8e4m3 and f8e5m2 are OCP fp8
// (NCCL's ncclFloat8e4m3, ncclFloat8e5m2), reduced in fp32 and rounded back once per combine, as NCCL does.
enum class DataType { f32, f16, bf16, f64, i32, i64, u8, i8, u32, u64, f8e4m3, f8e5m2 };
// avg (as ncclAvg): the sum divided by the number of ranks; kernels sum (kernel_op), the runtime divides after.
enum class ReduceOp { sum, prod, min, max, avg };
constexpr int kDataTypeCount = 12;  // DataType's values are 0 .. kDataTypeCount - 1 (tables indexed by them)
constexpr int kReduceOpCount = 5;  // likewise ReduceOp's
// Every DataType, in value order: what a sweep over "every dtype" iterates.
inline constexpr DataType kEveryDataType[kDataTypeCount] = {
    DataType::f32, DataType::f16, DataType::bf16, DataType::f64,    DataType::i32,   DataType::i64,
    DataType::u8,  DataType::i8,  DataType::u32,  DataType::u64, DataType::f8e4m3, DataType::f8e5m2};
constexpr bool is_floating(DataType t) {
  return t == DataType::f32 || t == DataType::f16 || t == DataType::bf16 || t == DataType::f64 ||
         t == DataType::f8e4m3 || t == DataType::f8e5m2;
}
constexpr bool is_unsigned(DataType t) { return t == DataType::u8 || t == DataType::u32 || t == DataType::u64; }

std::string to_string(DataType t);
std::string to_string(ReduceOp op);
std::string data_type_choices();  // "f32, f16, ..., f8e4m3 or f8e5m2": for messages that list the names
std::optional<DataType> parse_data_type(std::string_view name);  // f32 f16 bf16 f64 i32 i64 u8 i8 u32 u64 f8e4m3
                                                                  // f8e5m2 (also float, half, int8, float8e4m3...)
std::optional<ReduceOp> parse_reduce_op(std::string_view name);   // sum prod min max avg
int size_of(DataType t);
std::string cuda_type_name(DataType t);  // the type templates/ use: float, canopy::half_t, ...
// The operator the kernels apply: op itself, sum for avg (whose division by the ranks comes after the collective).
constexpr ReduceOp kernel_op(ReduceOp op) { return op == ReduceOp::avg ? ReduceOp::sum : op; }
std::string cuda_op_name(ReduceOp op);   // the operator templates/ use for kernel_op(op): canopy::OpSum, ...

}  // namespace canopy
