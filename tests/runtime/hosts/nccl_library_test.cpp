// The real NCCL's functions for the inter-host phase (runtime/hosts/nccl_library.hpp): a CANOPY_NCCL_LIBRARY that
// does not exist, or that lacks a function the rails call (the NCCL API tests' stand-in, CANOPY_FAKE_REAL_NCCL, has no
// ncclGetUniqueId), is refused with an error naming the variable (the table is filled once per process: each test
// runs in its own process under ctest), and Canopy's types and operators map to NCCL's codes.
#include "runtime/hosts/nccl_library.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>

namespace canopy {
namespace {

using ::testing::HasSubstr;

TEST(NcclLibrary, AMissingCanopyNcclLibraryIsRefusedNamingTheVariable) {
  setenv("CANOPY_NCCL_LIBRARY", "/nonexistent/libnccl.so.2", 1);
  const NcclLibrary* lib = nullptr;
  const Status s = open_nccl_library(&lib);
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("several hosts need the real NCCL"));
  EXPECT_THAT(s.message(), HasSubstr("CANOPY_NCCL_LIBRARY"));
  EXPECT_THAT(s.message(), HasSubstr("'/nonexistent/libnccl.so.2' does not exist"));
  EXPECT_EQ(lib, nullptr);
}

TEST(NcclLibrary, ALibraryLackingARailFunctionIsRefusedNamingIt) {
  setenv("CANOPY_NCCL_LIBRARY", CANOPY_FAKE_REAL_NCCL, 1);
  const NcclLibrary* lib = nullptr;
  const Status s = open_nccl_library(&lib);
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("several hosts need the real NCCL between them, and it cannot be opened: "
                                     "CANOPY_NCCL_LIBRARY: '" + canonical_or_empty(CANOPY_FAKE_REAL_NCCL) +
                                     "' lacks ncclGetUniqueId: not an NCCL library (or one too old)"));
  EXPECT_EQ(lib, nullptr);
}

TEST(NcclLibrary, TypesAndOperatorsMapToNcclsCodes) {
  EXPECT_EQ(nccl_data_type(DataType::i8), 0);
  EXPECT_EQ(nccl_data_type(DataType::i32), 2);
  EXPECT_EQ(nccl_data_type(DataType::u64), 5);
  EXPECT_EQ(nccl_data_type(DataType::f16), 6);
  EXPECT_EQ(nccl_data_type(DataType::f32), 7);
  EXPECT_EQ(nccl_data_type(DataType::f64), 8);
  EXPECT_EQ(nccl_data_type(DataType::bf16), 9);
  EXPECT_EQ(nccl_data_type(DataType::f8e5m2), 11);
  EXPECT_EQ(nccl_reduce_op(ReduceOp::sum), 0);
  EXPECT_EQ(nccl_reduce_op(ReduceOp::prod), 1);
  EXPECT_EQ(nccl_reduce_op(ReduceOp::max), 2);
  EXPECT_EQ(nccl_reduce_op(ReduceOp::min), 3);
  EXPECT_EQ(nccl_reduce_op(ReduceOp::avg), 4);
}

}  // namespace
}  // namespace canopy
