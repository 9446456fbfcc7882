// The algorithms Canopy ships, written in the collective-algorithm language (dsl/algorithm.hpp), by name: `canopy
// algo list` prints them and `canopy algo verify NAME` checks one.
#pragma once

#include <functional>
#include <string_view>
#include <vector>

#include "dsl/algorithm.hpp"

namespace canopy::algo {

struct ShippedAlgorithm {
  std::string_view name;
  std::string_view summary;                 // one line
  std::function<bool(int ranks)> supports;  // rank counts it is written for
  std::function<Program(int ranks)> build;
};

const std::vector<ShippedAlgorithm>& shipped_algorithms();
// Throws canopy::Error listing the names when `name` is not one, or when `ranks` is not supported.
Program shipped_algorithm(std::string_view name, int ranks);

// The programs themselves (dsl/algorithms/*.cpp).
Program ring_allreduce(int ranks);              // reduce-scatter then allgather around one ring, ranks chunks
Program allpairs_allgather(int ranks);          // every rank copies its chunk to every other, one channel each
Program halving_doubling_allreduce(int ranks);  // recursive halving reduce-scatter, recursive doubling allgather
Program hierarchical_allreduce(int ranks);      // 2 hosts: intra-host reduce-scatter, inter-host swap, allgather
Program two_step_alltoall(int ranks);           // 2 hosts: gather per remote peer, one transfer per pair across
Program alltonext(int ranks);                   // custom: rank r's input to rank r+1; 2 hosts split the cross hop

}  // namespace canopy::algo
