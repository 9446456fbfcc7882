// staged_source: the CUDA source of a mid-size collective on the staged protocol (templates/staged.cuh): one launch
// per call in which every rank stores what each peer needs into that peer's staging buffer (communicator memory)
// and combines what arrives into its own receive buffer, chunk by chunk. No rank touches another's send or receive
// buffer, so no rank waits for another to enter or leave the launch: one one-way latency per call where the direct
// protocol (direct_source.hpp) has three. No plan: every rank sends to the ranks that need its data (one hop), so
// it suits machines whose GPUs all reach each other over NVLink.
#pragma once

#include <cstdint>
#include <vector>

#include "codegen/kernel_source.hpp"
#include "planner/collective.hpp"

namespace canopy {

struct StagedSpec {
  Collective collective = Collective::allreduce;
  DataType dtype = DataType::f32;
  ReduceOp op = ReduceOp::sum;
  int ranks = 2;
  int root = 0;                     // broadcast and reduce
  std::vector<int> device_of_rank;  // empty: rank i on device i
  int blocks_per_rank = 32;         // each block moves an equal share of the elements
  int threads_per_block = 512;
  int chunks_per_block = 4;         // a block receives chunk c - 1 while its stores of chunk c are in flight
  std::int64_t max_bytes = 16 << 20;  // the largest slot (count x element size) the staging buffers hold
};

// Bytes of one rank's staging buffer: two parities x one slot of max_bytes per rank.
std::int64_t staged_buffer_bytes(int ranks, std::int64_t max_bytes);

// Counters of one rank's staged flag area: "ready" per sender, block and chunk, then "acknowledged" per receiver
// and block; and the index of each (what templates/staged.cuh computes on the GPU, and the watchdog on the host).
int staged_flag_count(int ranks, int blocks_per_rank, int chunks_per_block);
int staged_ready_index(int ranks, int blocks_per_rank, int chunks_per_block, int sender, int block, int chunk);
int staged_ack_index(int ranks, int blocks_per_rank, int chunks_per_block, int receiver, int block);

// Whether rank `me` stores data into rank `peer`'s staging buffer in a staged call of `collective`.
bool staged_sends(Collective collective, int root, int me, int peer);

// Throws canopy::Error naming the field when `spec` is out of range.
KernelSource staged_source(const StagedSpec& spec);

}  // namespace canopy
