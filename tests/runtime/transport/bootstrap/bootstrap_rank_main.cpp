// canopy_bootstrap_rank NRANKS RANK: one rank process of the multi-process bootstrap tests. It joins the root named
// by CANOPY_UNIQUE_ID (hex, as to_string writes it) with payload "hello RANK", prints every rank's payload, runs
// allgather rounds 0 to 2 ("round K from RANK") and a barrier, printing each result:
//   welcome: hello 0,hello 1,...
//   round 0: round 0 from 0,round 0 from 1,...
// and exits 0; on any error it prints "rank RANK: ERROR" to stderr and exits 1. With CANOPY_BOOTSTRAP_TIMED=N it then
// times N more allgathers of a call signature's size (what CANOPY_CHECK_CALLS costs a call) and prints
//   timed: N allgathers, X us each (median of 5 runs of N / 5)
//
// canopy_bootstrap_rank --root SPARE_FDS: no rank, a root's process (hostile_process_test.cpp): makes a unique id
// (make_unique_id, which starts the root here, configured by the CANOPY_BOOTSTRAP_* variables), lowers this
// process's descriptor limit so that SPARE_FDS more descriptors can be opened, prints
//   id: HEX
// and exits 0 once the root ends (1 when it has not ended after CANOPY_BOOTSTRAP_TIMEOUT_S and 10 s more).
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "runtime/transport/bootstrap/bootstrap.hpp"

namespace {
int fail(int rank, const canopy::Status& s) {
  fmt::print(stderr, "rank {}: {}\n", rank, s.to_string());
  return 1;
}

int serve_root(int spare_fds) {
  using namespace canopy;
  UniqueId id;
  if (Status s = make_unique_id(&id); !s.ok()) {
    fmt::print(stderr, "root: {}\n", s.to_string());
    return 1;
  }
  std::set<int> open;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd"))
    open.insert(std::atoi(entry.path().filename().c_str()));
  int limit_fd = 0;  // new descriptors are the lowest free numbers: leave `spare_fds` of them below the limit
  for (int free = 0; free < spare_fds; ++limit_fd) free += open.count(limit_fd) == 0;
  rlimit limit{};
  getrlimit(RLIMIT_NOFILE, &limit);
  limit.rlim_cur = static_cast<rlim_t>(limit_fd);
  if (setrlimit(RLIMIT_NOFILE, &limit) != 0) {
    fmt::print(stderr, "root: cannot lower the descriptor limit to {}\n", limit.rlim_cur);
    return 1;
  }
  fmt::print("id: {}\n", to_string(id));  // once the limit holds: whoever reads it may connect
  std::fflush(stdout);
  return wait_for_bootstrap_root(id, bootstrap_timeout_from_environment() + std::chrono::seconds(10)) ? 0 : 1;
}
}  // namespace

int main(int argc, char** argv) {
  using namespace canopy;
  if (argc == 3 && std::string_view(argv[1]) == "--root") return serve_root(std::atoi(argv[2]));
  if (argc != 3) {
    fmt::print(stderr, "usage: canopy_bootstrap_rank NRANKS RANK (and CANOPY_UNIQUE_ID in the environment), or "
                       "canopy_bootstrap_rank --root SPARE_FDS\n");
    return 2;
  }
  const int nranks = std::atoi(argv[1]), rank = std::atoi(argv[2]);
  const char* text = std::getenv("CANOPY_UNIQUE_ID");
  UniqueId id;
  if (Status s = parse_unique_id(text ? text : "", &id); !s.ok()) return fail(rank, s);
  std::unique_ptr<Bootstrap> bootstrap;
  if (Status s = Bootstrap::join(id, nranks, rank, fmt::format("hello {}", rank), &bootstrap); !s.ok())
    return fail(rank, s);
  fmt::print("welcome: {}\n", fmt::join(bootstrap->payloads(), ","));
  for (int round = 0; round < 3; ++round) {
    std::vector<std::string> all;
    if (Status s = bootstrap->allgather(fmt::format("round {} from {}", round, rank), &all); !s.ok())
      return fail(rank, s);
    fmt::print("round {}: {}\n", round, fmt::join(all, ","));
  }
  if (const char* timed = std::getenv("CANOPY_BOOTSTRAP_TIMED")) {
    const int n = std::max(5, std::atoi(timed));
    std::vector<double> runs;
    for (int run = 0; run < 5; ++run) {
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < n / 5; ++i) {
        std::vector<std::string> all;
        if (Status s = bootstrap->allgather("call 12345: allreduce count 1048576 f32 sum", &all); !s.ok())
          return fail(rank, s);
      }
      runs.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() /
                     (n / 5));
    }
    std::sort(runs.begin(), runs.end());
    fmt::print("timed: {} allgathers, {:.1f} us each (median of 5 runs of {})\n", n, runs[2], n / 5);
  }
  if (Status s = bootstrap->barrier(); !s.ok()) return fail(rank, s);
  return 0;
}
