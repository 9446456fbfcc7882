// Ranks as separate processes (canopy_bootstrap_rank, started with posix_spawn and CANOPY_UNIQUE_ID in their
// environment) joining a root in this process: they form the group and allgather, or all fail saying why.
#include <fcntl.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "tests/runtime/transport/bootstrap/bootstrap_test_util.hpp"

extern char** environ;

namespace canopy::testing {
namespace {

using ::testing::HasSubstr;

// One rank process; its stdout and stderr go to files in `dir`.
struct RankProcess {
  pid_t pid = -1;
  std::filesystem::path out, err;
};

RankProcess spawn_rank(const UniqueId& id, int nranks, int rank, const std::filesystem::path& dir) {
  RankProcess p{-1, dir / fmt::format("rank{}.out", rank), dir / fmt::format("rank{}.err", rank)};
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, 1, p.out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&files, 2, p.err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<std::string> env = {"CANOPY_UNIQUE_ID=" + to_string(id), "CANOPY_BOOTSTRAP_TIMEOUT_S=4"};
  for (char** e = environ; *e; ++e)
    if (!std::string_view(*e).starts_with("CANOPY_UNIQUE_ID=") &&
        !std::string_view(*e).starts_with("CANOPY_BOOTSTRAP_TIMEOUT_S="))
      env.push_back(*e);
  std::vector<char*> envp;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string program = CANOPY_BOOTSTRAP_RANK, n = std::to_string(nranks), r = std::to_string(rank);
  char* argv[] = {program.data(), n.data(), r.data(), nullptr};
  const int error = posix_spawn(&p.pid, program.c_str(), &files, nullptr, argv, envp.data());
  posix_spawn_file_actions_destroy(&files);
  EXPECT_EQ(error, 0) << "cannot start " << program;
  return p;
}

// The process's exit code (-1 when it did not exit).
int wait_exit(const RankProcess& p) {
  int status = 0;
  if (p.pid < 0 || waitpid(p.pid, &status, 0) != p.pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

class BootstrapProcesses : public BootstrapTest {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / fmt::format("canopy-bootstrap-test-{}", getpid());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(BootstrapProcesses, FourProcessesJoinAndAllgather) {
  const UniqueId id = start_root(std::chrono::milliseconds(4000));
  std::vector<RankProcess> ranks;
  for (int r = 0; r < 4; ++r) ranks.push_back(spawn_rank(id, 4, r, dir_));
  const std::string expected =
      "welcome: hello 0,hello 1,hello 2,hello 3\n"
      "round 0: round 0 from 0,round 0 from 1,round 0 from 2,round 0 from 3\n"
      "round 1: round 1 from 0,round 1 from 1,round 1 from 2,round 1 from 3\n"
      "round 2: round 2 from 0,round 2 from 1,round 2 from 2,round 2 from 3\n";
  for (const RankProcess& p : ranks) {
    EXPECT_EQ(wait_exit(p), 0) << read_file(p.err);
    EXPECT_EQ(read_file(p.out), expected);
  }
  EXPECT_TRUE(wait_for_bootstrap_root(id, std::chrono::milliseconds(4000)));
  EXPECT_EQ(log_->count("all 4 ranks joined"), 1) << log_->all();
}

TEST_F(BootstrapProcesses, TwoProcessesClaimingOneRankBothFail) {
  const UniqueId id = start_root(std::chrono::milliseconds(4000));
  std::filesystem::create_directories(dir_ / "a");
  std::filesystem::create_directories(dir_ / "b");
  const RankProcess a = spawn_rank(id, 2, 0, dir_ / "a");
  const RankProcess b = spawn_rank(id, 2, 0, dir_ / "b");
  for (const RankProcess& p : {a, b}) {
    EXPECT_EQ(wait_exit(p), 1);
    EXPECT_THAT(read_file(p.err), HasSubstr("rank 0: remote error: bootstrap (rank 0 of 2): the group failed: rank 0 "
                                            "joined twice: from 127.0.0.1:"));
    EXPECT_EQ(read_file(p.out), "");
  }
}

}  // namespace
}  // namespace canopy::testing
