// split_joined (joined_split.hpp): a group's splits of joined handles at once, then the real NCCL's beside them.
#include "nccl/comm/comm_registry.hpp"
#include "nccl/group/joined_split.hpp"

#include "nccl/base/last_error.hpp"
#include "nccl/comm/comm_handle.hpp"
#include "nccl/group/group_posters.hpp"
#include "nccl/init/joined_teardown.hpp"
#include "nccl/real/real_comm.hpp"
#include "runtime/comm/communicator.hpp"

namespace canopy::nccl_api {

Status split_communicator(ncclComm* parent, int color, int key, std::unique_ptr<Communicator>* child) {
  return parent->shared->communicator().split(color == NCCL_SPLIT_NOCOLOR ? Communicator::kSplitNoColor : color, key,
                                              child);
}

std::array<unsigned char, 128> split_child_key(const std::array<unsigned char, 128>& parent, std::uint64_t ordinal,
                                               int color) {
  std::array<unsigned char, 128> key = parent;
  // XORed into the last 16 bytes: "SPLIT" and the ordinal, then the color (distinct pairs give distinct keys).
  const std::uint64_t words[2] = {0x53504c4954000000ull ^ ordinal,
                                  static_cast<std::uint64_t>(static_cast<std::uint32_t>(color)) + 1};
  for (int w = 0; w < 2; ++w)
    for (int b = 0; b < 8; ++b) key[112 + 8 * w + b] ^= static_cast<unsigned char>(words[w] >> (8 * b));
  return key;
}

ncclResult_t split_joined(const std::vector<std::pair<SplitRequest, ncclComm_t*>>& splits, const std::string& who,
                          const JoinedSplitter& splitter) {
  const std::size_t n = splits.size();
  std::vector<std::uint64_t> ordinals(n);  // taken here, in the caller's order, as every process takes them
  for (std::size_t k = 0; k < n; ++k) ordinals[k] = splits[k].first.parent->splits++;
  std::vector<Status> statuses(n);
  std::vector<std::unique_ptr<Communicator>> made(n);
  std::vector<std::function<void()>> at_once;
  for (std::size_t k = 0; k < n; ++k)
    at_once.push_back([&, k] {
      const SplitRequest& q = splits[k].first;
      statuses[k] = splitter(q.parent, q.color, q.key, &made[k]);
    });
  run_at_once(at_once);  // returns once every split has
  std::vector<ncclComm*> parents, children;
  std::vector<std::pair<int, int>> color_key;
  ncclResult_t result = ncclSuccess;
  std::string why;
  for (std::size_t k = 0; k < n; ++k) {
    const SplitRequest& q = splits[k].first;
    if (!statuses[k].ok()) {
      if (result == ncclSuccess) result = result_of(statuses[k].code()), why = statuses[k].message();
      continue;
    }
    ncclComm* child = nullptr;
    if (made[k]) {
      child = new ncclComm();
      track_handle(child);
      child->nranks = made[k]->ranks();
      child->rank = made[k]->first_own_rank();
      child->device = made[k]->device_of_rank(child->rank);
      child->shared = std::make_shared<SharedComm>(std::move(made[k]), child->nranks, child->rank, 1);
      child->config = q.config;
      child->forward = q.parent->forward;
      child->joined = true;
      child->id.bytes = split_child_key(q.parent->id.bytes, ordinals[k], q.color);
      joined_teardown().joined(child->id.bytes);
    }
    parents.push_back(q.parent);
    children.push_back(child);
    color_key.emplace_back(q.color, q.key);
  }
  // The real NCCL's splits are collective over each parent as well: the handles of this process split inside one real
  // group, as this group's.
  if (!parents.empty()) split_real_comms_together(parents, color_key, children);
  std::size_t c = 0;
  for (std::size_t k = 0; k < n; ++k) {
    if (!statuses[k].ok()) continue;
    ncclComm* child = children[c++];
    if (child) child->state = CommState::ready;
    *splits[k].second = child;
  }
  return result == ncclSuccess ? ncclSuccess : fail(result, who + why);
}

}  // namespace canopy::nccl_api
