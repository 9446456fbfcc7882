// Export writes what MSCCL's executor reads: every attribute its parser requires on <algo>, <gpu>, <tb> and <step>
// (microsoft/msccl, src/graph/topo.cc, mscclGetAlgoFromXMLAndSetAlgo, at commit b23e9cd5dd63f82ee1c5aae7e0a2042079be903a:
// each xmlGetAttrInt/xmlGetAttrStr call there fails on a missing attribute), i_chunks/o_chunks consistent with
// nchunksperloop as it checks, and values within its limits, for every shipped algorithm.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "dsl/algorithms/shipped_algorithms.hpp"
#include "dsl/msccl_layout.hpp"
#include "dsl/msccl_xml.hpp"
#include "core/xml_reader.hpp"

namespace canopy::algo {
namespace {

// The attributes the executor's parser requires (optional ones it tests with xmlAttrExists: minBytes, maxBytes,
// nthreads are left out).
const std::map<std::string, std::vector<std::string>> kRequired = {
    {"algo", {"name", "ngpus", "nchunksperloop", "nchannels", "proto", "coll", "inplace"}},
    {"gpu", {"id", "i_chunks", "o_chunks", "s_chunks"}},
    {"tb", {"id", "recv", "send", "chan"}},
    {"step", {"s", "srcoff", "srcbuf", "dstoff", "dstbuf", "cnt", "type", "depid", "deps", "hasdep"}},
};

void expect_required(const XmlElement& e, const std::string& where) {
  const auto it = kRequired.find(e.name);
  ASSERT_NE(it, kRequired.end()) << where << ": unexpected <" << e.name << ">";
  for (const std::string& attr : it->second) EXPECT_TRUE(e.attrs.count(attr)) << where << ": <" << e.name << "> lacks " << attr;
  for (const XmlElement& c : e.children) expect_required(c, where);
}

TEST(MscclExport, WritesEveryAttributeMscclsExecutorRequires) {
  int files = 0;
  for (const ShippedAlgorithm& a : shipped_algorithms())
    for (int n : {2, 4, 8})
      if (a.supports(n)) {
        const std::string where = std::string(a.name) + " on " + std::to_string(n);
        const XmlElement algo = read_xml(to_msccl_xml(a.build(n)), where);
        ++files;
        expect_required(algo, where);
        const int loop = std::stoi(algo.attrs.at("nchunksperloop")), channels = std::stoi(algo.attrs.at("nchannels"));
        const std::optional<MscclColl> coll = parse_msccl_coll(algo.attrs.at("coll"));
        ASSERT_TRUE(coll) << where;
        EXPECT_TRUE(algo.attrs.at("proto") == "Simple" || algo.attrs.at("proto") == "LL" ||
                    algo.attrs.at("proto") == "LL128");
        EXPECT_LE(channels, 32) << where;  // MAXCHANNELS
        for (const XmlElement& gpu : algo.children) {
          const int in = std::stoi(gpu.attrs.at("i_chunks")), out = std::stoi(gpu.attrs.at("o_chunks"));
          // topo.cc: (i_chunks > 0 && i_chunks * inputMult != nchunksperloop) || (o_chunks > 0 && ...) is refused.
          EXPECT_TRUE(in == 0 || in * msccl_chunks_multiplier(*coll, Buffer::input, n) == loop) << where;
          EXPECT_TRUE(out == 0 || out * msccl_chunks_multiplier(*coll, Buffer::output, n) == loop) << where;
          EXPECT_LE(gpu.children.size(), 216u) << where;  // MSCCL_MAX_NUM_THREAD_BLOCKS
          for (const XmlElement& tb : gpu.children) {
            EXPECT_LT(std::stoi(tb.attrs.at("chan")), channels) << where;
            EXPECT_LE(tb.children.size(), 256u) << where;  // MSCCL_MAX_NUM_STEPS
            for (const XmlElement& step : tb.children) {
              EXPECT_LT(std::stoi(step.attrs.at("cnt")), 72) << where;  // MSCCL_MAX_COUNT
              const std::string hasdep = step.attrs.at("hasdep");
              EXPECT_TRUE(hasdep == "0" || hasdep == "1") << where;
            }
          }
        }
      }
  EXPECT_GT(files, 10);
}

}  // namespace
}  // namespace canopy::algo
