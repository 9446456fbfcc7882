// partition_inits (group_inits.hpp).
#include "nccl/init/group_inits.hpp"

#include <map>
#include <utility>

namespace canopy::nccl_api {

InitPartition partition_inits(const std::vector<PendingInit>& inits) {
  // The inits of each (id, nranks), in the order given.
  std::map<std::pair<std::array<unsigned char, 128>, int>, std::vector<std::size_t>> by_id;
  for (std::size_t k = 0; k < inits.size(); ++k) by_id[{inits[k].id, inits[k].nranks}].push_back(k);
  InitPartition out;
  std::vector<bool> whole(inits.size(), false);
  for (const auto& [key, ks] : by_id) {
    const int nranks = key.second;
    if (nranks < 2 || static_cast<int>(ks.size()) != nranks) continue;  // one rank: the join makes it as alone
    std::vector<std::size_t> by_rank(ks.size(), inits.size());
    bool every_rank_once = true;
    for (std::size_t k : ks) {
      const int r = inits[k].rank;
      if (r < 0 || r >= nranks || by_rank[r] != inits.size()) {
        every_rank_once = false;  // a rank twice (the join reports it) or out of range
        break;
      }
      by_rank[r] = k;
    }
    if (!every_rank_once) continue;
    for (std::size_t k : ks) whole[k] = true;
    out.whole.push_back(std::move(by_rank));
  }
  for (std::size_t k = 0; k < inits.size(); ++k)
    if (!whole[k]) out.joined.push_back(k);
  return out;
}

}  // namespace canopy::nccl_api
