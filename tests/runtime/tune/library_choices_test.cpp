// LibraryChoices and tuning.json's "libraries": a choice written is read back for its machine only, found by the
// call's size bucket, untuned sizes have none (Canopy), the digest tells two ranks' tables apart, and the log line
// names the choice, its file and its figures. A file with a library that is neither is refused whole.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "runtime/tune/library_choices.hpp"

namespace canopy {
namespace {

using ::testing::HasSubstr;

std::filesystem::path scratch(const char* name) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "canopy-library-choices";
  std::filesystem::create_directories(dir);
  const std::filesystem::path p = dir / name;
  std::filesystem::remove(p);
  return p;
}

LibraryEntry measured(Library library, double canopy_us, double nccl_us) {
  LibraryEntry e;
  e.topology = "h200x4";
  e.library = library;
  e.rounds = 5;
  e.canopy_us = canopy_us;
  e.canopy_min_us = canopy_us * 0.98;
  e.canopy_max_us = canopy_us * 1.03;
  e.nccl_us = nccl_us;
  e.nccl_min_us = nccl_us * 0.99;
  e.nccl_max_us = nccl_us * 1.02;
  e.nccl_version = "2.28.9";
  return e;
}

TEST(LibraryChoices, AChoiceIsFoundByItsMachineCollectiveTypeAndSizeBucket) {
  const std::filesystem::path path = scratch("tuning.json");
  {
    TuningFile f(path);
    f.set_library({"machine-a", Collective::allreduce, DataType::f32, 1 << 20}, measured(Library::nccl, 10.4, 9.8));
    f.set_library({"machine-a", Collective::allreduce, DataType::f32, 1 << 28}, measured(Library::canopy, 900, 950));
    f.set_library({"machine-b", Collective::allreduce, DataType::f32, 1 << 20}, measured(Library::nccl, 10, 9));
    f.save();
  }
  const TuningFile back(path);
  const LibraryChoices a(back, "machine-a");
  EXPECT_EQ(a.nccl_count(), 1);
  const LibraryEntry* small = a.find(Collective::allreduce, DataType::f32, (1 << 20) + 4096);  // in [1M, 2M)
  ASSERT_NE(small, nullptr);
  EXPECT_EQ(small->library, Library::nccl);
  EXPECT_DOUBLE_EQ(small->nccl_us, 9.8);
  EXPECT_EQ(small->rounds, 5);
  EXPECT_EQ(small->nccl_version, "2.28.9");
  EXPECT_EQ(a.find(Collective::allreduce, DataType::f32, 1 << 21), nullptr) << "an untuned size: Canopy";
  EXPECT_EQ(a.find(Collective::allreduce, DataType::bf16, 1 << 20), nullptr) << "another type";
  EXPECT_EQ(a.find(Collective::broadcast, DataType::f32, 1 << 20), nullptr) << "another collective";
  EXPECT_EQ(a.find(Collective::allreduce, DataType::f32, 1 << 28)->library, Library::canopy);
  EXPECT_THAT(a.describe(Collective::allreduce, DataType::f32, 1 << 20, *small),
              HasSubstr("chose the real NCCL for allreduce f32 [1 MiB, 2 MiB): NCCL 9.80 us (9.70–10.00) against "
                        "Canopy's 10.40 us (10.19–10.71), 5 rounds, NCCL 2.28.9"));
  EXPECT_THAT(a.describe(Collective::allreduce, DataType::f32, 1 << 20, *small), HasSubstr(path.string()));

  const LibraryChoices b(back, "machine-b");
  EXPECT_NE(a.digest(), b.digest()) << "different choices, different digests";
  EXPECT_EQ(a.digest(), LibraryChoices(back, "machine-a").digest());
  const LibraryChoices none(back, "machine-c");
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(none.digest(), "");
}

TEST(LibraryChoices, TheFasterMedianIsChosenAndATieStaysWithCanopy) {
  EXPECT_EQ(library_entry("t", 5, 10, 9, 11, 9.9, 9.5, 12, "2.28.9").library, Library::nccl);
  EXPECT_EQ(library_entry("t", 5, 10, 9, 11, 10.1, 8, 10.5, "2.28.9").library, Library::canopy);
  EXPECT_EQ(library_entry("t", 5, 10, 9, 11, 10, 10, 10, "2.28.9").library, Library::canopy);
  EXPECT_EQ(library_entry("t", 5, 10, 9, 11, 0, 0, 0, "").library, Library::canopy) << "NCCL not measured";
  const LibraryEntry e = library_entry("h200x4", 7, 10, 9, 11, 9.5, 9.4, 9.6, "2.28.9");
  EXPECT_EQ(e.topology, "h200x4");
  EXPECT_EQ(e.rounds, 7);
  EXPECT_DOUBLE_EQ(e.canopy_max_us, 11);
  EXPECT_DOUBLE_EQ(e.nccl_min_us, 9.4);
  EXPECT_EQ(e.nccl_version, "2.28.9");
}

TEST(LibraryChoices, AFileWhoseLibraryIsNeitherIsIgnoredWhole) {
  const std::filesystem::path path = scratch("bad.json");
  std::ofstream(path) << R"({"version": 1, "entries": [], "libraries": [{"machine": "m", "collective": "allreduce",
    "dtype": "f32", "bucket_bytes": 1024, "library": "mpi"}]})";
  std::string warning;
  const TuningFile f(path, &warning);
  EXPECT_TRUE(f.libraries().empty());
  EXPECT_THAT(warning, HasSubstr("library \"mpi\" is neither canopy nor nccl"));
}

TEST(LibraryChoices, CanopyTuningNamesTheFileOfTheMachineKind) {
  ::setenv("CANOPY_TUNING", "/etc/canopy/hgx-h200.json", 1);
  EXPECT_EQ(TuningFile::default_path("/cache"), std::filesystem::path("/etc/canopy/hgx-h200.json"));
  ::unsetenv("CANOPY_TUNING");
  EXPECT_EQ(TuningFile::default_path("/cache"), std::filesystem::path("/cache/tuning.json"));
}

}  // namespace
}  // namespace canopy
