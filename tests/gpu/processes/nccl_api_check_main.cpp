// canopy_nccl_check: one process of a multi-process check of the NCCL API (libcanopy_nccl's entry points, linked from
// its objects), started by `canopy run -n N` (CANOPY_RANK, CANOPY_NRANKS, CANOPY_UNIQUE_ID), every process on GPU 0.
// It initialises with a non-blocking config (ncclInProgress, then ncclCommGetAsyncError until ncclSuccess), runs one
// --mode (nccl_check.hpp; each in its own file), then ends the communicator as --teardown says and exits with the
// mode's code (0: all right; 1: wrong or failed; 2: bad arguments).
//
//   canopy run -n 2 -- canopy_nccl_check --mode graphs --replays 100 --counts 1031,262147,4194307
//   canopy run -n 2 -- canopy_nccl_check --mode teardown --teardown exit --id-file /tmp/id
//
// Options: --mode premul|graphs|reuse|bad-argument|teardown|borrowed|watchdog-abort,
// --teardown destroy|finalize|abort|exit,
// --id-file PATH (rank 0 makes the id with ncclGetUniqueId, so the bootstrap root runs in its process as under torchrun, and writes
// it there; the others read it), --capture global|thread|relaxed, --counts LIST, --replays N, --iterations N,
// --bad-rank R, --bad-call K, --bad null|oversized, --spread 1, --ranks-here K (nccl_check_ranks_here.cpp: K ranks
// in each process, initialised in one group, as nccl-tests -g K), --split-alone 1 (with --ranks-here 1: the split
// outside a group), --expect real|canopy|refused (borrowed: nccl_check_borrowed.cpp), --hostid 1 (this process's own
// NCCL_HOSTID, set before the init), --init-all K (nccl_check_point_to_point.cpp: K ranks in this process on GPU 0
// through ncclCommInitAll, their sends and receives served by Canopy; run it as one process).
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "runtime/transport/bootstrap/unique_id.hpp"
#include "tests/gpu/processes/nccl_check.hpp"

namespace canopy::nccl_check {

bool ok(ncclResult_t r, const char* what, ncclComm_t comm) {
  if (r == ncclSuccess) return true;
  fmt::print(stderr, "{} failed: {} ({})\n", what, ncclGetErrorString(r), ncclGetLastError(comm));
  return false;
}

bool cuda_ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  fmt::print(stderr, "{} failed: {}\n", what, cudaGetErrorString(e));
  return false;
}

long long now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace canopy::nccl_check

namespace {

using namespace canopy::nccl_check;

int env_int(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : -1;
}

bool parse(int argc, char** argv, CheckArgs* a) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--mode") a->mode = v;
    else if (k == "--teardown") a->teardown = v;
    else if (k == "--id-file") a->id_file = v;
    else if (k == "--capture") a->capture = v;
    else if (k == "--replays") a->replays = std::atoi(v.c_str());
    else if (k == "--iterations") a->iterations = std::atoi(v.c_str());
    else if (k == "--bad-rank") a->bad_rank = std::atoi(v.c_str());
    else if (k == "--bad-call") a->bad_call = std::atoi(v.c_str());
    else if (k == "--bad") a->bad = v;
    else if (k == "--bad-kind") a->bad_kind = v;
    else if (k == "--spread") a->spread = v == "1";
    else if (k == "--ranks-here") a->ranks_here = std::max(1, std::atoi(v.c_str()));
    else if (k == "--split-alone") a->split_alone = v == "1";
    else if (k == "--expect") a->expect = v;
    else if (k == "--hostid") a->hostid = v == "1";
    else if (k == "--init-all") a->init_all = std::max(1, std::atoi(v.c_str()));
    else if (k == "--counts") {
      for (std::size_t at = 0; at < v.size();) {
        const std::size_t comma = std::min(v.find(',', at), v.size());
        a->counts.push_back(std::stoull(v.substr(at, comma - at)));
        at = comma + 1;
      }
    } else {
      fmt::print(stderr, "canopy_nccl_check: unknown option {}\n", k);
      return false;
    }
  }
  return (argc % 2) == 1;
}

// The id: rank 0 makes it and writes it to `path` (written aside, then renamed); the others wait for it (60 s).
bool id_through_file(int rank, const std::string& path, ncclUniqueId* id) {
  if (rank == 0) {
    if (!ok(ncclGetUniqueId(id), "ncclGetUniqueId", nullptr)) return false;
    const std::string aside = path + ".part";
    std::ofstream(aside, std::ios::binary).write(id->internal, sizeof id->internal);
    std::filesystem::rename(aside, path);
    return true;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream in(path, std::ios::binary);
    if (in && in.read(id->internal, sizeof id->internal)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  fmt::print(stderr, "rank {}: no id in {} after 60 s\n", rank, path);
  return false;
}

int run_mode(const CheckRank& c) {
  const std::string& m = c.args->mode;
  if (m == "premul") return check_premul(c);
  if (m == "graphs") return check_graphs(c);
  if (m == "reuse") return check_reuse(c);
  if (m == "bad-argument") return check_bad_argument(c);
  if (m == "teardown") return check_teardown_work(c);
  if (m == "borrowed") return check_borrowed(c);
  if (m == "watchdog-abort") return check_watchdog_abort(c);
  fmt::print(stderr, "canopy_nccl_check: unknown mode {}\n", m);
  return 2;
}

// Ends the communicator as --teardown says ("exit": not at all, the process just ends); prints when it starts (the
// test measures from there until every process has ended).
bool tear_down(const CheckRank& c) {
  const std::string& t = c.args->teardown;
  fmt::print("process {}: teardown {} starts at {} ms\n", c.rank, t, now_ms());
  std::fflush(stdout);
  bool right = true;
  if (t == "finalize") right = ok(ncclCommFinalize(c.comm), "ncclCommFinalize", c.comm);
  if (t == "destroy" || t == "finalize") right = ok(ncclCommDestroy(c.comm), "ncclCommDestroy", nullptr) && right;
  else if (t == "abort") right = ok(ncclCommAbort(c.comm), "ncclCommAbort", nullptr);
  else if (t != "exit") {
    fmt::print(stderr, "canopy_nccl_check: unknown teardown {}\n", t);
    return false;
  }
  if (t != "exit") fmt::print("process {}: teardown {} returned at {} ms\n", c.rank, t, now_ms());
  return right;
}

}  // namespace

int main(int argc, char** argv) {
  // Line-buffered: the processes share one pipe, and a line written whole (under PIPE_BUF) is never cut by
  // another process's output (the real NCCL's INFO lines included), so the summary lines stay greppable.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  CheckArgs args;
  const int rank = env_int("CANOPY_RANK"), nranks = env_int("CANOPY_NRANKS");
  if (!parse(argc, argv, &args) || rank < 0 || nranks < 1) {
    fmt::print(stderr, "run me under `canopy run -n N -- canopy_nccl_check [--mode M] ...`\n");
    return 2;
  }
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus < 1) return 2;
  if (cudaSetDevice(args.spread ? rank % gpus : 0) != cudaSuccess) return 2;
  if (args.init_all > 0) return check_point_to_point(args);  // no id: ncclCommInitAll
  ncclUniqueId id;
  if (!args.id_file.empty()) {
    if (!id_through_file(rank, args.id_file, &id)) return 1;
  } else {
    canopy::UniqueId cid;
    const char* text = std::getenv("CANOPY_UNIQUE_ID");
    if (!text || !canopy::parse_unique_id(text, &cid).ok()) {
      fmt::print(stderr, "CANOPY_UNIQUE_ID is not set: run me under `canopy run -n N`, or pass --id-file\n");
      return 2;
    }
    std::memcpy(id.internal, cid.bytes.data(), sizeof id.internal);
  }
  // Its own NCCL_HOSTID: the real NCCL then takes processes sharing a GPU for processes of separate hosts, so a real
  // communicator can be made beside Canopy's (docs/nccl-api.md).
  if (args.hostid) setenv("NCCL_HOSTID", fmt::format("canopy-nccl-check-{}", rank).c_str(), 1);
  if (args.ranks_here > 0) return check_ranks_here(rank, nranks, args, id);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  const ncclResult_t init = ncclCommInitRankConfig(&comm, nranks, id, rank, &config);
  if (init != ncclInProgress && !ok(init, "ncclCommInitRankConfig", comm)) return 1;
  ncclResult_t state = ncclInProgress;
  while (state == ncclInProgress) {
    if (!ok(ncclCommGetAsyncError(comm, &state), "ncclCommGetAsyncError", comm)) return 1;
    std::this_thread::yield();
  }
  if (!ok(state, "the non-blocking init", comm)) return 1;
  cudaStream_t stream = nullptr;
  if (!cuda_ok(cudaStreamCreate(&stream), "cudaStreamCreate")) return 1;
  const CheckRank c{rank, nranks, comm, stream, &args};
  const int code = run_mode(c);
  const bool ended = tear_down(c);
  return code != 0 ? code : ended ? 0 : 1;
}
