// The tuning file (runtime/tune/tuning_file.hpp): round trip of chunks and protocol limits, buckets, machines kept apart,
// files from before protocol tuning still read, and a damaged file reported and ignored rather than trusted.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "runtime/tune/tuning_file.hpp"

namespace canopy {
namespace {

std::filesystem::path temp_file(const char* name) {
  const auto p = std::filesystem::temp_directory_path() / (std::string("canopy-tuning-") + name + "-" +
                                                            std::to_string(::getpid()) + ".json");
  std::filesystem::remove(p);
  return p;
}

TEST(TuningFile, BucketsArePowersOfTwo) {
  EXPECT_EQ(tuning_bucket(0), 0u);
  EXPECT_EQ(tuning_bucket(1), 1u);
  EXPECT_EQ(tuning_bucket(1000), 512u);
  EXPECT_EQ(tuning_bucket(1 << 20), 1u << 20);
  EXPECT_EQ(tuning_bucket((1 << 20) + 1), 1u << 20);
}

TEST(TuningFile, RoundTripKeepsMachinesApart) {
  const auto path = temp_file("round");
  {
    TuningFile f(path);
    EXPECT_TRUE(f.entries().empty());
    f.set({"aaa", Collective::allreduce, DataType::f32, 1 << 20}, {"h200x2", 512 << 10, 40.5, 45.0});
    f.set({"bbb", Collective::allreduce, DataType::f32, 1 << 20}, {"h200x2", 128 << 10, 50.0, 51.0});
    f.save();
  }
  std::string warning;
  const TuningFile g(path, &warning);
  EXPECT_EQ(warning, "");
  ASSERT_EQ(g.entries().size(), 2u);
  const auto e = g.find({"aaa", Collective::allreduce, DataType::f32, 1 << 20});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->chunk_bytes, 512 << 10);
  EXPECT_EQ(e->topology, "h200x2");
  EXPECT_DOUBLE_EQ(e->time_us, 40.5);
  EXPECT_FALSE(g.find({"aaa", Collective::allreduce, DataType::bf16, 1 << 20}));
  EXPECT_FALSE(g.find({"aaa", Collective::broadcast, DataType::f32, 1 << 20}));
  EXPECT_EQ(g.find({"bbb", Collective::allreduce, DataType::f32, 1 << 20})->chunk_bytes, 128 << 10);
  std::filesystem::remove(path);
}

TEST(TuningFile, ProtocolLimitsRoundTripPerMachineAndCollective) {
  const auto path = temp_file("protocols");
  {
    TuningFile f(path);
    f.set({"aaa", Collective::allreduce, DataType::f32, 1 << 20}, {"h200x2", 512 << 10, 40.5, 45.0});
    f.set(ProtocolKey{"aaa", Collective::allreduce},
          {"h200x2", DataType::bf16, {256 << 10, 4 << 20, 32 << 20}, 20.5, 21.0});
    f.set(ProtocolKey{"aaa", Collective::broadcast}, {"h200x2", DataType::f32, {64 << 10, 0, 0}, 10.0, 11.0});
    f.set(ProtocolKey{"bbb", Collective::allreduce}, {"other", DataType::f32, {0, 0, 1 << 20}, 5.0, 5.0});
    f.erase(ProtocolKey{"bbb", Collective::allreduce});
    f.save();
  }
  std::string warning;
  const TuningFile g(path, &warning);
  EXPECT_EQ(warning, "");
  EXPECT_EQ(g.entries().size(), 1u);
  ASSERT_EQ(g.protocols().size(), 2u);
  const std::optional<ProtocolEntry> e = g.find(ProtocolKey{"aaa", Collective::allreduce});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->limits, (ProtocolLimits{256 << 10, 4 << 20, 32 << 20}));
  EXPECT_EQ(e->dtype, DataType::bf16);
  EXPECT_EQ(e->topology, "h200x2");
  EXPECT_DOUBLE_EQ(e->cost, 20.5);
  EXPECT_DOUBLE_EQ(e->untuned_cost, 21.0);
  EXPECT_EQ(g.find(ProtocolKey{"aaa", Collective::broadcast})->limits, (ProtocolLimits{64 << 10, 0, 0}));
  EXPECT_FALSE(g.find(ProtocolKey{"bbb", Collective::allreduce}));
  EXPECT_FALSE(g.find(ProtocolKey{"aaa", Collective::reduce}));
  std::filesystem::remove(path);
}

TEST(TuningFile, AFileWithoutProtocolsStillReads) {
  const auto path = temp_file("old");
  std::ofstream(path) << R"({"version": 1, "entries": [{"machine": "a", "collective": "allreduce", "dtype": "f32",
                             "bucket_bytes": 1024, "chunk_bytes": 1024}]})";
  std::string warning;
  const TuningFile f(path, &warning);
  EXPECT_EQ(warning, "");
  EXPECT_EQ(f.entries().size(), 1u);
  EXPECT_TRUE(f.protocols().empty());
  std::filesystem::remove(path);
}

TEST(TuningFile, ADamagedFileIsReportedAndIgnored) {
  const auto path = temp_file("bad");
  for (const char* text : {"{not json", R"({"version": 2, "entries": []})",
                           R"({"version": 1, "entries": [{"machine": "a", "collective": "allreduce", "dtype": "f32",
                               "bucket_bytes": 1024, "chunk_bytes": 100}]})",
                           R"({"version": 1, "entries": [{"machine": "a", "collective": "scan", "dtype": "f32",
                               "bucket_bytes": 1024, "chunk_bytes": 1024}]})",
                           R"({"version": 1, "entries": [], "protocols": [{"machine": "a", "collective": "allreduce",
                               "dtype": "f32", "ll_bytes": -1, "ll128_bytes": 0, "direct_bytes": 0}]})",
                           R"({"version": 1, "entries": [], "protocols": [{"machine": "a", "collective": "allreduce",
                               "dtype": "f32", "ll_bytes": 1024}]})",
                           R"({"version": 1, "entries": [], "protocols": [{"machine": "a", "collective": "gather",
                               "dtype": "f32", "ll_bytes": 0, "ll128_bytes": 0, "direct_bytes": 0}]})"}) {
    std::ofstream(path) << text;
    std::string warning;
    const TuningFile f(path, &warning);
    EXPECT_TRUE(f.entries().empty()) << text;
    EXPECT_TRUE(f.protocols().empty()) << text;
    EXPECT_NE(warning.find("ignored"), std::string::npos) << text;
    EXPECT_NE(warning.find("canopy tune"), std::string::npos) << text;
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace canopy
