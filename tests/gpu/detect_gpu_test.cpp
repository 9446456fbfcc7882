// detect_topology on the machine's real GPUs (label gpu; SKIPPED without one): one gpuK per visible device, a valid
// topology, a path between GPUs with P2P, and with measurement positive copy rates between every joined pair and
// to and from pinned host memory.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <vector>

#include "topology/topo_writer.hpp"
#include "runtime/detect/detect_topology.hpp"
#include "runtime/detect/gather_machine_facts.hpp"
#include "runtime/detect/measure_links.hpp"

namespace canopy {
namespace {

// Visible devices, or 0 with the reason in `why` when there are none.
int gpu_count(std::string& why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    why = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(e) + ": run on a GPU machine";
    return 0;
  }
  if (n == 0) why = "cudaGetDeviceCount found no CUDA device: run on a GPU machine";
  return n;
}

// Breadth-first search along the arcs, through any node.
bool has_path(const Topology& t, NodeId from, NodeId to) {
  std::vector<bool> seen(t.nodes().size());
  std::vector<int> queue{from.index};
  seen[from.index] = true;
  for (std::size_t i = 0; i < queue.size(); ++i)
    for (const Arc& a : t.arcs())
      if (a.from.index == queue[i] && !seen[a.to.index]) {
        seen[a.to.index] = true;
        queue.push_back(a.to.index);
      }
  return seen[to.index];
}

void print(const DetectedTopology& d) {
  std::cout << "source " << d.source << "\n";
  for (const std::string& note : d.notes) std::cout << "# " << note << "\n";
  std::cout << write_topo(d.topology);
}

TEST(DetectOnGpu, OneGpuNodePerVisibleDeviceAndAValidTopology) {
  std::string why;
  const int n = gpu_count(why);
  if (n == 0) GTEST_SKIP() << why;
  const DetectedTopology d = detect_topology();
  print(d);
  EXPECT_EQ(d.topology.gpu_count(), n);
  for (int k = 0; k < n; ++k) EXPECT_TRUE(d.topology.find("gpu" + std::to_string(k))) << k;
  EXPECT_NO_THROW(d.topology.validate());
  EXPECT_TRUE(d.source == "nvml" || d.source == "cuda") << d.source;
  ASSERT_FALSE(d.notes.empty());
  EXPECT_EQ(d.notes[0].rfind("source " + d.source, 0), 0u) << d.notes[0];
  EXPECT_EQ(d.gpu_names.size(), static_cast<std::size_t>(n));
}

TEST(DetectOnGpu, GpusWithP2PHaveAPath) {
  std::string why;
  const int n = gpu_count(why);
  if (n == 0) GTEST_SKIP() << why;
  if (n < 2) GTEST_SKIP() << "one GPU: no pair to check";
  const MachineFacts facts = gather_machine_facts();
  const Topology t = detect_topology().topology;
  bool any = false;
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b)
      if (a != b && facts.p2p(a, b)) {
        any = true;
        EXPECT_TRUE(has_path(t, *t.find("gpu" + std::to_string(a)), *t.find("gpu" + std::to_string(b))))
            << "gpu" << a << " -> gpu" << b << "\n" << write_topo(t);
      }
  if (!any) GTEST_SKIP() << "no two GPUs have P2P access here";
}

TEST(DetectOnGpu, MeasuredCopyRatesArePositive) {
  std::string why;
  const int n = gpu_count(why);
  if (n == 0) GTEST_SKIP() << why;
  if (n < 2) GTEST_SKIP() << "one GPU: nothing to measure";
  const DetectedTopology nominal = detect_topology();
  std::vector<int> devices;
  for (int k = 0; k < n; ++k) devices.push_back(k);
  MeasureOptions options;
  options.bytes = std::size_t{64} << 20;  // enough to reach the copy engines' rate, quick on 8 GPUs
  const MeasuredLinks m = measure_links(nominal.topology, devices, options);
  EXPECT_EQ(m.rates.size(), pairs_to_measure(nominal.topology).size());
  for (const CopyRate& r : m.rates) {
    std::cout << "gpu" << r.from << " -> gpu" << r.to << ": " << r.gbps << " GB/s\n";
    EXPECT_GT(r.gbps, 0) << r.from << " -> " << r.to;
  }
  EXPECT_EQ(m.duplex.size(), duplex_pairs(pairs_to_measure(nominal.topology)).size());
  for (const DuplexRate& r : m.duplex) {
    std::cout << "gpu" << r.a << " <-> gpu" << r.b << " at once: " << r.a_to_b_gbps << " and " << r.b_to_a_gbps
              << " GB/s\n";
    EXPECT_GT(r.a_to_b_gbps, 0) << r.a << " <-> " << r.b;
    EXPECT_GT(r.b_to_a_gbps, 0) << r.a << " <-> " << r.b;
  }
  EXPECT_NO_THROW(m.topology.validate());
  EXPECT_EQ(m.topology.nodes(), nominal.topology.nodes());
  const DetectedTopology measured = detect_topology({}, /*measure=*/true);
  EXPECT_GT(measured.notes.size(), nominal.notes.size());
  print(measured);
}

TEST(DetectOnGpu, MeasuredHostRatesArePositiveAndSetEveryHostLink) {
  std::string why;
  const int n = gpu_count(why);
  if (n == 0) GTEST_SKIP() << why;
  const DetectedTopology nominal = detect_topology();
  std::vector<int> devices;
  for (int k = 0; k < n; ++k) devices.push_back(k);
  MeasureOptions options;
  options.bytes = std::size_t{64} << 20;
  const MeasuredLinks m = measure_links(nominal.topology, devices, options);
  ASSERT_EQ(m.host_rates.size(), static_cast<std::size_t>(n));
  const std::vector<NodeId> gpus = m.topology.gpu_ids();
  for (const HostRate& r : m.host_rates) {
    std::cout << "gpu" << r.gpu << " -> host: " << r.to_host_gbps << " GB/s, host -> gpu" << r.gpu << ": "
              << r.from_host_gbps << " GB/s\n";
    EXPECT_GT(r.to_host_gbps, 0) << r.gpu;
    EXPECT_GT(r.from_host_gbps, 0) << r.gpu;
    const auto gbps = m.topology.host_gbps(gpus[r.gpu]);
    ASSERT_TRUE(gbps) << "gpu" << r.gpu << " has no host link after measuring";
    EXPECT_NEAR(*gbps, std::min(r.to_host_gbps, r.from_host_gbps), 0.0051) << r.gpu;
  }
  EXPECT_EQ(m.topology.host_links().size(), static_cast<std::size_t>(n));
  EXPECT_EQ(m.topology.arcs().size(), nominal.topology.arcs().size());
}

}  // namespace
}  // namespace canopy
