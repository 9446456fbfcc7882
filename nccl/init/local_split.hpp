// LocalSplits: ncclCommSplit of a communicator whose every rank lives in this process (ncclCommInitAll, or a group's
// inits made whole: group_inits.hpp). NCCL takes each handle's split in a call of its own: from one thread inside a
// group (the split is filed at ncclGroupEnd), or from a thread per rank. Each call files its rank's (color, key)
// under that rank's next split of the communicator; the call that completes the set makes the children, and every
// call then takes its own (null for NCCL_SPLIT_NOCOLOR). The children are made by a Maker: in the library,
// make_local_children, which plans the groups as Communicator::split does (plan_split: colors, then key and parent rank
// order) and makes one in-process Communicator per color over its ranks' GPUs in the new rank order, and the real
// NCCL's split beside them. A call whose set is not complete within `wait` fails saying how to call it. The
// rendezvous is pure, tested on any CPU with a Maker of its own.
#pragma once

#include <nccl.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

struct ncclComm;

namespace canopy::nccl_api {

class SharedComm;

struct SplitRequest {
  ncclComm* parent = nullptr;
  int color = 0;
  int key = 0;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
};

class LocalSplits {
 public:
  // From every rank's request, in parent rank order: each rank's child (null: no color), or an error (its message
  // in *why).
  using Maker = std::function<ncclResult_t(const std::vector<SplitRequest>&, std::vector<ncclComm*>* children,
                                           std::string* why)>;
  explicit LocalSplits(Maker maker) : maker_(std::move(maker)) {}

  using Ticket = std::pair<const SharedComm*, std::uint64_t>;
  // Files rank `local` (of `ranks` in `shared`) of one split; the last to file makes the children, here.
  Ticket file(const SharedComm* shared, int local, int ranks, const SplitRequest& request);
  // Waits up to `wait` for the ticket's children; then *out is rank `local`'s, or the error (*why) is returned.
  ncclResult_t take(const Ticket& ticket, int local, std::chrono::milliseconds wait, ncclComm** out, std::string* why);

 private:
  struct Round {
    std::vector<std::optional<SplitRequest>> requests;
    int filed = 0, taken = 0;
    bool made = false;
    ncclResult_t result = ncclSuccess;
    std::string why;
    std::vector<ncclComm*> children;
  };
  Maker maker_;
  std::mutex mutex_;
  std::condition_variable made_;
  std::map<std::pair<const SharedComm*, int>, std::uint64_t> next_;  // per (communicator, rank): its next split
  std::map<Ticket, Round> rounds_;
};

// The library's: children made by make_local_children.
LocalSplits& local_splits();
// make_local_children (see above); `requests` in parent rank order, the parents sharing one SharedComm.
ncclResult_t make_local_children(const std::vector<SplitRequest>& requests, std::vector<ncclComm*>* children,
                                 std::string* why);

}  // namespace canopy::nccl_api
