// Communicator::join's argument checks on any CPU: each bad argument is refused with a Status naming it and the fix,
// before any GPU or network is touched.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/comm/communicator.hpp"

namespace canopy {
namespace {

using ::testing::HasSubstr;

UniqueId some_id() {
  UniqueIdContents c;
  c.root.family = 4;
  c.root.bytes[0] = 127;
  c.root.bytes[3] = 1;
  c.root.port = 29500;
  return encode_unique_id(c);
}

TEST(JoinArguments, RanksOutsideTheCommunicatorAreRefused) {
  std::unique_ptr<Communicator> comm;
  const Status none = Communicator::join(some_id(), 0, 0, {}, &comm);
  EXPECT_EQ(none.code(), StatusCode::invalid_argument);
  EXPECT_THAT(none.message(), HasSubstr("give 0 <= rank and rank + own_ranks <= nranks"));
  EXPECT_EQ(Communicator::join(some_id(), 2, 2, {}, &comm).code(), StatusCode::invalid_argument);
  EXPECT_EQ(Communicator::join(some_id(), 4, 3, {}, &comm, 2).code(), StatusCode::invalid_argument);
  EXPECT_EQ(comm, nullptr);
}

TEST(JoinArguments, MoreThanOneDeviceIsRefused) {
  CommunicatorOptions o;
  o.devices = {0, 1};
  std::unique_ptr<Communicator> comm;
  const Status s = Communicator::join(some_id(), 2, 0, o, &comm);
  EXPECT_EQ(s.code(), StatusCode::invalid_argument);
  EXPECT_THAT(s.message(), HasSubstr("join takes one GPU per process, 2 given"));
}

TEST(JoinArguments, AMalformedIdIsRefused) {
  UniqueId id = some_id();
  id.bytes[0] = 'x';  // not the magic
  std::unique_ptr<Communicator> comm;
  const Status s = Communicator::join(id, 2, 0, {}, &comm);
  EXPECT_NE(s.code(), StatusCode::ok);
  EXPECT_EQ(comm, nullptr);
}

}  // namespace
}  // namespace canopy
