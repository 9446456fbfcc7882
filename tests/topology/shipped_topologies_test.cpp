// The shipped topologies: the embedded copies equal the files in topologies/, and names resolve everywhere.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "core/error.hpp"
#include "topology/shipped_topologies.hpp"
#include "tests/test_util.hpp"

namespace canopy {
namespace {

TEST(ShippedTopologies, EmbeddedCopiesEqualTheFilesInTopologiesFolder) {
  std::set<std::string> on_disk;
  for (const auto& entry : std::filesystem::directory_iterator(testing::source_dir() / "topologies"))
    if (entry.path().extension() == ".topo") on_disk.insert(entry.path().stem().string());
  std::set<std::string> embedded;
  for (const auto& s : shipped_topologies()) {
    embedded.insert(std::string(s.name));
    EXPECT_EQ(std::string(s.text), testing::read_file(testing::source_dir() / "topologies" / (std::string(s.name) + ".topo")))
        << s.name << " differs from its file: rebuild";
  }
  EXPECT_EQ(embedded, on_disk);
  EXPECT_GE(embedded.size(), 8u);
}

TEST(ShippedTopologies, EachStartsWithAComment) {
  for (const auto& s : shipped_topologies()) {
    EXPECT_TRUE(std::string_view(s.text).starts_with("# ")) << s.name;
    EXPECT_GT(s.description.size(), 20u) << s.name;
  }
}

TEST(ShippedTopologies, LoadsByNameOrByPath) {
  const auto path = testing::source_dir() / "topologies" / "dgx2.topo";
  EXPECT_EQ(load_topology("dgx2"), load_topology(path.string()));
}

TEST(ShippedTopologies, UnknownNameListsWhatIsShipped) {
  try {
    load_topology("dgx3");
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("unknown topology 'dgx3': no such file, and no shipped topology"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("dgx1-v100, dgx1-v100-x2, dgx2"));
  }
  EXPECT_THROW(load_topology("no/such/file.topo"), Error);
}

}  // namespace
}  // namespace canopy
