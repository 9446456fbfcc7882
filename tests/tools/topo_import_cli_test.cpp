// `canopy topo import` as users run it, on real NCCL topology files (tests/data/nccl-topo), where no GPU is visible
// (CUDA_VISIBLE_DEVICES=-1): .topo text on stdout, or a file that `canopy topo check` and `canopy plan` accept; a
// partial file's missing NVLink said on stderr; malformed XML is exit 1 with FILE:LINE; --help teaches.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/test_util.hpp"

namespace canopy {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

testing::CommandRun canopy(const std::string& args, const std::string& redirect = "2>&1") {
  return testing::run_command("CUDA_VISIBLE_DEVICES=-1 " + std::string(CANOPY_CLI) + " " + args + " " + redirect);
}

std::string data(const std::string& file) { return (testing::source_dir() / "tests/data/nccl-topo" / file).string(); }

std::string temp(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("canopy-import-" + std::to_string(::getpid()) + "-" + name)).string();
}

TEST(TopoImportCli, PrintsTopoTextWithAHeaderOnStdout) {
  const testing::CommandRun r = canopy("topo import " + data("ibm-gx3d-h100-topo.xml"), "2>/dev/null");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("# imported by canopy topo import from "));
  EXPECT_THAT(r.output, HasSubstr("# nvs0 = the NVSwitch fabric"));
  EXPECT_THAT(r.output, HasSubstr("topology nccl-topo\ngpus 8\n"));
  EXPECT_THAT(r.output, HasSubstr("link gpu0 nvs0 370.8 nvlink4\n"));
  EXPECT_THAT(r.output, HasSubstr("link nic0 net7 25 net\n"));
}

TEST(TopoImportCli, PartialFileWithoutAGpuSaysSoOnStderrAndPlans) {
  const std::string out = temp("ndv4.topo");
  testing::CommandRun r = canopy("topo import " + data("azure-ndv4-topo.xml") + " --out " + out + " --name ndv4");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("note: "));
  EXPECT_THAT(r.output, HasSubstr("lists 8 GPUs without NVLink (a partial file)"));
  EXPECT_THAT(r.output, HasSubstr("wrote " + out + ": topology ndv4 with 8 GPUs, 16 switches"));
  r = canopy("topo check " + out);
  EXPECT_EQ(r.status, 0) << r.output;
  r = canopy("plan -t " + out + " -c allreduce");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("ndv4"));
  std::filesystem::remove(out);

  // --no-detect asks no GPU and says nothing on stderr.
  r = canopy("topo import --no-detect " + data("azure-ndv4-topo.xml"), "2>&1 >/dev/null");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.output, "");
}

TEST(TopoImportCli, MalformedFileIsExitOneWithFileAndLine) {
  const std::string bad = temp("bad.xml");
  {
    std::string text = testing::read_file(data("azure-ndv2-topo.xml"));
    text.erase(text.find("</cpu>"), 6);
    std::ofstream(bad) << text;
  }
  testing::CommandRun r = canopy("topo import " + bad);
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.output, HasSubstr("canopy: error: " + bad + ":15: error: </system> closes <cpu> (line 2)"));
  std::filesystem::remove(bad);
  // Not XML at all (a .topo file given by mistake): the error names the format it expected.
  const std::string text = temp("not-xml.topo");
  std::ofstream(text) << "topology box\ngpu gpu0\n";
  r = canopy("topo import " + text);
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.output, HasSubstr(":1: error: expected '<' (an <system> element): this is not NCCL topology XML, "
                                  "which begins with '<' after an optional <?xml ...?> line, but this file begins "
                                  "with 't'"));
  std::filesystem::remove(text);
  r = canopy("topo import /nonexistent/nccl.xml");
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.output, HasSubstr("cannot read '/nonexistent/nccl.xml'"));
  r = canopy("topo import " + data("azure-ndv2-topo.xml") + " --name 9lives");
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.output, HasSubstr("--name '9lives'"));
}

TEST(TopoImportCli, HelpTeachesWithExamples) {
  testing::CommandRun r = canopy("topo import --help");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("Examples:"));
  EXPECT_THAT(r.output, HasSubstr("NCCL_TOPO_DUMP_FILE=nccl.xml"));
  EXPECT_THAT(r.output, HasSubstr("Mb/s / 8000"));
  EXPECT_THAT(canopy("topo --help").output, HasSubstr("import"));
  EXPECT_THAT(canopy("--help").output, HasSubstr("canopy topo import nccl.xml"));
  EXPECT_THAT(canopy("topo import").output, Not(HasSubstr("imported by")));
}

}  // namespace
}  // namespace canopy
