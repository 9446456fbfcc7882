// Names, sizes and template spellings of DataType and ReduceOp.
#include "core/data_type.hpp"

#include <iterator>

#include "core/error.hpp"

namespace canopy {

namespace {
struct TypeInfo {
  DataType type;
  const char* name;
  const char* alias;
  int size;
  const char* cuda;
};
constexpr TypeInfo kTypes[] = {
    {DataType::f32, "f32", "float", 4, "float"},
    {DataType::f16, "f16", "half", 2, "canopy::half_t"},
    {DataType::bf16, "bf16", "bfloat16", 2, "canopy::bfloat16_t"},
    {DataType::f64, "f64", "double", 8, "double"},
    {DataType::i32, "i32", "int32", 4, "int"},
    {DataType::i64, "i64", "int64", 8, "long long"},
    {DataType::u8, "u8", "uint8", 1, "unsigned char"},
    {DataType::i8, "i8", "int8", 1, "signed char"},
    {DataType::u32, "u32", "uint32", 4, "unsigned int"},
    {DataType::u64, "u64", "uint64", 8, "unsigned long long"},
    {DataType::f8e4m3, "f8e4m3", "float8e4m3", 1, "canopy::fp8e4m3_t"},
    {DataType::f8e5m2, "f8e5m2", "float8e5m2", 1, "canopy::fp8e5m2_t"},
};
const TypeInfo& info(DataType t) {
  for (const TypeInfo& i : kTypes)
    if (i.type == t) return i;
  throw InternalError("unknown DataType");
}
static_assert(std::size(kTypes) == kDataTypeCount);
constexpr const char* kOps[] = {"sum", "prod", "min", "max", "avg"};
static_assert(std::size(kOps) == kReduceOpCount);
}  // namespace

std::string to_string(DataType t) { return info(t).name; }
std::string to_string(ReduceOp op) { return kOps[static_cast<int>(op)]; }
int size_of(DataType t) { return info(t).size; }
std::string cuda_op_name(ReduceOp op) {
  switch (kernel_op(op)) {
    case ReduceOp::avg:
    case ReduceOp::sum: return "canopy::OpSum";
    case ReduceOp::prod: return "canopy::OpProd";
    case ReduceOp::min: return "canopy::OpMin";
    case ReduceOp::max: return "canopy::OpMax";
  }
  return "?";
}

std::string cuda_type_name(DataType t) { return info(t).cuda; }

std::string data_type_choices() {
  std::string out;
  for (std::size_t i = 0; i < std::size(kTypes); ++i)
    out += (i == 0 ? "" : i + 1 == std::size(kTypes) ? " or " : ", ") + std::string(kTypes[i].name);
  return out;
}

std::optional<DataType> parse_data_type(std::string_view name) {
  for (const TypeInfo& i : kTypes)
    if (name == i.name || name == i.alias) return i.type;
  return std::nullopt;
}

std::optional<ReduceOp> parse_reduce_op(std::string_view name) {
  for (int i = 0; i < kReduceOpCount; ++i)
    if (name == kOps[i]) return static_cast<ReduceOp>(i);
  return std::nullopt;
}

}  // namespace canopy
