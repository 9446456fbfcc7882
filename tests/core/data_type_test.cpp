// DataType's names, sizes and template spellings: every type round-trips through its name and its alias, the list
// of every type is in value order, and the twelve NCCL types are all there.
#include <gtest/gtest.h>

#include "core/data_type.hpp"

namespace canopy {
namespace {

TEST(DataType, EveryTypeRoundTripsThroughItsNames) {
  for (int i = 0; i < kDataTypeCount; ++i) {
    const DataType t = kEveryDataType[i];
    EXPECT_EQ(static_cast<int>(t), i);
    EXPECT_EQ(parse_data_type(to_string(t)), t) << to_string(t);
    EXPECT_FALSE(cuda_type_name(t).empty()) << to_string(t);
  }
  EXPECT_EQ(parse_data_type("int8"), DataType::i8);
  EXPECT_EQ(parse_data_type("uint32"), DataType::u32);
  EXPECT_EQ(parse_data_type("uint64"), DataType::u64);
  EXPECT_EQ(parse_data_type("float8e4m3"), DataType::f8e4m3);
  EXPECT_EQ(parse_data_type("float8e5m2"), DataType::f8e5m2);
  EXPECT_EQ(parse_data_type("f8"), std::nullopt);
}

TEST(DataType, SizesAndTemplateTypes) {
  EXPECT_EQ(size_of(DataType::i8), 1);
  EXPECT_EQ(size_of(DataType::u32), 4);
  EXPECT_EQ(size_of(DataType::u64), 8);
  EXPECT_EQ(size_of(DataType::f8e4m3), 1);
  EXPECT_EQ(size_of(DataType::f8e5m2), 1);
  EXPECT_EQ(cuda_type_name(DataType::i8), "signed char");  // plain char's signedness is the compiler's choice
  EXPECT_EQ(cuda_type_name(DataType::u64), "unsigned long long");
  EXPECT_EQ(cuda_type_name(DataType::f8e4m3), "canopy::fp8e4m3_t");
  EXPECT_EQ(cuda_type_name(DataType::f8e5m2), "canopy::fp8e5m2_t");
}

TEST(DataType, KindsAndTheListForMessages) {
  int floating = 0, unsigned_ = 0;
  for (DataType t : kEveryDataType) {
    floating += is_floating(t);
    unsigned_ += is_unsigned(t);
  }
  EXPECT_EQ(floating, 6);  // f32 f16 bf16 f64 f8e4m3 f8e5m2
  EXPECT_EQ(unsigned_, 3);  // u8 u32 u64
  EXPECT_EQ(data_type_choices(), "f32, f16, bf16, f64, i32, i64, u8, i8, u32, u64, f8e4m3 or f8e5m2");
}

}  // namespace
}  // namespace canopy
