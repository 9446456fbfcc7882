// DeviceArgsImage: the image the host fills for a rank count known at run time is byte for byte the DeviceArgs<N>
// the kernels declare, filled through the struct's members, for every N tried; device_args_layout agrees with the
// struct up to the largest plan codegen takes.
#include "runtime/launch/device_args_image.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>

#include "codegen/lower.hpp"

namespace canopy {
namespace {

// Distinct, recognisable addresses (never dereferenced).
template <class T>
T* address(std::uintptr_t n) {
  return reinterpret_cast<T*>(0x1000 * n + 8);
}

// One rank count: the struct filled member by member against the image filled through its setters, with the
// launch counters of `devices` devices (the entries past them stay null in both).
template <int N>
void expect_image_matches_struct(int devices) {
  auto args = std::make_unique<DeviceArgs<N>>();
  std::memset(args.get(), 0, sizeof(DeviceArgs<N>));
  DeviceArgsImage image;
  image.reset(N);
  args->count = 123456789012ull;
  image.set_count(123456789012ull);
  args->epoch = 77;
  image.set_epoch(77);
  for (int d = 0; d < devices; ++d) {
    args->launches[d] = address<unsigned long long>(d + 1);
    image.set_launch_counter(d, address<unsigned long long>(d + 1));
  }
  for (int r = 0; r < N; ++r) {
    const RankPointers p{address<const void>(100 + r), address<void>(200 + r), address<void>(300 + r),
                         address<unsigned long long>(400 + r)};
    args->rank[r] = p;
    image.set_rank(r, p);
  }
  args->abort = address<const volatile unsigned int>(999);
  image.set_abort(address<const volatile unsigned int>(999));
  ASSERT_EQ(image.size(), sizeof(DeviceArgs<N>)) << N << " ranks";
  EXPECT_EQ(std::memcmp(image.data(), args.get(), sizeof(DeviceArgs<N>)), 0) << N << " ranks";
}

TEST(DeviceArgsImage, EqualsTheStructTheKernelsDeclareForEveryRankCount) {
  expect_image_matches_struct<1>(1);
  expect_image_matches_struct<2>(2);
  expect_image_matches_struct<3>(1);
  expect_image_matches_struct<8>(2);
  expect_image_matches_struct<16>(16);
  expect_image_matches_struct<37>(5);
  expect_image_matches_struct<kMaxCodegenRanks>(8);
}

TEST(DeviceArgsImage, LayoutIsCountEpochCountersRanksThenTheAbortWord) {
  for (int n : {1, 2, 5, 64, kMaxCodegenRanks}) {
    const DeviceArgsLayout l = device_args_layout(n);
    EXPECT_EQ(l.count, 0u);
    EXPECT_EQ(l.epoch, 8u);
    EXPECT_EQ(l.launches, 16u);
    EXPECT_EQ(l.rank, 16u + 8u * n) << n;
    EXPECT_EQ(l.abort, l.rank + sizeof(RankPointers) * n) << n;
    EXPECT_EQ(l.size, l.abort + 8) << n;
  }
  EXPECT_EQ(device_args_layout(kMaxCodegenRanks).size, sizeof(DeviceArgs<kMaxCodegenRanks>));
}

// The largest plan codegen lowers is the largest whose arguments a kernel can take; one rank more would not fit.
TEST(DeviceArgsImage, TheLargestPlanLoweredFitsAKernelsParametersAndOneMoreRankWouldNot) {
  EXPECT_LE(device_args_layout(kMaxCodegenRanks).size, static_cast<unsigned long long>(kKernelParameterBytes));
  EXPECT_GT(device_args_layout(kMaxCodegenRanks + 1).size, static_cast<unsigned long long>(kKernelParameterBytes));
}

TEST(DeviceArgsImage, ResetZeroesEveryMemberForTheNewRankCount) {
  DeviceArgsImage image;
  image.reset(4);
  image.set_count(5);
  image.set_abort(address<const volatile unsigned int>(1));
  image.reset(2);
  ASSERT_EQ(image.size(), sizeof(DeviceArgs<2>));
  const DeviceArgs<2> zero{};
  EXPECT_EQ(std::memcmp(image.data(), &zero, sizeof zero), 0);
}

}  // namespace
}  // namespace canopy
