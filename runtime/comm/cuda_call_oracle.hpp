// cuda_call_oracle: the CallOracle (comm/collective_call.hpp) a communicator checks its calls with, answered by the
// CUDA driver and runtime: a pointer's memory kind, GPU and allocation (one driver query when it can answer), a
// stream's ID (one query per call) and GPU (asked once per stream: IDs are never reused within a process), and
// whether a stream is capturing a CUDA graph (also asked alone: stream_capturing).
#pragma once

#include <vector>

#include "runtime/call/collective_call.hpp"

namespace canopy {

// `check_pointers` false (CANOPY_CHECK_POINTERS=0): pointers are not asked about. `streams_seen` keeps the streams'
// GPUs (a few streams in practice; emptied past 64) and must outlive the oracle.
CallOracle cuda_call_oracle(bool check_pointers, std::vector<StreamFacts>* streams_seen);

// Whether `stream` is capturing a CUDA graph (the driver asked directly where it can be; false for a stream that is not
// one: the stream checks name it). The oracle's answer, for callers outside a call's checks.
bool stream_capturing(cudaStream_t stream);

}  // namespace canopy
