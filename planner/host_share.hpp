// host_share: Blink's hybrid transfers for a broadcast, a reduce or an allreduce. Beside its trees, which move data at
// the plan's predicted algbw t, a share f of the bytes can cross PCIe through pinned host memory
// (Topology::host_links). A broadcast's root writes each chunk over its PCIe link once and every other GPU reads it
// over its own: h is the slowest host link among the ranks' GPUs. A reduce's ranks each write their share of the
// chunk and the root reads all of them over its one link: h is the lesser of the root's link over (ranks - 1) and the
// others' slowest. An allreduce's ranks each write their share and read every other's (across processes: every rank a
// reduce's root): h is the slowest link over (ranks - 1). Only where the trees cross NVLink alone: trees over PCIe
// would share their links with the host path, which would then add nothing. The runtime moves the share
// (runtime/offload/host_staging.hpp in one process, process_host_ring.hpp across processes).
//
// The share ends both paths together. For S bytes the trees take (1 - f) S / t; the host path takes a fixed cost D
// (events between the GPUs' streams, the copies' start, the slowing of NVLink while PCIe runs) plus (1 + 1/k) f S / h,
// its k chunks in a two-copy pipeline that one chunk fills (h times the model's rate: the share of h it reaches). So
// f = (S/t - D) / (S/t + (1 + 1/k) S/h), clamped to [0, 0.5]: h / ((1 + 1/k) t + h) for large S, less for smaller
// S, 0 where S/t <= D.
#pragma once

#include <cstdint>

#include "topology/topology.hpp"
#include "planner/plan.hpp"

namespace canopy {

// The two paths of a broadcast plan: host_gbps 0 when there is no host path (see host_path).
struct HostPath {
  double trees_gbps = 0;  // the plan's predicted algbw
  double host_gbps = 0;   // the host path's rate per byte of S (above)
};

// D and k above. k is the runtime's chunk count (HostStaging::chunk_for: an eighth of the bytes per chunk). D was
// calibrated on nvidia-h200-x2 (docs/measurements/performance-2026-11-23-issue-7-size-bands.md, section 4): 60 µs
// for a broadcast (the best of six shares from 64 MiB to 1 GiB), 120 µs for a reduce beside the trees, whose root
// combines what the host path brought in one pass after the trees' kernel has let go of the SMs. An allreduce's every
// rank combines so, with a second side stream to fork and join: 200 µs (across two processes on nvidia-h200-x2 a 1 %
// share at 64 MiB cost 4 %, 120 µs's choice). Beside the copy engines (sms_free) the root combines each chunk as it
// lands, and a reduce's D is a broadcast's.
// `rate` is the share of h the host path reaches:
// - an allreduce's every rank writes and reads its host link at once: 0.82, fitted to an allreduce sweep of fixed
//   shares across two processes on nvidia-h200-x2 (bench/results/h200x2-procs2-host-share-sweep.txt: best at 6 % for
//   256 MiB and 8 % for 512 MiB and 1 GiB; from 10 % the host path alone set the time). PCIe itself gave ~39 GB/s a
//   direction there (0.62 of its 63 GB/s), but the trees' rate t is the plan's nominal one (478 GB/s against ~353
//   measured), which understates the trees' time as much: 0.6 gave shares of 4.2, 5.4 and 6.0 %, below the sweep's
//   best; 0.82 gives 5.7, 7.2 and 8.0 %.
// - a broadcast beside the copy engines across two processes (the processes' rings, whose slots each side's stream
//   signals to the other's): 0.77 and D = 70 µs, fitted to fixed shares of 0, 4, 7 and 10.2 % on nvidia-h200-x2
//   (bench/results/h200x2-procs2-engines-shares-s20.txt: best 4 % at 64 MiB, 7 % at 256 MiB to 1 GiB, where 10.2 % let
//   the host path set the time at ~44 GB/s); they give 4.2, 7.2, 7.7 and 8.0 % at 64, 256, 512 MiB and 1 GiB. A
//   reduce beside the engines across processes (its root combining each chunk as it lands, as in one process) takes
//   the same: fixed shares of 4 and 10 % lost 3-4 % and 0.5-1 % against it at 256 MiB - 1 GiB (s21,
//   bench/results/h200x2-procs2-engines-shares-s21.txt).
struct HostPathModel {
  double fixed_us = 60;
  int chunks = 8;
  double rate = 1;
};
// `across_processes`: the host path is the processes' rings (ProcessHostRing), not one process's HostStaging.
HostPathModel host_path_model(Collective collective, bool sms_free = false, bool across_processes = false);

// A plan's paths: host_gbps 0 unless the plan is a broadcast, a reduce or an allreduce over at least two ranks whose
// GPUs all have a host link, its predicted algbw is positive, and every hop of its trees has an NVLink. Throws
// canopy::Error when the plan names a node the topology lacks.
HostPath host_path(const Topology& topology, const Plan& plan);

// The share f of `bytes` for the host path, in [0, 0.5] (formula above); 0 when host_gbps is 0.
double host_share(const HostPath& path, std::uint64_t bytes, const HostPathModel& model);

}  // namespace canopy
