// A plan over GPUs that cannot reach each other's memory is refused before anything is launched, naming the tree,
// the edge and the GPUs (runtime/comm/peer_access_check.hpp); the GPU machines we rent all have P2P, so this is where
// the message is pinned.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "topology/shipped_topologies.hpp"
#include "planner/planner.hpp"
#include "runtime/comm/peer_access_check.hpp"

namespace canopy {
namespace {

TEST(PeerAccessErrors, AnEdgeBetweenGpusWithoutP2PIsRefused) {
  const Plan p = plan(load_topology("h200x2"), Collective::broadcast);
  const std::vector<std::vector<bool>> one_way = {{true, true}, {false, true}};  // GPU 1 cannot reach GPU 0
  try {
    check_peer_access(p, {"gpu0", "gpu1"}, {0, 1}, one_way, {4, 5});
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "tree 0 of the broadcast plan sends gpu0 -> gpu1, but GPU 5 cannot access GPU 4's memory (no peer "
              "access): Canopy's kernels write peers' memory directly. Leave one of them out (--gpus), or describe "
              "the machine without that link");
  }
}

TEST(PeerAccessErrors, RanksOnOneGpuNeedNoPeerAccess) {
  const Plan p = plan(load_topology("dgx1-v100"), Collective::allreduce);
  std::vector<std::string> ranks;
  for (int r = 0; r < 8; ++r) ranks.push_back("gpu" + std::to_string(r));
  EXPECT_NO_THROW(check_peer_access(p, ranks, std::vector<int>(8, 0), {{true}}, {0}));
}

}  // namespace
}  // namespace canopy
