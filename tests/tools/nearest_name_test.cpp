// tools/usage/nearest_name: the edit distance behind "did you mean" and the rule for when a name is close enough to
// suggest.
#include "tools/usage/nearest_name.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace canopy::cli {
namespace {

const std::vector<std::string> kSubcommands = {"topo",  "plan", "gen",  "compile", "cache", "detect", "bench",
                                               "simulate", "algo", "msccl", "tune", "run", "nccl-tests-compare",
                                               "bench-compare"};

TEST(EditDistance, CountsInsertionsDeletionsSubstitutionsAndSwapsAsOneEditEach) {
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("abc", ""), 3u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("shwo", "show"), 1u);      // two neighbours swapped
  EXPECT_EQ(edit_distance("topolgy", "topology"), 1u);  // a letter left out
  EXPECT_EQ(edit_distance("plan", "PLAN"), 0u);        // case is ignored
  EXPECT_EQ(edit_distance("ab", "ba"), 1u);
  EXPECT_EQ(edit_distance("warm", "tune"), 4u);
}

TEST(NearestName, SuggestsTheNameATypoWasMeantToBe) {
  EXPECT_EQ(nearest_name("shwo", {"list", "show", "check", "dot", "import"}), "show");
  EXPECT_EQ(nearest_name("plna", kSubcommands), "plan");
  EXPECT_EQ(nearest_name("bnech", kSubcommands), "bench");
  EXPECT_EQ(nearest_name("simulat", kSubcommands), "simulate");
  EXPECT_EQ(nearest_name("nccl-test-compare", kSubcommands), "nccl-tests-compare");
  EXPECT_EQ(nearest_name("--topolgy", {"--help", "-h", "--topology", "-t", "--gpus", "-g"}), "--topology");
  EXPECT_EQ(nearest_name("-json", {"--help", "--json", "--trees"}), "--json");  // one dash instead of two
  EXPECT_EQ(nearest_name("--quik", {"--help", "-h", "--quick"}), "--quick");
}

TEST(NearestName, SuggestsNothingWhenNoNameIsClose) {
  EXPECT_EQ(nearest_name("warm", kSubcommands), std::nullopt);
  EXPECT_EQ(nearest_name("frobnicate", kSubcommands), std::nullopt);
  EXPECT_EQ(nearest_name("-x", {"-t", "-g", "-c"}), std::nullopt);  // one letter differs from any one letter
  EXPECT_EQ(nearest_name("--", {"--help"}), std::nullopt);
  EXPECT_EQ(nearest_name("plan", {}), std::nullopt);
}

TEST(NearestName, PrefersTheCloserNameThenTheEarlierOne) {
  EXPECT_EQ(nearest_name("compiel", {"compiler", "compile"}), "compile");  // 1 edit beats 2 (both close)
  EXPECT_EQ(nearest_name("ca", {"cb", "cc"}), "cb");                      // a tie goes to the first
}

}  // namespace
}  // namespace canopy::cli
