// canopy_nccl_check --ranks-here K: this process holds K ranks (CANOPY_RANK x K .. + K - 1 of CANOPY_NRANKS x K), one
// handle each, initialised from one thread inside one group as nccl-tests -g K and JAX do (per rank cudaSetDevice,
// then ncclCommInitRank), on GPU (rank mod the visible GPUs) with --spread 1, else all on GPU 0. Then, for each count,
// an allreduce (sum) and a broadcast from the last rank, each one group over the handles, every output element
// checked; ncclCommSplit of the handles in one group (keys reversing the ranks; every rank here: the splits meet in
// the process, else each is collective across the processes; --split-alone 1 with one rank here: outside a group, as
// torch's new_group splits) and an allreduce and a broadcast on the children; then
// ncclCommDestroy of each child and each handle in turn from this thread, timed. Prints "nccl ranks here P: N
// elements checked, W wrong", "nccl ranks here P: split: N elements checked, W wrong" and "process P: destroyed K
// handles in T ms".
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "tests/gpu/processes/nccl_check.hpp"

namespace canopy::nccl_check {

namespace {

// Rank r's input: (r + 1) x (j mod 13 + 1), exact in float for the sums here.
float input_of(int rank, std::size_t j) { return static_cast<float>((rank + 1) * static_cast<int>(j % 13 + 1)); }

struct Here {
  std::vector<ncclComm_t> comms;
  std::vector<int> devices;
  std::vector<cudaStream_t> streams;
  std::vector<float*> send, recv;
};

// One group over every handle here: `issue(k)` makes handle k's call.
template <typename Issue>
bool group(const Here& h, const char* what, Issue issue) {
  if (!ok(ncclGroupStart(), "ncclGroupStart", nullptr)) return false;
  for (std::size_t k = 0; k < h.comms.size(); ++k) {
    if (!cuda_ok(cudaSetDevice(h.devices[k]), "cudaSetDevice")) return false;
    if (!ok(issue(k), what, h.comms[k])) return false;
  }
  if (!ok(ncclGroupEnd(), what, h.comms[0])) return false;
  for (std::size_t k = 0; k < h.comms.size(); ++k)
    if (!cuda_ok(cudaSetDevice(h.devices[k]), "cudaSetDevice") ||
        !cuda_ok(cudaStreamSynchronize(h.streams[k]), "cudaStreamSynchronize"))
      return false;
  return true;
}

}  // namespace

int check_ranks_here(int process, int processes, const CheckArgs& a, const ncclUniqueId& id) {
  const int here = a.ranks_here, nranks = processes * here, first = process * here;
  int gpus = 0;
  if (!cuda_ok(cudaGetDeviceCount(&gpus), "cudaGetDeviceCount")) return 1;
  Here h;
  h.comms.assign(here, nullptr);
  if (!ok(ncclGroupStart(), "ncclGroupStart", nullptr)) return 1;
  for (int k = 0; k < here; ++k) {
    h.devices.push_back(a.spread ? (first + k) % gpus : 0);
    if (!cuda_ok(cudaSetDevice(h.devices[k]), "cudaSetDevice")) return 1;
    if (!ok(ncclCommInitRank(&h.comms[k], nranks, id, first + k), "ncclCommInitRank", nullptr)) return 1;
  }
  if (!ok(ncclGroupEnd(), "ncclGroupEnd (the inits)", h.comms[0])) return 1;
  const std::vector<std::size_t> counts = a.counts.empty() ? std::vector<std::size_t>{1, 1031, 262147, 4194307}
                                                           : a.counts;
  std::size_t most = 0;
  for (std::size_t n : counts) most = std::max(most, n);
  h.streams.assign(here, nullptr);
  h.send.assign(here, nullptr);
  h.recv.assign(here, nullptr);
  for (int k = 0; k < here; ++k) {
    if (!cuda_ok(cudaSetDevice(h.devices[k]), "cudaSetDevice") ||
        !cuda_ok(cudaStreamCreate(&h.streams[k]), "cudaStreamCreate") ||
        !cuda_ok(cudaMalloc(&h.send[k], most * sizeof(float)), "cudaMalloc") ||
        !cuda_ok(cudaMalloc(&h.recv[k], most * sizeof(float)), "cudaMalloc"))
      return 1;
  }
  std::size_t checked = 0, wrong = 0;
  std::vector<float> host(most);
  const auto check = [&](int k, std::size_t n, auto expected) {
    if (!cuda_ok(cudaSetDevice(h.devices[k]), "cudaSetDevice") ||
        !cuda_ok(cudaMemcpy(host.data(), h.recv[k], n * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy"))
      return false;
    for (std::size_t j = 0; j < n; ++j, ++checked)
      if (host[j] != expected(j) && wrong++ < 3)
        fmt::print(stderr, "rank {}: count {} element {} is {}, expected {}\n", first + k, n, j, host[j], expected(j));
    return true;
  };
  // One round on the handles of `x` (the parent's or the split's, each on its parent's buffers): every rank's input,
  // an allreduce, then a broadcast from x's rank `root`, which is the parent's rank `root_parent`.
  const auto round = [&](const Here& x, std::size_t n, int root, int root_parent, const std::string& what) {
    for (int k = 0; k < here; ++k) {
      for (std::size_t j = 0; j < n; ++j) host[j] = input_of(first + k, j);
      if (!cuda_ok(cudaSetDevice(h.devices[k]), "cudaSetDevice") ||
          !cuda_ok(cudaMemcpy(h.send[k], host.data(), n * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy"))
        return false;
    }
    if (!group(x, ("ncclAllReduce" + what).c_str(), [&](std::size_t k) {
          return ncclAllReduce(x.send[k], x.recv[k], n, ncclFloat, ncclSum, x.comms[k], x.streams[k]);
        }))
      return false;
    const float ranks_sum = static_cast<float>(nranks * (nranks + 1) / 2);
    for (int k = 0; k < here; ++k)
      if (!check(k, n, [&](std::size_t j) { return ranks_sum * static_cast<float>(j % 13 + 1); })) return false;
    if (!group(x, ("ncclBroadcast" + what).c_str(), [&](std::size_t k) {
          return ncclBroadcast(x.send[k], x.recv[k], n, ncclFloat, root, x.comms[k], x.streams[k]);
        }))
      return false;
    for (int k = 0; k < here; ++k)
      if (!check(k, n, [&](std::size_t j) { return input_of(root_parent, j); })) return false;
    return true;
  };
  for (std::size_t n : counts)
    if (!round(h, n, nranks - 1, nranks - 1, "")) return 1;
  fmt::print("nccl ranks here {}: {} elements checked, {} wrong\n", process, checked, wrong);
  // ncclCommSplit of this process's handles in one group, one color, keys reversing the ranks: with every rank here
  // the splits meet in the process (local_split.hpp); else each handle is joined apart and its split is collective
  // across the processes, so the group's run at once (joined_split.hpp). The children's ranks, an allreduce and a
  // broadcast from child rank 0 (the parent's last rank) checked on them.
  std::vector<ncclComm_t> children;
  {
    const std::size_t before = checked, wrong_before = wrong;
    Here c = h;
    c.comms.assign(here, nullptr);
    if (a.split_alone && here != 1) {
      fmt::print(stderr, "--split-alone 1 needs --ranks-here 1: {} handles split one after another from one thread "
                 "would wait for each other\n", here);
      return 1;
    }
    if (!a.split_alone && !ok(ncclGroupStart(), "ncclGroupStart", nullptr)) return 1;
    for (int k = 0; k < here; ++k)
      if (!ok(ncclCommSplit(h.comms[k], 0, nranks - 1 - (first + k), &c.comms[k], nullptr), "ncclCommSplit",
              h.comms[k]))
        return 1;
    if (!a.split_alone && !ok(ncclGroupEnd(), "ncclGroupEnd (the splits)", h.comms[0])) return 1;
    children = c.comms;
    for (int k = 0; k < here; ++k) {
      int rank = -1, count = -1;
      if (!ok(ncclCommUserRank(c.comms[k], &rank), "ncclCommUserRank", c.comms[k]) ||
          !ok(ncclCommCount(c.comms[k], &count), "ncclCommCount", c.comms[k]))
        return 1;
      if (rank != nranks - 1 - (first + k) || count != nranks) {
        ++wrong;
        fmt::print(stderr, "split: rank {}'s child is rank {} of {}, expected {} of {}\n", first + k, rank, count,
                   nranks - 1 - (first + k), nranks);
      }
    }
    if (!round(c, std::min<std::size_t>(most, 262147), 0, nranks - 1, " (split)")) return 1;
    fmt::print("nccl ranks here {}: split: {} elements checked, {} wrong\n", process, checked - before,
               wrong - wrong_before);
  }
  for (int k = 0; k < here; ++k) {
    (void)cudaSetDevice(h.devices[k]);
    (void)cudaFree(h.send[k]);
    (void)cudaFree(h.recv[k]);
    (void)cudaStreamDestroy(h.streams[k]);
  }
  const auto start = std::chrono::steady_clock::now();
  bool ended = true;
  for (ncclComm_t child : children) ended = ok(ncclCommDestroy(child), "ncclCommDestroy (split)", nullptr) && ended;
  for (int k = 0; k < here; ++k) ended = ok(ncclCommDestroy(h.comms[k]), "ncclCommDestroy", nullptr) && ended;
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
  fmt::print("process {}: destroyed {} handles in {} ms\n", process, here, ms);
  return wrong == 0 && ended ? 0 : 1;
}

}  // namespace canopy::nccl_check
