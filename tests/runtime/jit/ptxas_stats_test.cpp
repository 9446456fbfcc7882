// parse_ptxas_stats on ptxas's verbose output as NVRTC 13 prints it: registers, spills, stack and shared memory
// per function, with device functions and warnings in between.
#include <gtest/gtest.h>

#include "runtime/jit/nvrtc_compiler.hpp"

namespace canopy {
namespace {

// Captured from NVRTC 13.0 (--ptxas-options=-v --maxrregcount=24), plus a second entry.
constexpr const char* kLog = R"(ptxas warning : For profile sm_90 adjusting per thread register count of 16 to lower bound of 24
ptxas info    : Overriding maximum register limit 256 for 'k' with  24 of maxrregcount option
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z2k2Pfi' for 'sm_90'
ptxas info    : Function properties for _Z2k2Pfi
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 8 registers, used 0 barriers
ptxas info    : Compile time = 3.403 ms
ptxas info    : Compiling entry function 'k' for 'sm_90'
ptxas info    : Function properties for k
ptxas         .     960 bytes stack frame, 1372 bytes spill stores, 1788 bytes spill loads
ptxas info    : Used 24 registers, used 1 barriers, 960 bytes cumulative stack size, 4096 bytes smem
ptxas info    : Compile time = 108.365 ms
ptxas info    : Function properties for _Z1ff
ptxas         .     256 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
)";

TEST(PtxasStats, ReadsEveryFunctionsRegistersSpillsStackAndSharedMemory) {
  const std::vector<KernelStats> stats = parse_ptxas_stats(kLog);
  ASSERT_GE(stats.size(), 2u);
  EXPECT_EQ(stats[0].name, "_Z2k2Pfi");
  EXPECT_EQ(stats[0].registers, 8);
  EXPECT_EQ(stats[0].shared_bytes, 0);
  EXPECT_EQ(stats[0].stack_bytes, 0);
  EXPECT_EQ(stats[1].name, "k");
  EXPECT_EQ(stats[1].registers, 24);
  EXPECT_EQ(stats[1].stack_bytes, 960);
  EXPECT_EQ(stats[1].spill_store_bytes, 1372);
  EXPECT_EQ(stats[1].spill_load_bytes, 1788);
  EXPECT_EQ(stats[1].shared_bytes, 4096);
}

TEST(PtxasStats, NoVerboseLinesMeanNoStatistics) {
  EXPECT_TRUE(parse_ptxas_stats("").empty());
  EXPECT_TRUE(parse_ptxas_stats("k.cu(3): warning: something\n").empty());
}

}  // namespace
}  // namespace canopy
