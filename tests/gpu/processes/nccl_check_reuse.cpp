// canopy_nccl_check --mode reuse: collectives on buffers carved out of a pool at offsets that change every call, as
// PyTorch's caching allocator hands them out, with the pool freed and another of a different size allocated every few
// calls (cudaMalloc and ncclMemAlloc in turn: the driver tends to give the same addresses back, ncclMemAlloc's with
// new physical memory behind them), each pool registered (ncclCommRegister) and deregistered before it is freed. The
// count and case of every call come from the call number (alike on every rank); the offsets and pool sizes differ by
// rank. Every checked output element is compared: a stale mapping or registration of an earlier buffer would show.
// Prints "nccl rank R: reuse: N calls checked, W wrong".
#include <fmt/format.h>

#include <random>

#include "tests/gpu/processes/nccl_check.hpp"
#include "tests/gpu/processes/nccl_check_cases.hpp"

namespace canopy::nccl_check {

namespace {

constexpr std::size_t kAlign = 512;  // the caching allocator's block alignment

struct Pool {
  char* base = nullptr;
  std::size_t bytes = 0;
  bool nccl = false;  // from ncclMemAlloc
  void* handle = nullptr;
};

bool open_pool(const CheckRank& c, std::size_t bytes, bool nccl, Pool* p) {
  p->bytes = bytes;
  p->nccl = nccl;
  void* base = nullptr;
  if (nccl ? !ok(ncclMemAlloc(&base, bytes), "ncclMemAlloc", c.comm)
           : !cuda_ok(cudaMalloc(&base, bytes), "cudaMalloc pool"))
    return false;
  p->base = static_cast<char*>(base);
  return ok(ncclCommRegister(c.comm, p->base, bytes, &p->handle), "ncclCommRegister", c.comm);
}

bool close_pool(const CheckRank& c, Pool* p) {
  if (!p->base) return true;
  const bool deregistered = ok(ncclCommDeregister(c.comm, p->handle), "ncclCommDeregister", c.comm);
  const bool freed = p->nccl ? ok(ncclMemFree(p->base), "ncclMemFree", c.comm) : cuda_ok(cudaFree(p->base), "cudaFree");
  p->base = nullptr;
  return deregistered && freed;
}

std::size_t aligned(std::size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

}  // namespace

int check_reuse(const CheckRank& c) {
  std::vector<std::size_t> counts = c.args->counts;
  if (counts.empty()) counts = {1, 7, 1031, 65540, 262147, 1000003};
  std::size_t largest = 0;
  for (std::size_t n : counts) largest = std::max(largest, n);
  // Room for the largest call's two buffers (reduce-scatter's send and allgather's receive are nranks times the count).
  const std::size_t need = 2 * aligned(largest * c.nranks * sizeof(float)) + (std::size_t{4} << 20);
  std::mt19937_64 shared_rng(2024);           // alike on every rank: which case and count
  std::mt19937_64 own_rng(7919 + c.rank);     // this rank's own: pool sizes and offsets
  Pool pool;
  std::size_t wrong = 0, calls = 0;
  std::vector<float> got;
  for (int i = 0; i < c.args->iterations; ++i) {
    if (i % 5 == 0) {  // a new pool of another size, at (often) the same address
      if (!cuda_ok(cudaStreamSynchronize(c.stream), "cudaStreamSynchronize") || !close_pool(c, &pool)) return 1;
      const std::size_t extra = (own_rng() % 8) << 20;
      if (!open_pool(c, need + extra, (i / 5) % 2 == 1, &pool)) return 1;
    }
    const Case k = kCases[shared_rng() % std::size(kCases)];
    const std::size_t count = counts[shared_rng() % counts.size()];
    const int set = i;
    const std::size_t sn = send_elements(k, count, c.nranks), rn = recv_elements(k, count, c.nranks);
    const std::size_t send_bytes = aligned(sn * sizeof(float)), recv_bytes = aligned(rn * sizeof(float));
    // Carve: send at a random aligned offset, recv right after it or before it, somewhere else each call.
    const std::size_t room = pool.bytes - send_bytes - recv_bytes;
    const std::size_t at = (own_rng() % (room / kAlign + 1)) * kAlign;
    const bool recv_first = own_rng() % 2 == 1;
    char* send = pool.base + (recv_first ? at + recv_bytes : at);
    char* recv = in_place(k) ? send : pool.base + (recv_first ? at : at + send_bytes);
    const std::vector<float> in = inputs(k, count, c.rank, c.nranks, set);
    if (!in_place(k) && !cuda_ok(cudaMemsetAsync(recv, 0xff, rn * sizeof(float), c.stream), "cudaMemsetAsync"))
      return 1;
    if (!cuda_ok(cudaMemcpyAsync(send, in.data(), sn * sizeof(float), cudaMemcpyHostToDevice, c.stream),
                 "cudaMemcpyAsync input"))
      return 1;
    if (!ok(issue(k, send, recv, count, c.comm, c.stream), case_name(k), c.comm)) return 1;
    if (!cuda_ok(cudaStreamSynchronize(c.stream), "cudaStreamSynchronize")) return 1;
    ++calls;
    if (!recv_checked(k, c.rank, c.nranks)) continue;
    got.resize(rn);
    if (!cuda_ok(cudaMemcpy(got.data(), recv, rn * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy")) return 1;
    const std::string what = fmt::format("call {}: {} count {} at pool offset {}", i, case_name(k), count,
                                         static_cast<std::size_t>(send - pool.base));
    wrong += compare(got, expected(k, count, c.rank, c.nranks, set), what.c_str(), c.rank);
  }
  if (!cuda_ok(cudaStreamSynchronize(c.stream), "cudaStreamSynchronize") || !close_pool(c, &pool)) return 1;
  fmt::print("nccl rank {}: reuse: {} calls checked, {} wrong\n", c.rank, calls, wrong);
  return wrong == 0 ? 0 : 1;
}

}  // namespace canopy::nccl_check
