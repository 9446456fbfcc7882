// JoinedTeardown (joined_teardown.hpp).
#include "nccl/init/joined_teardown.hpp"

#include "nccl/comm/shared_comm.hpp"

namespace canopy::nccl_api {

void JoinedTeardown::joined(const Id& id) {
  std::lock_guard lock(mutex_);
  ++live_[id].handles;
}

void JoinedTeardown::end(const Id& id, std::shared_ptr<SharedComm> shared) {
  std::vector<std::thread> earlier;
  {
    std::lock_guard lock(mutex_);
    auto it = live_.find(id);
    if (it != live_.end() && it->second.handles > 1) {
      --it->second.handles;
      it->second.ending.emplace_back([shared = std::move(shared)]() mutable { shared.reset(); });
      return;
    }
    if (it != live_.end()) {
      earlier = std::move(it->second.ending);
      live_.erase(it);
    }
  }
  shared.reset();  // the last handle here: its end meets the others' in the group's barrier
  for (std::thread& t : earlier) t.join();
}

JoinedTeardown& joined_teardown() {
  static JoinedTeardown* teardown = new JoinedTeardown();  // never destroyed (see the header)
  return *teardown;
}

}  // namespace canopy::nccl_api
