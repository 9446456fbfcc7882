// CollectiveBuffers (see collective_buffers.hpp).
#include "bench/harness/collective_buffers.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "bench/harness/gpu_reference_check.hpp"
#include "runtime/cuda/cuda_check.hpp"
#include "runtime/cuda/gpu_devices.hpp"

namespace canopy {

namespace {

constexpr std::uint64_t kStagingBytes = std::uint64_t{256} << 20;
// Elements of each output checked on the host beside the GPU's check of them all.
constexpr std::uint64_t kHostSampleElements = std::uint64_t{1} << 16;

}  // namespace

std::vector<int> own_ordinals(const Communicator& comm) {
  std::vector<int> ordinals;
  for (int r = comm.first_own_rank(); r < comm.first_own_rank() + comm.own_ranks(); ++r)
    if (std::find(ordinals.begin(), ordinals.end(), comm.device_of_rank(r)) == ordinals.end())
      ordinals.push_back(comm.device_of_rank(r));
  return ordinals;
}

Status CollectiveBuffers::create(const Communicator& comm, std::uint64_t send_bytes, std::uint64_t recv_bytes,
                                 const PatternKernels& patterns, std::unique_ptr<CollectiveBuffers>* out,
                                 BufferMemory memory) {
  std::unique_ptr<CollectiveBuffers> b(new CollectiveBuffers());
  b->patterns_ = &patterns;
  b->send_bytes_ = send_bytes;
  b->recv_bytes_ = recv_bytes;
  b->first_ = comm.first_own_rank();
  b->device_ordinals_ = own_ordinals(comm);
  CurrentDevice keep;
  for (int ordinal : b->device_ordinals_) {
    cudaStream_t s = nullptr;
    CANOPY_CUDA_RETURN_STATUS(cudaSetDevice(ordinal));
    CANOPY_CUDA_RETURN_STATUS(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    b->device_streams_.push_back(s);
  }
  for (int r = b->first_; r < b->first_ + comm.own_ranks(); ++r) {
    const int ordinal = comm.device_of_rank(r);
    b->ordinal_of_rank_.push_back(ordinal);
    const std::size_t d = std::find(b->device_ordinals_.begin(), b->device_ordinals_.end(), ordinal) -
                          b->device_ordinals_.begin();
    b->rank_streams_.push_back(b->device_streams_[d]);
    void* send = nullptr;
    void* recv = nullptr;
    CANOPY_CUDA_RETURN_STATUS(cudaSetDevice(ordinal));
    if (memory == BufferMemory::vmm) {
      for (std::uint64_t bytes : {send_bytes, recv_bytes}) {
        std::unique_ptr<ShareableMemory> m;
        if (Status s = ShareableMemory::create(ordinal, std::max<std::uint64_t>(bytes, 16), {}, &m); !s.ok())
          return Status(s.code(), fmt::format("allocating {} bytes for rank {} (cuMemCreate): {}", bytes, r,
                                              s.message()));
        b->vmm_.push_back(std::move(m));
      }
      b->send_.push_back(b->vmm_[b->vmm_.size() - 2]->pointer());
      b->recv_.push_back(b->vmm_.back()->pointer());
      continue;
    }
    if (memory == BufferMemory::pool) {
      for (void** p : {&send, &recv}) {
        const std::uint64_t bytes = p == &send ? send_bytes : recv_bytes;
        if (const cudaError_t e = cudaMallocAsync(p, std::max<std::uint64_t>(bytes, 16), b->rank_streams_.back());
            e != cudaSuccess)
          return cuda_status(e, fmt::format("allocating {} bytes for rank {} (cudaMallocAsync)", bytes, r));
      }
      CANOPY_CUDA_RETURN_STATUS(cudaStreamSynchronize(b->rank_streams_.back()));
      b->send_.push_back(send);
      b->recv_.push_back(recv);
      continue;
    }
    const cudaError_t es = cudaMalloc(&send, std::max<std::uint64_t>(send_bytes, 16));
    if (es == cudaSuccess) b->send_.push_back(send);
    else return cuda_status(es, fmt::format("allocating {} bytes for send buffer of rank {}", send_bytes, r));
    const cudaError_t er = cudaMalloc(&recv, std::max<std::uint64_t>(recv_bytes, 16));
    if (er == cudaSuccess) b->recv_.push_back(recv);
    else return cuda_status(er, fmt::format("allocating {} bytes for receive buffer of rank {}", recv_bytes, r));
  }
  const char* on_host = std::getenv("CANOPY_CHECK_ON_HOST");
  b->check_on_host_ = on_host && std::string(on_host) == "1";
  b->host_bytes_ = kStagingBytes;
  CANOPY_CUDA_RETURN_STATUS(cudaMallocHost(&b->host_, std::max<std::uint64_t>(b->host_bytes_, 16)));
  *out = std::move(b);
  return Status();
}

CollectiveBuffers::~CollectiveBuffers() {
  CurrentDevice keep;
  for (std::size_t d = 0; d < device_streams_.size(); ++d) {
    (void)cudaSetDevice(device_ordinals_[d]);
    (void)cudaStreamSynchronize(device_streams_[d]);
    (void)cudaStreamDestroy(device_streams_[d]);
  }
  if (vmm_.empty()) {
    for (void* p : send_) (void)cudaFree(p);
    for (void* p : recv_) (void)cudaFree(p);
  }
  vmm_.clear();
  if (host_) (void)cudaFreeHost(host_);
  (void)cudaGetLastError();
}

bool CollectiveBuffers::fits(const CheckSpec& s) const {
  const std::uint64_t elem = static_cast<std::uint64_t>(size_of(s.dtype));
  for (int r = first_; r < first_ + own(); ++r) {
    if (input_elements(s, r) * elem > send_bytes_) return false;
    if (output_elements(s, r) * elem > recv_bytes_) return false;
  }
  return true;
}

Status CollectiveBuffers::set_up(const CheckSpec& s, bool in_place, CollectiveCall* call) {
  const int n = s.ranks;
  const std::uint64_t elem = static_cast<std::uint64_t>(size_of(s.dtype));
  const ReduceOp input_op = combines(s) ? s.op : ReduceOp::sum;
  if (s.program && in_place && !s.program->program.runs_in_place())
    return Status(StatusCode::invalid_argument,
                  fmt::format("algorithm {}: this program runs out of place; there is no in-place layout to set up",
                              s.program->program.name()));
  // The in-place layout: a program's goal's (alltoall and custom: send = recv), else the collective's.
  const Collective shape =
      s.program ? s.program->program.collective().value_or(Collective::allreduce) : s.collective;
  const unsigned char poison = 0xff;  // NaN in every float type; -1 / 255 in the integer ones
  call_send_.assign(own(), nullptr);
  call_recv_.assign(own(), nullptr);
  CurrentDevice keep;
  for (int k = 0; k < own(); ++k) {
    const int r = first_ + k;
    CANOPY_CUDA_RETURN_STATUS(cudaSetDevice(ordinal_of_rank_[k]));
    cudaStream_t stream = rank_streams_[k];
    char* send = static_cast<char*>(send_[k]);
    char* recv = static_cast<char*>(recv_[k]);
    const std::uint64_t out_bytes = (s.program                               ? output_elements(s, r)
                                     : s.collective == Collective::allgather ? s.count * n
                                                                             : s.count) *
                                    elem;
    auto fill = [&](void* dst, std::uint64_t elements) {
      return patterns_->fill(dst, elements, s.dtype, input_op, s.seed, r, 0, stream);
    };
    Status st;
    if (!in_place) {
      st = fill(send, input_elements(s, r));
      call_send_[k] = send;
      call_recv_[k] = recv;
      CANOPY_CUDA_RETURN_STATUS(cudaMemsetAsync(recv, poison, out_bytes, stream));
    } else {
      const std::uint64_t in_elements = input_elements(s, r);
      switch (shape) {
        case Collective::allgather:  // the input is this rank's slice of the output
          CANOPY_CUDA_RETURN_STATUS(cudaMemsetAsync(recv, poison, out_bytes, stream));
          st = fill(recv + r * in_elements * elem, in_elements);
          call_send_[k] = recv + r * in_elements * elem;
          call_recv_[k] = recv;
          break;
        case Collective::reducescatter:  // the output is this rank's slice of the input
          st = fill(send, in_elements);
          call_send_[k] = send;
          call_recv_[k] = send + r * (out_bytes / elem) * elem;
          break;
        case Collective::broadcast:
          if (r == s.root) st = fill(recv, in_elements);
          else CANOPY_CUDA_RETURN_STATUS(cudaMemsetAsync(recv, poison, out_bytes, stream));
          call_send_[k] = recv;
          call_recv_[k] = recv;
          break;
        default:  // allreduce, reduce (and alltoall programs): the input is where the output goes
          st = fill(recv, in_elements);
          call_send_[k] = recv;
          call_recv_[k] = recv;
      }
    }
    if (!st.ok()) return st;
  }
  call->collective = s.collective;
  call->program = s.program ? &s.program->program : nullptr;
  call->send = call_send_;
  call->recv = call_recv_;
  call->count = s.count;
  call->dtype = s.dtype;
  call->op = s.op;
  call->root = s.root;
  call->streams = rank_streams_;
  return Status();
}

Status CollectiveBuffers::run_checked(Communicator& comm, const CheckSpec& spec, bool in_place, CheckResult* result) {
  CollectiveCall call;
  if (Status s = set_up(spec, in_place, &call); !s.ok()) return s;
  if (Status s = comm.run(call); !s.ok()) return s;
  return check(spec, call, result);
}

Status CollectiveBuffers::synchronize() {
  CurrentDevice keep;
  for (std::size_t d = 0; d < device_streams_.size(); ++d) {
    CANOPY_CUDA_RETURN_STATUS(cudaSetDevice(device_ordinals_[d]));
    CANOPY_CUDA_RETURN_STATUS(cudaStreamSynchronize(device_streams_[d]));
  }
  return Status();
}

Status CollectiveBuffers::check_window(const CheckSpec& s, int k, const void* output, std::uint64_t first,
                                       std::uint64_t n, CheckResult* result) {
  const std::uint64_t elem = static_cast<std::uint64_t>(size_of(s.dtype));
  const std::uint64_t per_copy = host_bytes_ / elem;
  for (std::uint64_t at = first; at < first + n; at += per_copy) {
    const std::uint64_t part = std::min(per_copy, first + n - at);
    CANOPY_CUDA_RETURN_STATUS(cudaMemcpy(host_, static_cast<const char*>(output) + at * elem, part * elem,
                                         cudaMemcpyDeviceToHost));
    const CheckResult c = check_outputs_part(s, {first_ + k}, {host_}, at, part);
    result->checked += c.checked;
    result->wrong += c.wrong;
    for (const std::string& e : c.examples)
      if (result->examples.size() < 5) result->examples.push_back(e);
  }
  return Status();
}

Status CollectiveBuffers::check_rank_on_host(const CheckSpec& s, int k, const void* output, CheckResult* result) {
  return check_window(s, k, output, 0, output_elements(s, first_ + k), result);
}

Status CollectiveBuffers::check_rank_on_gpu(const CheckSpec& s, int k, const void* output, CheckResult* result) {
  const int r = first_ + k;
  const std::uint64_t n = output_elements(s, r);
  CurrentDevice keep;
  CANOPY_CUDA_RETURN_STATUS(cudaSetDevice(ordinal_of_rank_[k]));
  GpuReferenceCheck gpu;
  if (Status st = gpu.start(*patterns_, s, r, output, rank_streams_[k]); !st.ok()) return st;
  // The control: a window of the output, at a place the seed picks, checked on the host as well, while the GPU works.
  const std::uint64_t sample = std::min(n, kHostSampleElements);
  const std::uint64_t at = n > sample ? (s.seed >> 7) % (n - sample + 1) : 0;
  CheckResult host;
  if (Status st = check_window(s, k, output, at, sample, &host); !st.ok()) return st;
  std::uint64_t lowest = 0;
  if (Status st = gpu.finish(&result->checked, &result->wrong, &lowest); !st.ok()) return st;
  if (result->wrong == 0) {
    if (host.wrong == 0) return Status();
    return Status(StatusCode::internal,
                  fmt::format("the GPU reference check passed rank {}'s output, but the host reference finds {} of "
                              "elements [{}, {}) wrong, e.g. {}: the check kernel (bench/harness/"
                              "reference_check_kernel.cpp) disagrees with collective_check.cpp",
                              r, host.wrong, at, at + sample, host.examples.empty() ? "" : host.examples[0]));
  }
  // The examples: the host's view of the elements from the first wrong one.
  CheckResult first_wrong;
  if (Status st = check_window(s, k, output, lowest, std::min<std::uint64_t>(n - lowest, 4096), &first_wrong);
      !st.ok())
    return st;
  if (first_wrong.wrong == 0)
    return Status(StatusCode::internal,
                  fmt::format("the GPU reference check finds {} of rank {}'s elements wrong, the first at element {}, "
                              "but the host reference finds it right: the check kernel (bench/harness/"
                              "reference_check_kernel.cpp) disagrees with collective_check.cpp",
                              result->wrong, r, lowest));
  result->examples = std::move(first_wrong.examples);
  return Status();
}

Status CollectiveBuffers::check(const CheckSpec& s, const CollectiveCall& call, CheckResult* result) {
  if (Status st = synchronize(); !st.ok()) return st;
  *result = CheckResult{};
  // Ranks (of this process: local indices k, rank first_ + k) checked against the reference (on their GPU, a window
  // on the host as well; or all on the host: check_on_host); where every rank must hold the same output
  // (same_output_on_every_rank: broadcast, allreduce, allgather, and programs that compute one of them exactly) one
  // rank, rotating with the seed, is checked against the reference and the others are compared with it bit for bit.
  std::vector<int> host_ranks;
  std::vector<int> same_as_host;
  if (s.collective == Collective::reduce && !s.program) {
    if (s.root >= first_ && s.root < first_ + own()) host_ranks.push_back(s.root - first_);
  } else if (!same_output_on_every_rank(s)) {
    for (int k = 0; k < own(); ++k) host_ranks.push_back(k);
  } else {
    const int pick = static_cast<int>(s.seed % static_cast<std::uint64_t>(own()));
    host_ranks.push_back(pick);
    for (int k = 0; k < own(); ++k)
      if (k != pick) same_as_host.push_back(k);
  }
  for (int k : host_ranks) {
    CheckResult c;
    const Status st =
        check_on_host_ ? check_rank_on_host(s, k, call.recv[k], &c) : check_rank_on_gpu(s, k, call.recv[k], &c);
    if (!st.ok()) return st;
    result->checked += c.checked;
    result->wrong += c.wrong;
    for (const std::string& e : c.examples)
      if (result->examples.size() < 5) result->examples.push_back(e);
  }
  if (same_as_host.empty()) return Status();
  const int reference = host_ranks[0];
  const std::uint64_t n = output_elements(s, first_ + reference);
  CurrentDevice keep;
  std::vector<unsigned long long*> counters(same_as_host.size(), nullptr);
  Status status;
  for (std::size_t k = 0; k < same_as_host.size() && status.ok(); ++k) {
    const int r = same_as_host[k];
    CANOPY_CUDA_RETURN_STATUS(cudaSetDevice(ordinal_of_rank_[r]));
    CANOPY_CUDA_RETURN_STATUS(cudaMallocAsync(reinterpret_cast<void**>(&counters[k]), 16, rank_streams_[r]));
    CANOPY_CUDA_RETURN_STATUS(cudaMemsetAsync(counters[k], 0, 8, rank_streams_[r]));
    CANOPY_CUDA_RETURN_STATUS(cudaMemsetAsync(counters[k] + 1, 0xff, 8, rank_streams_[r]));
    status = patterns_->count_mismatches(call.recv[r], call.recv[reference], n, s.dtype, counters[k], rank_streams_[r]);
  }
  for (std::size_t k = 0; k < same_as_host.size(); ++k) {
    const int r = same_as_host[k];
    if (!counters[k]) continue;
    unsigned long long m[2] = {0, 0};
    CANOPY_CUDA_RETURN_STATUS(cudaSetDevice(ordinal_of_rank_[r]));
    CANOPY_CUDA_RETURN_STATUS(cudaMemcpyAsync(m, counters[k], 16, cudaMemcpyDeviceToHost, rank_streams_[r]));
    CANOPY_CUDA_RETURN_STATUS(cudaFreeAsync(counters[k], rank_streams_[r]));
    CANOPY_CUDA_RETURN_STATUS(cudaStreamSynchronize(rank_streams_[r]));
    result->checked += n;
    result->wrong += m[0];
    if (m[0] && result->examples.size() < 5)
      result->examples.push_back(fmt::format("rank {} differs from rank {} (checked on the host) in {} elements, the "
                                             "first at element {}",
                                             first_ + r, first_ + reference, m[0], m[1]));
  }
  return status;
}

}  // namespace canopy
