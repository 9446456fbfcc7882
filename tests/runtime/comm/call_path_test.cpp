// CallPath's default send_recv without a GPU: a way of running that serves no point-to-point (several hosts; one of
// one host that does not override it) refuses a group with unsupported, naming itself, that it is a later part of
// issue 68, and the communicators that serve it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/comm/call_path.hpp"

namespace canopy {
namespace {

using ::testing::HasSubstr;

// A way of running that only has a layout: everything but send_recv answers nothing.
class LayoutOnlyPath final : public CallPath {
 public:
  explicit LayoutOnlyPath(CommunicatorLayout layout) : layout_(std::move(layout)) {}
  const CommunicatorLayout& layout() const override { return layout_; }
  int own_ranks() const override { return 1; }
  int first_own_rank() const override { return 0; }
  bool on_own_buffers() const override { return false; }
  bool on_peer_buffers() const override { return false; }
  const std::string& machine_key() const override { return key_; }
  std::filesystem::path tuning_path() const override { return {}; }
  std::int64_t tuned_chunk(Collective, std::uint64_t, DataType) const override { return 0; }
  const ProtocolTable& protocols() const override { return protocols_; }
  bool engines_take(Collective, std::uint64_t) const override { return false; }
  std::uint64_t staged_count(Collective, std::uint64_t, DataType, int) override { return 0; }
  Communicator::Choice choice(Collective, std::uint64_t, DataType, int, bool) override { return {}; }
  CollectiveSpec spec_of(const CollectiveCall&, bool) override { return {}; }
  Status run(const CollectiveCall&) override { return Status(); }
  Status prepare(std::span<const CollectiveSpec>) override { return Status(); }
  Status prepare(const CollectiveCall&) override { return Status(); }
  Status info(const CollectiveSpec&, CollectiveInfo*) override { return Status(); }
  Status scale(int, void*, const void*, std::uint64_t, DataType, const void*, const void*, cudaStream_t) override {
    return Status();
  }
  Status combining_kernels(const CombineKernels**) override { return Status(); }
  Status exchange(std::string, std::vector<std::string>*) override { return Status(); }
  Status split(int, int, const CommunicatorOptions&, const JoinPath&, std::unique_ptr<CallPath>*) override {
    return Status();
  }
  Status abort() override { return Status(); }
  Status fail(const std::string&) override { return Status(); }
  void leave_at_exit() override {}
  Status async_error() override { return Status(); }

 private:
  CommunicatorLayout layout_;
  std::string key_;
  ProtocolTable protocols_;
};

// Two ranks joined by NVLink (one host), or each joined to a "network" relay by a network link (as the layout of a
// communicator over several hosts names its ranks).
CommunicatorLayout two_ranks(bool across_hosts) {
  CommunicatorLayout l;
  Topology t("two");
  const std::vector<NodeId> g = t.gpus(2);
  if (across_hosts) {
    const NodeId network = t.relay("network");
    for (NodeId x : g) t.link(x, network, Bandwidth{1, "net"});
  } else {
    t.link(g[0], g[1], Bandwidth{50, "nvlink"});
  }
  l.topology = t;
  l.placement.rank_names = t.gpu_names();
  return l;
}

// The processes of one host serve it (ProcessCallPath overrides it); a way of running that does not is refused.
TEST(CallPathSendRecv, AWayOfRunningThatDoesNotServeItRefusesItNamingThoseThatDo) {
  LayoutOnlyPath path(two_ranks(false));
  const std::vector<PointToPoint> ops = {send_op(0, nullptr, 0, DataType::f32, 1, nullptr),
                                         recv_op(1, nullptr, 0, DataType::f32, 0, nullptr)};
  const Status s = path.send_recv(ops);
  EXPECT_EQ(s.code(), StatusCode::unsupported);
  EXPECT_THAT(s.message(), HasSubstr("send_recv (2 ops): point-to-point on this way of running is not served yet; it "
                                     "is a later part of issue 68"));
  EXPECT_THAT(s.message(), HasSubstr("(Communicator::create) or of the processes of one host (Communicator::join) "
                                     "serves it"));
}

TEST(CallPathSendRecv, SeveralHostsRefuseItAsALaterPartOfIssue68) {
  LayoutOnlyPath path(two_ranks(true));
  const Status s = path.send_recv({});
  EXPECT_EQ(s.code(), StatusCode::unsupported);
  EXPECT_THAT(s.message(), HasSubstr("point-to-point on a communicator of several hosts is not served yet"));
}

}  // namespace
}  // namespace canopy
