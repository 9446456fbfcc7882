// `canopy run -n N [--hosts A,B,...] [--grace S] [--keep-going] -- PROGRAM ARGS...`: starts N processes of PROGRAM,
// one per rank, as torchrun and mpirun do, with the variables a multi-process Canopy program (or PyTorch) reads:
// CANOPY_RANK, CANOPY_NRANKS, CANOPY_UNIQUE_ID (a bootstrap id whose root runs in this launcher), CANOPY_LOCAL_RANK,
// CANOPY_LOCAL_SIZE, and RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE. --hosts makes "hosts" on this machine (for
// tests of the multi-host runtime on one GPU): ranks in host order, each with CANOPY_HOST_ID and NCCL_HOSTID naming
// its host and the local variables counted per host. It forwards SIGINT, SIGTERM, SIGHUP and SIGQUIT to every rank; when a rank
// fails it stops the others (SIGTERM, then SIGKILL after the grace period) and exits with the first failing status
// (128 + N for a rank killed by signal N; 127 when PROGRAM cannot be started).
#include <fmt/format.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "runtime/transport/bootstrap/unique_id.hpp"
#include "tools/commands.hpp"

extern char** environ;

namespace canopy::cli {
namespace {

struct RunArgs {
  int ranks = 0;
  std::string hosts;  // --hosts "2,2": processes per host, summing to ranks
  double grace_s = 10;
  bool keep_going = false;
  std::vector<std::string> program;
};

// The ranks' pids, for the signal handler (async-signal-safe: it only reads these and calls kill).
constexpr int kMaxRanks = 4096;
std::atomic<pid_t> g_pids[kMaxRanks];
std::atomic<int> g_count{0};

void forward_signal(int sig) {
  for (int r = 0; r < g_count.load(); ++r)
    if (const pid_t pid = g_pids[r].load(); pid > 0) kill(pid, sig);
}

}  // namespace

std::vector<RankPlace> host_places(int ranks, const std::string& hosts) {
  std::vector<RankPlace> places;
  if (hosts.empty()) {
    for (int r = 0; r < ranks; ++r) places.push_back({-1, r, ranks});
    return places;
  }
  std::vector<int> sizes;
  std::size_t at = 0;
  while (at <= hosts.size()) {
    const std::size_t comma = hosts.find(',', at);
    const std::string part = hosts.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    int n = 0;
    const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), n);
    if (ec != std::errc() || end != part.data() + part.size() || n < 1)
      throw Error(fmt::format("--hosts {}: '{}' is not a number of processes (give e.g. --hosts 2,2)", hosts, part));
    sizes.push_back(n);
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  int sum = 0;
  for (int n : sizes) sum += n;
  if (sum != ranks)
    throw Error(fmt::format("--hosts {} makes {} processes but -n is {}: the processes per host add up to -n", hosts,
                            sum, ranks));
  for (int h = 0; h < static_cast<int>(sizes.size()); ++h)
    for (int j = 0; j < sizes[h]; ++j) places.push_back({h, j, sizes[h]});
  return places;
}

namespace {

// This process's environment with `rank`'s variables set (replacing any already there).
std::vector<std::string> rank_environment(int rank, int ranks, const std::string& id, const RankPlace& place) {
  std::map<std::string, std::string> set = {
      {"CANOPY_RANK", std::to_string(rank)},       {"CANOPY_NRANKS", std::to_string(ranks)},
      {"CANOPY_UNIQUE_ID", id},                    {"CANOPY_LOCAL_RANK", std::to_string(place.local)},
      {"CANOPY_LOCAL_SIZE", std::to_string(place.local_size)}, {"RANK", std::to_string(rank)},
      {"WORLD_SIZE", std::to_string(ranks)},       {"LOCAL_RANK", std::to_string(place.local)},
      {"LOCAL_WORLD_SIZE", std::to_string(place.local_size)}};
  if (place.host >= 0) {
    set["CANOPY_HOST_ID"] = fmt::format("host{}", place.host);
    set["NCCL_HOSTID"] = fmt::format("host{}", place.host);
  }
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    if (!set.count(entry.substr(0, entry.find('=')))) env.push_back(entry);
  }
  for (const auto& [name, value] : set) env.push_back(name + "=" + value);
  return env;
}

pid_t spawn_rank(const std::vector<std::string>& program, const std::vector<std::string>& env) {
  std::vector<char*> argv, envp;
  for (const std::string& a : program) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Their own process group: a terminal's Ctrl-C reaches the launcher, which forwards it once.
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t defaults;
  sigemptyset(&defaults);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaddset(&defaults, sig);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  const int e = posix_spawnp(&pid, argv[0], nullptr, &attr, argv.data(), envp.data());
  posix_spawnattr_destroy(&attr);
  if (e != 0) {
    errno = e;
    return -1;
  }
  return pid;
}

// Exit status as a shell reports it: the code, or 128 + the signal that killed it.
int status_code(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }

std::string describe(int status) {
  return WIFEXITED(status) ? fmt::format("exited with status {}", WEXITSTATUS(status))
                           : fmt::format("was killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
}

// Waits for every rank; after the first failure stops the rest (SIGTERM, then SIGKILL past `grace`), unless
// `keep_going` (then they end by themselves).
int wait_for_ranks(int ranks, double grace_s, bool keep_going = false) {
  int alive = ranks, first_failure = 0;
  std::chrono::steady_clock::time_point stop_at{};
  bool stopping = false, killed = false;
  while (alive > 0) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, stopping && !killed ? WNOHANG : 0);
    if (pid == 0) {  // stopping, none exited yet: past the grace period, kill the rest
      if (std::chrono::steady_clock::now() >= stop_at) {
        forward_signal(SIGKILL);
        killed = true;
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      continue;
    }
    if (pid < 0) {
      if (errno == EINTR) continue;
      break;  // no children left
    }
    int rank = 0;
    while (rank < ranks && g_pids[rank].load() != pid) ++rank;
    if (rank == ranks) continue;
    g_pids[rank] = 0;
    --alive;
    if (status_code(status) != 0 && first_failure == 0) {
      first_failure = status_code(status);
      if (alive > 0 && keep_going) {
        fmt::print(stderr, "canopy run: rank {} (pid {}) {}; the other {} rank{} go on (--keep-going)\n", rank, pid,
                   describe(status), alive, alive == 1 ? "" : "s");
      } else if (alive > 0) {
        fmt::print(stderr, "canopy run: rank {} (pid {}) {}; stopping the other {} rank{}\n", rank, pid,
                   describe(status), alive, alive == 1 ? "" : "s");
        forward_signal(SIGTERM);
        stopping = true;
        stop_at = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                          std::chrono::duration<double>(grace_s));
      } else {
        fmt::print(stderr, "canopy run: rank {} (pid {}) {}\n", rank, pid, describe(status));
      }
    }
  }
  return first_failure;
}

int run_ranks(const RunArgs& args) {
  if (args.ranks < 1 || args.ranks > kMaxRanks)
    throw Error(fmt::format("-n {}: give the number of ranks, 1 to {}", args.ranks, kMaxRanks));
  if (args.program.empty()) throw Error("no program: give it after --, e.g. canopy run -n 2 -- ./my_program --flag");
  UniqueId id;
  if (Status s = make_unique_id(&id); !s.ok()) throw Error("the bootstrap root could not start: " + s.message());
  const std::string id_text = to_string(id);
  const std::vector<RankPlace> places = host_places(args.ranks, args.hosts);
  struct sigaction forward {};
  forward.sa_handler = forward_signal;
  sigemptyset(&forward.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaction(sig, &forward, nullptr);
  for (int r = 0; r < args.ranks; ++r) {
    const pid_t pid = spawn_rank(args.program, rank_environment(r, args.ranks, id_text, places[r]));
    if (pid < 0) {
      const int e = errno;
      fmt::print(stderr, "canopy run: cannot start '{}' for rank {}: {}\n", args.program[0], r, std::strerror(e));
      forward_signal(SIGTERM);
      g_count = r;
      wait_for_ranks(r, args.grace_s);
      return 127;
    }
    g_pids[r] = pid;
    g_count = r + 1;
  }
  return wait_for_ranks(args.ranks, args.grace_s, args.keep_going);
}

}  // namespace

int run_processes(int ranks, const std::vector<std::string>& program) {
  RunArgs args;
  args.ranks = ranks;
  args.program = program;
  return run_ranks(args);
}

void add_run_command(CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* cmd = app.add_subcommand("run", "start N processes of a program, one per rank (as torchrun or mpirun)");
  cmd->add_option("-n,--nranks", args->ranks, "how many ranks (processes) to start")->required();
  cmd->add_option("--hosts", args->hosts,
                  "make \"hosts\" on this machine: processes per host, e.g. 2,2 or 1,2,1 (summing to -n), ranks in "
                  "host order; each gets CANOPY_HOST_ID=hostH and NCCL_HOSTID=hostH, and LOCAL_RANK, "
                  "LOCAL_WORLD_SIZE, CANOPY_LOCAL_RANK, CANOPY_LOCAL_SIZE per host");
  cmd->add_option("--grace", args->grace_s,
                  "seconds the other ranks get to end after one fails (SIGTERM), before SIGKILL (default 10)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--keep-going", args->keep_going,
               "when a rank fails, let the others end by themselves (to see how they handle the loss) instead of "
               "stopping them");
  cmd->add_option("program", args->program, "the program and its arguments, after --")->required();
  cmd->footer(
      "Each rank gets CANOPY_RANK, CANOPY_NRANKS, CANOPY_UNIQUE_ID (the bootstrap id: its root runs in this\n"
      "launcher), CANOPY_LOCAL_RANK and CANOPY_LOCAL_SIZE, and torchrun's RANK, WORLD_SIZE, LOCAL_RANK,\n"
      "LOCAL_WORLD_SIZE. SIGINT, SIGTERM, SIGHUP and SIGQUIT are forwarded to every rank. When a rank fails the\n"
      "others get SIGTERM, then SIGKILL after --grace; the exit status is the first failing rank's (128 + N for\n"
      "signal N, 127 when the program cannot start). With --keep-going the others are left to end by\n"
      "themselves (a multi-process communicator reports a lost rank within seconds).\n"
      "\n"
      "--hosts A,B,... tests the multi-host runtime on one machine (docs/multi-host.md): ranks 0..A-1 are\n"
      "host0, the next B host1, ...; each rank gets CANOPY_HOST_ID=hostH (Canopy's host grouping) and\n"
      "NCCL_HOSTID=hostH (so the real NCCL between the hosts treats them as separate nodes), and the local\n"
      "variables count within its host. On one GPU add NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1.\n"
      "\n"
      "Examples:\n"
      "  canopy run -n 4 -- ./my_program                 four ranks of a Canopy program\n"
      "  canopy run -n 2 -- sh -c 'echo $CANOPY_RANK'    what each rank sees\n"
      "  canopy run -n 4 --hosts 2,2 -- canopy_mp_check --topology detect   two \"hosts\" of two ranks");
  cmd->callback([args] {
    const int code = run_ranks(*args);
    if (code != 0) throw CLI::RuntimeError(code);
  });
}

}  // namespace canopy::cli
