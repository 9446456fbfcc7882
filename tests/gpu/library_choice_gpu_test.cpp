// Per-size choice between Canopy's kernels and the real NCCL (issue 70; label gpu; SKIPPED without a GPU), as a user
// makes it: `canopy tune --vs-nccl --procs 2` on GPU 0 (each process its own NCCL_HOSTID, so the real NCCL takes them
// for two hosts) writes its choices to a tuning file of the test's own (CANOPY_TUNING); the test then sets the table to
// say "the real NCCL" for allreduce f32 at 64 KiB and "Canopy" at 16 MiB, and canopy_nccl_check --mode reuse (every
// output element checked) runs allreduces of both sizes through the NCCL API: the log must say each size was served
// by the side the table names, naming the file.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>

#include <unistd.h>

#include "runtime/cuda/gpu_devices.hpp"
#include "runtime/tune/tuning_file.hpp"
#include "tests/test_util.hpp"

namespace canopy {
namespace {

TEST(LibraryChoiceOnGpu, EachSizeIsServedByTheLibraryTheTuningFileNames) {
  if (visible_gpu_count() < 1) GTEST_SKIP() << "no CUDA device visible: run on a GPU machine";
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / fmt::format("canopy-library-choice-{}", ::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::filesystem::path file = dir / "h200-one-gpu.json";
  const std::string env = fmt::format("CANOPY_TUNING={} CANOPY_BOOTSTRAP_TIMEOUT_S=60", file.string());
  const testing::CommandRun tuned = testing::run_command(fmt::format(
      "{} {} run -n 2 -- sh -c 'NCCL_HOSTID=choice$CANOPY_RANK exec {} tune --vs-nccl --procs 2 -c allreduce "
      "--sizes 64K,16M --rounds 3 --iters 4 --repeats 2 --warmup 1' 2>&1",
      env, CANOPY_CLI, CANOPY_CLI));
  std::cout << tuned.output;
  ASSERT_EQ(tuned.status, 0) << tuned.output;
  EXPECT_THAT(tuned.output, ::testing::HasSubstr("NVLS"));
  EXPECT_THAT(tuned.output, ::testing::HasSubstr("(2 library choices)"));

  // The table says: the real NCCL at 64 KiB, Canopy at 16 MiB (whatever was measured), on the machine tune keyed.
  TuningFile f(file);
  ASSERT_EQ(f.libraries().size(), 2u);
  const std::map<TuningKey, LibraryEntry> measured = f.libraries();
  for (const auto& [key, entry] : measured) {
    LibraryEntry e = entry;
    e.library = key.bucket_bytes == (64u << 10) ? Library::nccl : Library::canopy;
    f.set_library(key, e);
  }
  f.save();

  const testing::CommandRun r = testing::run_command(
      fmt::format("{} CANOPY_LOG=info {} run -n 2 -- {} --mode reuse --hostid 1 --counts 16384,4194304 "
                  "--iterations 40 2>&1",
                  env, CANOPY_CLI, CANOPY_NCCL_CHECK));
  std::cout << r.output;
  EXPECT_EQ(r.status, 0) << r.output;
  for (int p = 0; p < 2; ++p)
    EXPECT_THAT(r.output, ::testing::HasSubstr(fmt::format("nccl rank {}: reuse: 40 calls checked, 0 wrong", p)));
  EXPECT_THAT(r.output, ::testing::HasSubstr("real NCCL communicator made beside Canopy's"));
  EXPECT_THAT(r.output, ::testing::ContainsRegex("nccl: ncclAllReduce ncclFloat32 .*: forwarded to the real NCCL: "
                                                 "h200-one-gpu.json .* chose the real NCCL for allreduce f32 "
                                                 "\\[64 KiB, 128 KiB\\)"));
  EXPECT_THAT(r.output, ::testing::ContainsRegex("nccl: ncclAllReduce ncclFloat32 .*: served by Canopy: "
                                                 "h200-one-gpu.json .* chose Canopy's kernels for allreduce f32 "
                                                 "\\[16 MiB, 32 MiB\\)"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace canopy
