// A host model of the GPU protocol, for tests: runs a Schedule's lanes as interleaved state machines (one per
// thread block, in a seeded random order) over host memory, the way templates/schedule.cuh runs them on GPUs,
// and reports deadlocks and out-of-bounds accesses. Devices start launch e + 1 only when all their blocks of
// launch e are done (stream order); other devices may lag, which is what the counters must make safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "codegen/schedule.hpp"

namespace canopy::testing {

// Element storage: buffer = (storage, offset in elements). Send and receive buffers may alias (in place).
struct SimBuffer {
  int storage = 0;
  std::uint64_t offset = 0;
};

struct SimLaunch {
  const Schedule* schedule = nullptr;
  std::uint64_t count = 0;        // elements per rank, NCCL convention
  std::vector<SimBuffer> send;    // per rank
  std::vector<SimBuffer> recv;    // per rank
};

class ScheduleSimulator {
 public:
  // `ranks` participants (ranks, then any relays: Schedule::participants) on `device_of_rank` devices, one entry each;
  // a launch's send and receive buffers are its ranks' only, and a relay naming one is an error. Scratch (shared by
  // every schedule, as a communicator shares it)
  // sized for the largest schedule. Each schedule gets its own counters, zeroed on first use: counter indices
  // mean different things in different schedules, so they cannot share an area (docs/codegen.md).
  ScheduleSimulator(int ranks, std::vector<int> device_of_rank, std::int64_t scratch_elements);

  int add_storage(std::vector<double> data);  // returns the storage id
  std::vector<double>& storage(int id) { return storage_[id]; }

  // Runs the launches in order (epochs 1, 2, ...), interleaving blocks in an order drawn from `rng`. After rank r's
  // device finishes launch k, `on_rank_done(k, r)` is called: that is when the rank's output may be checked (the
  // next launch may overwrite it). Returns "" or what went wrong (a deadlock names each waiting block).
  std::string run(const std::vector<SimLaunch>& launches, std::mt19937_64& rng,
                  const std::function<void(int launch, int rank)>& on_rank_done);

 private:
  std::vector<std::vector<double>> storage_;
  std::vector<std::vector<double>> scratch_;          // per rank, in elements
  std::map<const Schedule*, std::vector<std::vector<std::uint64_t>>> flags_;  // per schedule, per rank
  std::vector<int> device_of_rank_;
};

}  // namespace canopy::testing
