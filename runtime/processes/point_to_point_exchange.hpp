// The agreement of a group of sends and receives across the processes of one host (ProcessCallPath::send_recv):
// every process issues the group with its own ranks' ops only, checks them (refusing the group where one is not its
// own or its stream is wrong), and sends them as text to every other through the bootstrap; each process then holds the
// whole group (its own ops with their buffers, the others' as placeholders), matches it (match_point_to_point: every
// process finds the same transfers, or the same error, so none waits for another that refused) and plans what it
// moves: the transfers between its own ranks, and those across processes through the senders' staging regions at
// offsets every process computes alike. Pure host code, tested on any CPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/status.hpp"
#include "runtime/call/point_to_point.hpp"

namespace canopy {

// Why this process refuses its part of a group (its ops `ops`, its ranks first .. first + own - 1 of `ranks`), or "":
// an op in range but issued by another process's rank (`process_of_rank` says whose, `name` names a process), or,
// through `check_streams` (check_point_to_point_streams), a stream that is not its rank's GPU's or captures a graph.
std::string own_part_refusal(std::span<const PointToPoint> ops, int first, int own,
                             std::span<const int> process_of_rank,
                             const std::function<std::string(int)>& name,
                             const std::function<Status(std::span<const PointToPoint>)>& check_streams);

// This process's part as the others read it: its ops (kind, rank, peer, count, type, whether a buffer is given), or
// its refusal (own_part_refusal) where not empty.
std::string encode_point_to_point(std::span<const PointToPoint> ops, const std::string& refusal);

// The whole group: every process's ops in process order, this process's own (with their buffers and streams) in its
// place, the others' with a placeholder buffer where they gave one and no stream.
struct WholeGroup {
  std::vector<PointToPoint> ops;
  std::vector<std::size_t> first_op;  // per process: the index of its first op in `ops` (and one past the last)
};

// Decodes every process's part (`parts`, in process order; this process is `self`, its ops `mine`). invalid_argument
// where a process refused its part (this process's own message, or the other's naming it through `name`), so that
// every process refuses the group alike; remote_error where a part cannot be read.
Status assemble_group(std::span<const std::string> parts, int self, std::span<const PointToPoint> mine,
                      const std::function<std::string(int)>& name, WholeGroup* out);

// match_point_to_point over the whole group; an error says how the ops are numbered across the processes.
Status match_whole_group(const WholeGroup& group, int ranks, std::vector<Transfer>* out);

// A transfer across processes and where it lies in its sender's staging region.
struct StagedTransfer {
  Transfer transfer;
  std::uint64_t offset = 0;  // bytes into the sender rank's staging region
};

// What process `self` moves of a matched group. Transfers of 0 bytes move nothing and appear nowhere.
struct PointToPointPlan {
  std::vector<Transfer> local;             // between this process's ranks (self-sends included)
  std::vector<StagedTransfer> sends;       // this process's ranks' sends to other processes: copied in
  std::vector<StagedTransfer> receives;    // this process's ranks' receives from other processes: copied out
  std::uint64_t staging_bytes = 0;         // per rank, the most any rank of any process stages (alike everywhere)
  std::vector<char> reads_from;            // per process: this process copies out of its staging regions
  std::vector<char> readers;               // per process: it copies out of this process's staging regions
};

// Each sender rank's transfers to other processes lie in its staging region in the group's order, each at a multiple
// of kStagedAlignment. `process_of_rank`: which process holds each rank.
inline constexpr std::uint64_t kStagedAlignment = 256;
PointToPointPlan plan_point_to_point(std::span<const Transfer> transfers, std::span<const int> process_of_rank,
                                     int self);

}  // namespace canopy
