// detect_topology: facts, then topology, then (optionally) measurement, in that order.
#include "runtime/detect/detect_topology.hpp"

#include "runtime/detect/gather_machine_facts.hpp"
#include "runtime/detect/measure_links.hpp"

namespace canopy {

DetectedTopology detect_topology(const std::vector<int>& devices, bool measure, const std::string& name) {
  const MachineFacts facts = gather_machine_facts(devices);
  DetectedTopology detected = topology_from_facts(facts, name);
  if (!measure) return detected;
  std::vector<int> ordinals;
  for (const GpuFacts& g : facts.gpus) ordinals.push_back(g.cuda_ordinal);
  MeasuredLinks measured = measure_links(detected.topology, ordinals);
  detected.topology = std::move(measured.topology);
  detected.notes.insert(detected.notes.end(), measured.notes.begin(), measured.notes.end());
  return detected;
}

}  // namespace canopy
