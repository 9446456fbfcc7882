// MSCCL-IR XML: every shipped algorithm survives export -> import with the same statements and still verifies; a
// program in msccl-tools' style (tb with both peers, fused and in-place steps) imports and verifies; malformed files
// get ORIGIN:LINE errors.
#include "dsl/msccl_xml.hpp"
#include "tests/dsl/program_statements.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <variant>

#include "dsl/algorithm_check.hpp"
#include "dsl/algorithms/shipped_algorithms.hpp"
#include "core/error.hpp"

namespace canopy::algo {
namespace {

using ::testing::HasSubstr;

std::string import_error(const std::string& xml) {
  try {
    from_msccl_xml(xml, "bad.xml");
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(MscclXml, ShippedAlgorithmsRoundTrip) {
  for (const ShippedAlgorithm& a : shipped_algorithms())
    for (int n : {2, 4, 8})
      if (a.supports(n)) {
        const Program p = a.build(n);
        const std::string xml = to_msccl_xml(p);
        const Program q = from_msccl_xml(xml, "export.xml");
        EXPECT_EQ(q.collective(), p.collective());
        if (!std::holds_alternative<CustomGoal>(p.spec())) {
          EXPECT_EQ(q.goal(), p.goal());
        }
        EXPECT_EQ(q.buffer_chunks(Buffer::input), p.buffer_chunks(Buffer::input));
        EXPECT_EQ(q.buffer_chunks(Buffer::output), p.buffer_chunks(Buffer::output));
        EXPECT_EQ(q.ranks(), n);
        EXPECT_EQ(statements(q), statements(p)) << a.name << " on " << n;
        EXPECT_TRUE(check_program(q).empty()) << a.name << " on " << n << "\n" << xml;
        EXPECT_EQ(statements(from_msccl_xml(to_msccl_xml(q), "again.xml")), statements(p)) << "a second round trip";
      }
}

TEST(MscclXml, ExportNamesThreadBlocksPeersAndDependences) {
  const std::string xml = to_msccl_xml(ring_allreduce(4));
  EXPECT_THAT(
      xml, HasSubstr("<algo name=\"ring-allreduce\" proto=\"Simple\" nchannels=\"2\" nchunksperloop=\"4\" ngpus=\"4\" "
                     "coll=\"allreduce\" inplace=\"0\">"));
  EXPECT_THAT(xml, HasSubstr("<tb id=\"0\" send=\"2\" recv=\"-1\" chan=\"0\">"));
  EXPECT_THAT(xml, HasSubstr("type=\"re\""));  // the ring adds locally after each copy
  EXPECT_THAT(to_msccl_xml(halving_doubling_allreduce(4)), HasSubstr("type=\"rrc\""));  // a remote reduce
  EXPECT_THAT(xml, HasSubstr("hasdep=\"1\""));
}

TEST(MscclXml, AlltoallAndCustomGoalsRoundTrip) {
  const Program p = two_step_alltoall(4);
  const std::string xml = to_msccl_xml(p);
  EXPECT_THAT(xml, HasSubstr("coll=\"alltoall\""));
  EXPECT_THAT(xml, HasSubstr("<gpu id=\"0\" i_chunks=\"4\" o_chunks=\"4\" s_chunks=\"2\">"));
  EXPECT_THAT(xml, HasSubstr("cnt=\"2\""));  // step 2: one transfer of both gathered chunks per pair
  const Program q = from_msccl_xml(xml, "a2a.xml");
  EXPECT_EQ(q.goal(), "alltoall");
  EXPECT_EQ(q.chunks(), 1);
  EXPECT_EQ(statements(q), statements(p));
  EXPECT_TRUE(check_program(q).empty());
  // MSCCL-IR has no post-condition: a custom program comes back as coll="custom" promising nothing, still checked.
  const Program next = alltonext(4);
  const std::string custom_xml = to_msccl_xml(next);
  EXPECT_THAT(custom_xml, HasSubstr("<algo name=\"alltonext\""));
  EXPECT_THAT(custom_xml, HasSubstr("coll=\"custom\""));
  const Program back = from_msccl_xml(custom_xml, "next.xml");
  EXPECT_EQ(back.goal(), "custom");
  EXPECT_FALSE(back.reduces());
  EXPECT_FALSE(expected_output(back, 1, 0).has_value());
  EXPECT_EQ(statements(back), statements(next));
  EXPECT_TRUE(check_program(back).empty());
}

// In msccl-tools' style: an in-place allreduce on 2 GPUs (o_chunks="0": the output is the input), one thread block
// with both peers, a fused rrcs step.
constexpr const char* kTwoGpuAllreduce = R"(<?xml version="1.0"?>
<!-- two GPUs: each reduces the other's half into its own, then sends the result back -->
<algo name="allreduce-2" proto="Simple" nchannels="1" nchunksperloop="2" ngpus="2" coll="allreduce" inplace="1">
  <gpu id="0" i_chunks="2" o_chunks="0" s_chunks="0">
    <tb id="0" send="1" recv="1" chan="0">
      <step s="0" type="s" srcbuf="i" srcoff="1" dstbuf="i" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="rrcs" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="2" type="r" srcbuf="i" srcoff="1" dstbuf="i" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
  <gpu id="1" i_chunks="2" o_chunks="0" s_chunks="0">
    <tb id="0" send="0" recv="0" chan="0">
      <step s="0" type="s" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="rrcs" srcbuf="i" srcoff="1" dstbuf="i" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="2" type="r" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
</algo>
)";

TEST(MscclXml, ImportsMscclToolsStyleAndVerifies) {
  const Program p = from_msccl_xml(kTwoGpuAllreduce, "two.xml");
  EXPECT_EQ(p.name(), "allreduce-2");
  EXPECT_EQ(check_program(p).size(), 0u);
  // Break it: receive the wrong chunk back on gpu 1.
  std::string broken = kTwoGpuAllreduce;
  const std::string wrong = "<step s=\"2\" type=\"r\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"i\" dstoff=\"1\"";
  broken.replace(broken.rfind("<step s=\"2\" type=\"r\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"i\" dstoff=\"0\""),
                 wrong.size(), wrong);
  std::string found;
  for (const Diagnostic& d : check_program(from_msccl_xml(broken, "broken.xml")))
    found += to_string(d, "broken.xml") + "\n";
  // Rank 1's chunk 0 keeps its own input (the in-place start, line 3); chunk 1 gets rank 0's chunk 0 (line 15).
  EXPECT_THAT(found, HasSubstr("broken.xml:3: error: rank 1 output[0] holds rank 1 input[0] but allreduce promises"));
  EXPECT_THAT(found, HasSubstr("broken.xml:15: error: rank 1 output[1] holds rank 0 input[0]"));
}

TEST(MscclXml, MalformedFilesNameTheLine) {
  EXPECT_THAT(import_error(""), HasSubstr("bad.xml:1: error: empty document"));
  EXPECT_THAT(
      import_error("<algo ngpus=\"1\" coll=\"allreduce\">\n<gpu id=\"0\" i_chunks=\"1\" o_chunks=\"1\">\n</algo>"),
      HasSubstr("bad.xml:3: error: </algo> closes <gpu> (line 2)"));
  EXPECT_THAT(import_error("<algo ngpus=\"1\" coll=\"scan\"><gpu id=\"0\" i_chunks=\"1\" o_chunks=\"1\"/></algo>"),
              HasSubstr("coll=\"scan\": expected allreduce, allgather, reduce_scatter, broadcast, reduce, alltoall or "
                        "custom"));
  EXPECT_THAT(import_error("<algo ngpus=\"2\" coll=\"alltoall\"><gpu id=\"0\" i_chunks=\"3\" o_chunks=\"3\"/>"
                           "<gpu id=\"1\" i_chunks=\"3\" o_chunks=\"3\"/></algo>"),
              HasSubstr("an alltoall over 2 ranks has i_chunks that are a multiple of 2, not 3"));
  EXPECT_THAT(import_error("<algo ngpus=\"2\" coll=\"allreduce\"><gpu id=\"0\" i_chunks=\"1\" o_chunks=\"1\"/></algo>"),
              HasSubstr("ngpus=\"2\" but the file has 1 <gpu> elements"));
  const std::string unmatched =
      "<algo ngpus=\"2\" coll=\"allreduce\">\n"
      "<gpu id=\"0\" i_chunks=\"1\" o_chunks=\"1\"><tb id=\"0\" send=\"1\" recv=\"-1\" chan=\"0\">\n"
      "<step s=\"0\" type=\"s\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"0\" cnt=\"1\"/></tb></gpu>\n"
      "<gpu id=\"1\" i_chunks=\"1\" o_chunks=\"1\"/></algo>";
  EXPECT_THAT(import_error(unmatched),
              HasSubstr("bad.xml:3: error: gpu 0 sends 1 times to gpu 1 on channel 0 but gpu 1 receives 0 times"));
  EXPECT_THAT(
      import_error(
          "<algo ngpus=\"1\" coll=\"allreduce\"><gpu id=\"0\" i_chunks=\"1\" o_chunks=\"1\"><tb id=\"0\" send=\"-1\" "
          "recv=\"-1\"><step s=\"0\" type=\"ra\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"0\" cnt=\"1\"/>"
          "</tb></gpu></algo>"),
      HasSubstr("<gpu id=\"0\"> <tb id=\"0\"> <step s=\"0\"> type=\"ra\": expected s, r, rcs, rrs, rrc, rrcs, cpy, re or "
                "nop"));
  EXPECT_THAT(import_error("<algo ngpus=\"1\" coll=\"allreduce\" coll=\"x\"/>"),
              HasSubstr("attribute 'coll' given twice"));
  const std::string two_senders =
      "<algo ngpus=\"2\" coll=\"allreduce\"><gpu id=\"0\" i_chunks=\"1\" o_chunks=\"1\">\n"
      "<tb id=\"0\" send=\"1\" recv=\"-1\"><step s=\"0\" type=\"s\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"o\" "
      "dstoff=\"0\" cnt=\"1\"/></tb>\n"
      "<tb id=\"1\" send=\"1\" recv=\"-1\"><step s=\"0\" type=\"s\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"o\" "
      "dstoff=\"0\" cnt=\"1\"/></tb></gpu><gpu id=\"1\" i_chunks=\"1\" o_chunks=\"1\"/></algo>";
  EXPECT_THAT(import_error(two_senders),
              HasSubstr("bad.xml:3: error: gpu 0: thread blocks 0 and 1 both send to gpu 1 on channel 0"));
  EXPECT_THAT(
      import_error(
          "<algo ngpus=\"1\" coll=\"allreduce\"><gpu id=\"0\" i_chunks=\"1\" o_chunks=\"1\"><tb id=\"0\" send=\"-1\" "
          "recv=\"-1\"><step s=\"0\" type=\"cpy\" srcbuf=\"i\" srcoff=\"5\" dstbuf=\"o\" dstoff=\"0\" cnt=\"1\"/>"
          "</tb></gpu></algo>"),
      HasSubstr("is past the end"));
}

// A ring allreduce over 3 GPUs as msccl-tools writes one with rrs: gpu 0 sends its chunk, gpu 1 adds its own and sends
// the sum on without storing it (rrs), gpu 2 adds its own and stores (rrc) and sends the total to gpu 0, which stores
// it and passes it on to gpu 1 (rcs). `rrc` and `send` are gpu 2's two steps' attributes after their type; `extra`
// goes after gpu 2's thread block.
std::string rrs_ring_default() { return "srcbuf=\"i\" srcoff=\"0\" depid=\"-1\" deps=\"-1\" hasdep=\"0\""; }

std::string rrs_ring(const std::string& rrc = "srcbuf=\"i\" srcoff=\"0\" depid=\"-1\" deps=\"-1\" hasdep=\"0\"",
                     const std::string& send = "srcbuf=\"i\" srcoff=\"0\" depid=\"-1\" deps=\"-1\" hasdep=\"0\"",
                     const std::string& extra = "", const std::string& s_chunks = "0") {
  return R"(<algo name="rrs" proto="LL" nchannels="1" nchunksperloop="1" ngpus="3" coll="allreduce" inplace="1">
  <gpu id="0" i_chunks="1" o_chunks="0" s_chunks="0">
    <tb id="0" send="1" recv="2" chan="0">
      <step s="0" type="s" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="rcs" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
  <gpu id="1" i_chunks="1" o_chunks="0" s_chunks="0">
    <tb id="0" send="2" recv="0" chan="0">
      <step s="0" type="rrs" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="r" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
  <gpu id="2" i_chunks="1" o_chunks="0" s_chunks=")" + s_chunks + R"(">
    <tb id="0" send="0" recv="1" chan="0">
      <step s="0" type="rrc" dstbuf="i" dstoff="0" cnt="1" )" + rrc + R"(/>
      <step s="1" type="s" dstbuf="i" dstoff="0" cnt="1" )" + send + R"(/>
    </tb>)" + extra + R"(
  </gpu>
</algo>
)";
}

TEST(MscclXml, RrsSendsTheSumOnWithoutStoringIt) {
  const Program p = from_msccl_xml(rrs_ring(), "rrs.xml");
  EXPECT_TRUE(check_program(p).empty());
  // gpu 1's own output is what came back, not the partial sum rrs sent on.
  for (const Diagnostic& d : check_program(p)) ADD_FAILURE() << to_string(d, "rrs.xml");
}

TEST(MscclXml, BrokenFilesSayWhatWasExpectedWhereAndTheFix) {
  // A missing attribute the executor requires.
  EXPECT_THAT(import_error("<algo ngpus=\"1\" coll=\"allreduce\" nchunksperloop=\"1\"><gpu id=\"0\" o_chunks=\"1\"/>"
                           "</algo>"),
              HasSubstr("bad.xml:1: error: <gpu> lacks attribute i_chunks"));
  // Counts that disagree with nchunksperloop.
  std::string counts = rrs_ring();
  counts.replace(counts.find("<gpu id=\"1\" i_chunks=\"1\""), 25, "<gpu id=\"1\" i_chunks=\"2\"");
  EXPECT_THAT(import_error(counts),
              HasSubstr("bad.xml:8: error: <gpu id=\"1\"> i_chunks=\"2\": MSCCL's executor requires i_chunks = "
                        "nchunksperloop (1) for allreduce, or 0 when that buffer is unused: fix i_chunks or "
                        "nchunksperloop"));
  // A step past what its GPU declares.
  EXPECT_THAT(import_error(rrs_ring("srcbuf=\"i\" srcoff=\"3\"")),
              HasSubstr("bad.xml:16: error: <gpu id=\"2\"> <tb id=\"0\"> <step s=\"0\"> srcbuf=\"i\" srcoff=\"3\" "
                        "cnt=\"1\" is past the end of what <gpu id=\"2\"> (line 14) declares, i_chunks=\"1\": fix "
                        "srcoff or raise i_chunks"));
  // A dependence cycle: gpu 2's rrc waits on a nop that waits on the send after the rrc.
  const std::string waiter =
      "\n    <tb id=\"1\" send=\"-1\" recv=\"-1\" chan=\"0\">\n      <step s=\"0\" type=\"nop\" srcbuf=\"i\" "
      "srcoff=\"-1\" dstbuf=\"o\" dstoff=\"-1\" cnt=\"0\" depid=\"0\" deps=\"1\" hasdep=\"HAS\"/>\n    </tb>";
  auto with_hasdep = [&](const char* has) { return std::string(waiter).replace(waiter.find("HAS"), 3, has); };
  const std::string cycle =
      rrs_ring("srcbuf=\"i\" srcoff=\"0\" depid=\"1\" deps=\"0\" hasdep=\"0\"",
               "srcbuf=\"i\" srcoff=\"0\" depid=\"-1\" deps=\"-1\" hasdep=\"1\"", with_hasdep("1"));
  // The first step found waiting is gpu 0's rcs, which waits on gpu 2's send inside the cycle.
  EXPECT_THAT(import_error(cycle),
              HasSubstr("bad.xml:5: error: deadlock: <gpu id=\"0\"> <tb id=\"0\"> <step s=\"1\"> waits in a cycle"));
  EXPECT_THAT(import_error(cycle), HasSubstr("break the cycle"));
  // A dependence on a step that never signals (hasdep="0").
  EXPECT_THAT(import_error(rrs_ring(rrs_ring_default(), rrs_ring_default(), with_hasdep("0"))),
              HasSubstr("bad.xml:17: error: <gpu id=\"2\"> <tb id=\"0\"> <step s=\"1\"> has hasdep=\"0\" but "
                        "<gpu id=\"2\"> <tb id=\"1\"> <step s=\"0\"> (line 20) waits on it"));
  // A step that reads a chunk no one wrote: gpu 2 sends from scratch nothing wrote.
  const std::string unwritten = rrs_ring(rrs_ring_default(),
                                         "srcbuf=\"s\" srcoff=\"0\" depid=\"-1\" deps=\"-1\" hasdep=\"0\"", "", "1");
  std::string found;
  for (const Diagnostic& d : check_program(from_msccl_xml(unwritten, "unwritten.xml")))
    found += to_string(d, "unwritten.xml") + "\n";
  EXPECT_THAT(found, HasSubstr("unwritten.xml:5: error: copy rank 2 scratch[0] -> rank 0 output[0] reads rank 2 "
                               "scratch[0], which nothing has written yet"));
}

}  // namespace
}  // namespace canopy::algo
