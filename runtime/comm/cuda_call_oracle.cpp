// The CallOracle of a communicator: what the CUDA driver and runtime say of a call's pointers and streams.
#include "runtime/comm/cuda_call_oracle.hpp"

#include "runtime/cuda/driver_api.hpp"
#include "runtime/cuda/gpu_devices.hpp"

namespace canopy {

namespace {

PointerFacts pointer_facts(const void* p) {
  // One driver call when it can answer (no device switch): a call's four or more pointers cost microseconds
  // otherwise, which small messages feel (docs/performance.md).
  if (const std::optional<DriverPointerFacts> d = driver_pointer_facts(p); d && d->memory_type != 0) {
    PointerFacts f;
    f.kind = d->managed            ? MemoryKind::managed
             : d->memory_type == 2 ? MemoryKind::device
             : d->memory_type == 1 ? MemoryKind::host
                                   : MemoryKind::unregistered;
    f.device = d->device;
    if ((f.kind == MemoryKind::device || f.kind == MemoryKind::managed) && d->allocation.bytes > 0)
      f.allocation = d->allocation;
    return f;
  }
  PointerFacts f;
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError();
    return f;
  }
  switch (a.type) {
    case cudaMemoryTypeDevice: f.kind = MemoryKind::device; break;
    case cudaMemoryTypeManaged: f.kind = MemoryKind::managed; break;
    case cudaMemoryTypeHost: f.kind = MemoryKind::host; break;
    default: f.kind = MemoryKind::unregistered; break;
  }
  f.device = a.device;
  if (f.kind == MemoryKind::device || f.kind == MemoryKind::managed) {
    CurrentDevice keep;
    if (cudaSetDevice(a.device) == cudaSuccess) f.allocation = allocation_range(p);
    (void)cudaGetLastError();
  }
  return f;
}

// A stream's ID (one query per call, of the driver where it answers) and its GPU, asked once per stream: IDs are
// never reused within a process, so the GPU found for one stays true. `known` holds the pairs seen (a few streams
// in practice; emptied past 64).
std::optional<StreamFacts> stream_facts(cudaStream_t s, std::vector<StreamFacts>* known) {
  StreamFacts f;
  if (stream_id(s, &f.id) != cudaSuccess) {
    (void)cudaGetLastError();
    return std::nullopt;
  }
  for (const StreamFacts& k : *known)
    if (k.id == f.id) return k;
  if (cudaStreamGetDevice(s, &f.device) != cudaSuccess) {
    (void)cudaGetLastError();
    return std::nullopt;
  }
  if (known->size() >= 64) known->clear();
  known->push_back(f);
  return f;
}

}  // namespace

bool stream_capturing(cudaStream_t s) {
  if (const std::optional<bool> capturing = driver_stream_capturing(s)) return *capturing;
  cudaStreamCaptureStatus c = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(s, &c) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;  // an invalid stream: stream_facts says so
  }
  return c != cudaStreamCaptureStatusNone;
}

CallOracle cuda_call_oracle(bool check_pointers, std::vector<StreamFacts>* streams_seen) {
  CallOracle oracle{pointer_facts, [streams_seen](cudaStream_t s) { return stream_facts(s, streams_seen); },
                    stream_capturing};
  if (!check_pointers) oracle.pointer = nullptr;
  return oracle;
}

}  // namespace canopy
