// canopy_nccl_check --mode borrowed: the calls made of sends and receives that the NCCL API once only borrowed from a
// real NCCL communicator beside Canopy's (Send/Recv, AlltoAll, Gather, Scatter; docs/nccl-api.md), each followed by
// an allreduce Canopy serves, every element of both checked. For each --counts value: Send/Recv around a ring in one
// group; PyTorch's all-to-all of grouped Send/Recv to every peer; ncclAlltoAll (out of place, then in place where
// --expect is real or canopy); ncclGather to the last rank;
// ncclScatter from rank 0.
//   --expect real     (with --hostid 1, CANOPY_NCCL_REAL=1 and CANOPY_NCCL_FORWARD naming them: a real communicator
//                     exists and takes them) every call works and its receive buffers hold what the peers sent;
//   --expect canopy   (Canopy serves them, across the processes too) the same;
//   --expect refused  (no real communicator: the ranks share a GPU without their own NCCL_HOSTID, or
//                     CANOPY_NCCL_REAL=0) every ungrouped call returns ncclInvalidUsage at once and every grouped one
//                     returns ncclSuccess with ncclGroupEnd returning ncclInvalidUsage; nothing is written to a receive
//                     buffer (it keeps its poison); ncclGetLastError says why.
// Either way the allreduce after each call must be right: a refused call never leaves the communicator or the
// thread's group in a state that loses a later collective. Prints "nccl rank R: borrowed: N elements checked, W wrong,
// F calls refused" and returns 0 when every call did what --expect says and nothing was wrong.
#include <fmt/format.h>

#include <cstring>
#include <string>
#include <vector>

#include "tests/gpu/processes/nccl_check.hpp"
#include "tests/gpu/processes/nccl_check_cases.hpp"

namespace canopy::nccl_check {

namespace {

constexpr float kPoison = -77.0f;

// What rank `from` sends rank `to` at element k (small integers: exact in float).
float sent(int from, int to, std::size_t k) { return static_cast<float>(from * 1000 + to * 100 + k % 89); }

struct Borrowed {
  const CheckRank& c;
  std::size_t count;
  float* send = nullptr;  // nranks * count: block p is what this rank sends rank p
  float* recv = nullptr;  // nranks * count
  std::size_t checked = 0, wrong = 0;
  int refused = 0, unexpected = 0;
  bool expect_real = true;

  bool set_up() {
    const std::size_t n = static_cast<std::size_t>(c.nranks) * count;
    if (!cuda_ok(cudaMalloc(&send, n * sizeof(float)), "cudaMalloc") ||
        !cuda_ok(cudaMalloc(&recv, n * sizeof(float)), "cudaMalloc"))
      return false;
    std::vector<float> in(n);
    for (int p = 0; p < c.nranks; ++p)
      for (std::size_t k = 0; k < count; ++k) in[p * count + k] = sent(c.rank, p, k);
    return cuda_ok(cudaMemcpy(send, in.data(), n * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy");
  }
  ~Borrowed() {
    cudaFree(send);
    cudaFree(recv);
  }
  bool poison() {
    const std::vector<float> p(static_cast<std::size_t>(c.nranks) * count, kPoison);
    return cuda_ok(cudaMemcpy(recv, p.data(), p.size() * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy");
  }
  // The receive buffer's first `blocks` blocks against `want` (a block per entry: the sender, or -1: untouched).
  void expect_blocks(const char* what, const std::vector<int>& from) {
    std::vector<float> got(from.size() * count);
    if (!cuda_ok(cudaMemcpyAsync(got.data(), recv, got.size() * sizeof(float), cudaMemcpyDeviceToHost, c.stream),
                 "copy") ||
        !cuda_ok(cudaStreamSynchronize(c.stream), "cudaStreamSynchronize")) {
      ++unexpected;
      return;
    }
    std::vector<float> want(got.size());
    for (std::size_t b = 0; b < from.size(); ++b)
      for (std::size_t k = 0; k < count; ++k)
        want[b * count + k] = from[b] < 0 || !expect_real ? kPoison : sent(from[b], c.rank, k);
    checked += got.size();
    wrong += compare(got, want, what, c.rank);
  }
  // What a call (or a group's ncclGroupEnd) returned, against --expect; `grouped`: it was the ncclGroupEnd.
  void expect_result(const char* what, ncclResult_t r) {
    if (expect_real) {
      if (!ok(r, what, c.comm)) ++unexpected;
      return;
    }
    const std::string why = ncclGetLastError(c.comm);
    if (r == ncclInvalidUsage && why.find("not served by Canopy") != std::string::npos) {
      ++refused;
      return;
    }
    fmt::print(stderr, "rank {}: {} returned {} ({}), not ncclInvalidUsage naming why it is not served\n", c.rank,
               what, ncclGetErrorString(r), why);
    ++unexpected;
  }
  // Inside a group every borrowed call returns ncclSuccess (a refusal is reported by ncclGroupEnd).
  void expect_queued(const char* what, ncclResult_t r) {
    if (r == ncclSuccess) return;
    fmt::print(stderr, "rank {}: {} inside a group returned {} ({})\n", c.rank, what, ncclGetErrorString(r),
               ncclGetLastError(c.comm));
    ++unexpected;
  }
  // An allreduce Canopy serves, checked: set `set` of nccl_check_cases' inputs.
  void allreduce_after(const char* after, int set) {
    const std::size_t n = 4099;
    float *in = nullptr, *out = nullptr;
    if (!cuda_ok(cudaMalloc(&in, n * sizeof(float)), "cudaMalloc") ||
        !cuda_ok(cudaMalloc(&out, n * sizeof(float)), "cudaMalloc")) {
      ++unexpected;
      return;
    }
    const std::vector<float> values = inputs(Case::allreduce, n, c.rank, c.nranks, set);
    std::vector<float> got(n, kPoison);
    if (cuda_ok(cudaMemcpy(in, values.data(), n * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy") &&
        cuda_ok(cudaMemcpy(out, got.data(), n * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy") &&
        ok(ncclAllReduce(in, out, n, ncclFloat32, ncclSum, c.comm, c.stream), "ncclAllReduce", c.comm) &&
        cuda_ok(cudaMemcpyAsync(got.data(), out, n * sizeof(float), cudaMemcpyDeviceToHost, c.stream), "copy") &&
        cuda_ok(cudaStreamSynchronize(c.stream), "cudaStreamSynchronize")) {
      checked += n;
      wrong += compare(got, expected(Case::allreduce, n, c.rank, c.nranks, set), after, c.rank);
    } else {
      ++unexpected;
    }
    cudaFree(in);
    cudaFree(out);
  }

  void run() {
    const int n = c.nranks, r = c.rank, next = (r + 1) % n, prev = (r + n - 1) % n;
    std::vector<int> none(n, -1), everyone(n);
    for (int p = 0; p < n; ++p) everyone[p] = p;
    // Send/Recv around a ring, in one group.
    poison();
    expect_queued("ncclGroupStart", ncclGroupStart());
    expect_queued("ncclSend", ncclSend(send + next * count, count, ncclFloat32, next, c.comm, c.stream));
    expect_queued("ncclRecv", ncclRecv(recv, count, ncclFloat32, prev, c.comm, c.stream));
    expect_result("ncclGroupEnd (Send/Recv around a ring)", ncclGroupEnd());
    expect_blocks("ring Send/Recv", {prev});
    allreduce_after("allreduce after the ring", 1);
    // PyTorch's all_to_all_single: a Send and a Recv to every peer, in one group.
    poison();
    expect_queued("ncclGroupStart", ncclGroupStart());
    for (int p = 0; p < n; ++p) {
      expect_queued("ncclSend", ncclSend(send + p * count, count, ncclFloat32, p, c.comm, c.stream));
      expect_queued("ncclRecv", ncclRecv(recv + p * count, count, ncclFloat32, p, c.comm, c.stream));
    }
    expect_result("ncclGroupEnd (grouped all-to-all)", ncclGroupEnd());
    expect_blocks("grouped Send/Recv all-to-all", everyone);
    allreduce_after("allreduce after the grouped all-to-all", 2);
    // ncclAlltoAll.
    poison();
    expect_result("ncclAlltoAll", ncclAlltoAll(send, recv, count, ncclFloat32, c.comm, c.stream));
    expect_blocks("ncclAlltoAll", everyone);
    allreduce_after("allreduce after ncclAlltoAll", 3);
    // ncclAlltoAll in place: the receive buffer holds what the send buffer holds, then goes out and comes back.
    if (expect_real) {
      const std::size_t bytes = static_cast<std::size_t>(n) * count * sizeof(float);
      if (!cuda_ok(cudaMemcpy(recv, send, bytes, cudaMemcpyDeviceToDevice), "cudaMemcpy")) ++unexpected;
      expect_result("ncclAlltoAll in place", ncclAlltoAll(recv, recv, count, ncclFloat32, c.comm, c.stream));
      expect_blocks("ncclAlltoAll in place", everyone);
      allreduce_after("allreduce after ncclAlltoAll in place", 6);
    }
    // ncclGather to the last rank: it receives every rank's block for it.
    poison();
    const int gather_root = n - 1;
    expect_result("ncclGather", ncclGather(send + gather_root * count, recv, count, ncclFloat32, gather_root, c.comm,
                                           c.stream));
    expect_blocks("ncclGather", r == gather_root ? everyone : none);
    allreduce_after("allreduce after ncclGather", 4);
    // ncclScatter from rank 0: block p of its send buffer goes to rank p.
    poison();
    expect_result("ncclScatter", ncclScatter(send, recv, count, ncclFloat32, 0, c.comm, c.stream));
    expect_blocks("ncclScatter", {0});
    allreduce_after("allreduce after ncclScatter", 5);
  }
};

}  // namespace

int check_borrowed(const CheckRank& c) {
  const CheckArgs& a = *c.args;
  if (a.expect != "real" && a.expect != "canopy" && a.expect != "refused") {
    fmt::print(stderr, "canopy_nccl_check --mode borrowed: --expect real|canopy|refused, not '{}'\n", a.expect);
    return 2;
  }
  std::size_t checked = 0, wrong = 0;
  int refused = 0, unexpected = 0;
  for (std::size_t count : a.counts.empty() ? std::vector<std::size_t>{1031, 262147} : a.counts) {
    Borrowed b{c, count};
    b.expect_real = a.expect != "refused";  // real or canopy: every call works
    if (!b.set_up()) return 1;
    b.run();
    checked += b.checked, wrong += b.wrong, refused += b.refused, unexpected += b.unexpected;
  }
  fmt::print("nccl rank {}: borrowed: {} elements checked, {} wrong, {} calls refused, {} unexpected results\n",
             c.rank, checked, wrong, refused, unexpected);
  return wrong == 0 && unexpected == 0 ? 0 : 1;
}

}  // namespace canopy::nccl_check
