// The errors users must see for bad .topo files: each tests/errors/topo/NAME.topo is read and must be rejected with
// exactly the message in NAME.err (FILE:LINE:COLUMN: error: ...). Add a pair of files to pin a new case.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "topology/topo_reader.hpp"
#include "tests/test_util.hpp"

namespace canopy {
namespace {

std::vector<std::string> error_cases() {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(testing::source_dir() / "tests/errors/topo"))
    if (e.path().extension() == ".topo") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

class TopoErrors : public ::testing::TestWithParam<std::string> {};

TEST_P(TopoErrors, RejectsWithTheExpectedMessage) {
  const auto dir = testing::source_dir() / "tests/errors/topo";
  const std::string name = GetParam();
  const std::string text = testing::read_file(dir / (name + ".topo"));
  std::string message = "(accepted)";
  try {
    read_topo(text, name + ".topo");
  } catch (const Error& e) {
    message = std::string(e.what()) + "\n";
  }
  testing::expect_golden(dir / (name + ".err"), message);
}

INSTANTIATE_TEST_SUITE_P(Files, TopoErrors, ::testing::ValuesIn(error_cases()),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

}  // namespace
}  // namespace canopy
