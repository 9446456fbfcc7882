// group_inits: which of one ncclGroupEnd's deferred ncclCommInitRank calls make whole communicators in this process.
// nccl-tests -g N, JAX and other programs that drive several GPUs from one process initialise every rank of a
// communicator from one thread inside one group (ncclGroupStart; per GPU cudaSetDevice and ncclCommInitRank;
// ncclGroupEnd). A group that holds every rank of a unique id, each once, leaves no rank to another process, so those
// handles become one in-process communicator over their GPUs in rank order (as ncclCommInitAll makes), which launches
// on every GPU from one call. Joined one rank at a time instead, the ranks would meet through the bootstrap, and each
// call through a poster thread per rank. The other inits join as before, and so does a communicator of one rank.
// Pure, tested on any CPU.
#pragma once

#include <array>
#include <cstddef>
#include <vector>

namespace canopy::nccl_api {

struct PendingInit {
  std::array<unsigned char, 128> id{};  // the UniqueId's bytes
  int nranks = 0;
  int rank = 0;
};

struct InitPartition {
  // Each: the indices (into the inits) of every rank of one unique id, in rank order.
  std::vector<std::vector<std::size_t>> whole;
  // The rest, in the order given: each joins the communicator its id names.
  std::vector<std::size_t> joined;
};

InitPartition partition_inits(const std::vector<PendingInit>& inits);

}  // namespace canopy::nccl_api
