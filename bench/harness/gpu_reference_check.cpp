// GpuReferenceCheck (see gpu_reference_check.hpp).
#include "bench/harness/gpu_reference_check.hpp"

#include <algorithm>
#include <cstring>

#include "bench/harness/float_tolerance.hpp"
#include "runtime/call/collective_call.hpp"
#include "runtime/cuda/cuda_check.hpp"

namespace canopy {

ReferenceCheckParams reference_check_params(const CheckSpec& s, int rank, ReferenceTables* tables) {
  ReferenceCheckParams p;
  const bool reduction = combines(s);
  const ReduceOp op = reduction ? s.op : ReduceOp::sum;
  p.n = output_elements(s, rank);
  p.seed = s.seed;
  p.op = static_cast<int>(op);
  p.prod = op == ReduceOp::prod ? 1 : 0;
  p.ranks = s.ranks;
  p.roundoff = unit_roundoff(s.dtype);
  p.division = std::min(p.roundoff, 0x1p-24);  // average_tolerance's: fp32 for the narrow floats
  p.underflow = underflow_error(s.dtype);
  if (s.program) {
    const ProgramOutputs& program = *s.program;
    p.kind = static_cast<int>(ReferenceKind::program);
    p.unit = s.count / static_cast<std::uint64_t>(program.program.chunks());
    std::size_t most = 0;
    for (const auto& from : program.sources[rank]) {
      tables->spans.push_back(static_cast<int>(tables->pairs.size() / 2));
      tables->spans.push_back(from ? static_cast<int>(from->size()) : -1);
      if (!from) continue;
      most = std::max(most, from->size());
      for (const auto& [q, c] : *from) tables->pairs.insert(tables->pairs.end(), {q, c});
    }
    for (std::size_t n = 0; n <= most; ++n) {
      const ReductionTolerance t = n > 0 ? reduction_tolerance(s.dtype, static_cast<int>(n)) : ReductionTolerance{};
      tables->tolerances.insert(tables->tolerances.end(), {t.relative, t.absolute});
    }
    return p;
  }
  switch (s.collective) {
    case Collective::broadcast:
      p.kind = static_cast<int>(ReferenceKind::copy);
      p.from = s.root;
      break;
    case Collective::allgather:
      p.kind = static_cast<int>(ReferenceKind::gather);
      p.unit = s.count;
      break;
    default: {
      p.kind = static_cast<int>(ReferenceKind::reduction);
      p.base = s.collective == Collective::reducescatter ? static_cast<std::uint64_t>(rank) * s.count : 0;
      const ReductionTolerance t = reduction_tolerance(s.dtype, s.ranks);
      p.relative = t.relative;
      p.absolute = t.absolute;
    }
  }
  return p;
}

namespace {
constexpr std::size_t kCountsBytes = 32;  // three counters, padded for the doubles after them

template <typename T>
std::size_t append(std::vector<unsigned char>& bytes, const std::vector<T>& values) {
  const std::size_t at = bytes.size();
  bytes.resize(at + values.size() * sizeof(T));
  if (!values.empty()) std::memcpy(bytes.data() + at, values.data(), values.size() * sizeof(T));
  return at;
}
}  // namespace

Status GpuReferenceCheck::start(const PatternKernels& kernels, const CheckSpec& spec, int rank, const void* output,
                                cudaStream_t stream) {
  stream_ = stream;
  ReferenceTables tables;
  ReferenceCheckParams p = reference_check_params(spec, rank, &tables);
  host_.assign(kCountsBytes, 0);
  const unsigned long long none = ~0ull;
  std::memcpy(host_.data() + 8, &none, 8);  // counts {wrong 0, lowest none, checked 0}
  const std::size_t tolerances = append(host_, tables.tolerances);
  const std::size_t spans = append(host_, tables.spans);
  const std::size_t pairs = append(host_, tables.pairs);
  CANOPY_CUDA_RETURN_STATUS(cudaMallocAsync(&device_, host_.size(), stream));
  CANOPY_CUDA_RETURN_STATUS(cudaMemcpyAsync(device_, host_.data(), host_.size(), cudaMemcpyHostToDevice, stream));
  unsigned char* base = static_cast<unsigned char*>(device_);
  p.output = output;
  p.counts = reinterpret_cast<unsigned long long*>(base);
  if (spec.program) {
    p.tolerances = reinterpret_cast<const double*>(base + tolerances);
    p.spans = reinterpret_cast<const int*>(base + spans);
    p.pairs = reinterpret_cast<const int*>(base + pairs);
  }
  return kernels.check_reference(p, spec.dtype, stream);
}

Status GpuReferenceCheck::finish(std::uint64_t* checked, std::uint64_t* wrong, std::uint64_t* lowest) {
  unsigned long long counts[3] = {0, 0, 0};
  CANOPY_CUDA_RETURN_STATUS(cudaMemcpyAsync(counts, device_, sizeof counts, cudaMemcpyDeviceToHost, stream_));
  CANOPY_CUDA_RETURN_STATUS(cudaFreeAsync(device_, stream_));
  device_ = nullptr;
  CANOPY_CUDA_RETURN_STATUS(cudaStreamSynchronize(stream_));
  *wrong = counts[0];
  *lowest = counts[1];
  *checked = counts[2];
  return Status();
}

GpuReferenceCheck::~GpuReferenceCheck() {
  if (device_) (void)cudaFreeAsync(device_, stream_);
  (void)cudaGetLastError();
}

}  // namespace canopy
