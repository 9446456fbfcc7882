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
