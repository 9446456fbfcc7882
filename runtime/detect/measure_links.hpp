// measure_links: `canopy detect --measure`. Times peer copies (cudaMemcpyPeerAsync, CUDA events, one non-blocking
// stream per GPU, the median of several copies after warm-ups) between GPUs a link or a shared switch joins, and
// puts the measured rates in place of the nominal bandwidths:
//   - a direct GPU-GPU link takes the measured rate of each direction; directions within 5% of each other take
//     their mean (one `link`), otherwise each keeps its own (two `arc`s);
//   - a GPU's links to switches are scaled, keeping their proportions, so that their total matches the best copy
//     rate from that GPU to a peer it reaches through them (and into it, for the reverse direction), the 5% rule
//     likewise; switch-to-switch links stay nominal.
// It also times each GPU's copies to and from pinned host memory (cudaMemcpyAsync, the same way) and sets the GPU's
// host link (Topology::host_link) to the slower direction, and each pair timed both ways with the two directions at
// once (a note: what a link carries both ways, as an allreduce loads it; the topology keeps one figure per direction).
// measure_links needs the GPUs; apply_copy_rates, apply_host_rates and pairs_to_measure are pure, and tested on any
// CPU.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "topology/topology.hpp"

namespace canopy {

// The rate of copies from GPU `from` to GPU `to` (indices into Topology::gpu_ids(), i.e. ranks), GB/s.
struct CopyRate {
  int from = 0;
  int to = 0;
  double gbps = 0;
};

// The rates of copies between GPU `gpu` (an index into Topology::gpu_ids()) and pinned host memory, GB/s.
struct HostRate {
  int gpu = 0;
  double to_host_gbps = 0;    // device to host
  double from_host_gbps = 0;  // host to device
};

// The rates of the two copies between GPUs a and b (a < b) run at once, one each way, GB/s.
struct DuplexRate {
  int a = 0;
  int b = 0;
  double a_to_b_gbps = 0;
  double b_to_a_gbps = 0;
};

struct MeasureOptions {
  std::size_t bytes = std::size_t{256} << 20;  // per copy
  int warmups = 2;
  int repeats = 5;  // the median of these is the rate
};

struct MeasuredLinks {
  Topology topology;                 // the input, measured figures in place of nominal ones
  std::vector<CopyRate> rates;       // every pair timed, in pairs_to_measure order
  std::vector<HostRate> host_rates;  // every GPU, in rank order
  std::vector<std::string> notes;    // every figure measured and what it replaced
  std::vector<DuplexRate> duplex;    // every pair of duplex_pairs, both ways at once
};

// `devices[k]` is the CUDA ordinal of the topology's k-th GPU. Throws canopy::Error when the counts differ, or a
// CUDA call fails (e.g. out of memory for the 2 x options.bytes each GPU needs, or for the 2 x options.bytes of
// pinned host memory the host copies share); whatever it allocated or enabled is released first.
MeasuredLinks measure_links(const Topology& nominal, const std::vector<int>& devices,
                            const MeasureOptions& options = {});

// Ordered GPU pairs (from, to) to time: joined by a direct arc, or through one switch; sorted.
std::vector<std::pair<int, int>> pairs_to_measure(const Topology& topology);

// The pairs (a, b), a < b, that `pairs` holds both ways: those also timed with both directions at once; sorted.
std::vector<std::pair<int, int>> duplex_pairs(const std::vector<std::pair<int, int>>& pairs);

// The topology with `rates` applied by the rules above (figures rounded to 0.01 GB/s); appends to `notes` what
// changed. Pairs without a rate keep their nominal figures.
Topology apply_copy_rates(const Topology& nominal, const std::vector<CopyRate>& rates,
                          std::vector<std::string>& notes);

// The topology with each GPU of `rates` given a host link at the slower of its two directions (rounded to
// 0.01 GB/s; the kind of the host link it had, if any, is kept); appends to `notes` what changed. GPUs without a
// rate keep their host links; the arcs are unchanged.
Topology apply_host_rates(const Topology& nominal, const std::vector<HostRate>& rates, std::vector<std::string>& notes);

}  // namespace canopy
