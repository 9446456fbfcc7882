// Every generated kernel compiles: each shipped topology x collective x element type is planned, generated and
// compiled by NVRTC for sm_90 (label nvrtc: needs the toolkit, not a GPU), and parsed by the Clang check with no
// diagnostic. Each reduction operator is compiled on one topology.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <ostream>

#include "codegen/generate.hpp"
#include "codegen/lower.hpp"
#include "codegen/direct_source.hpp"
#include "codegen/ll128_source.hpp"
#include "codegen/low_latency_source.hpp"
#include "codegen/template_bundle.hpp"
#include "dsl/algorithms/shipped_algorithms.hpp"
#include "planner/alltoall_program.hpp"
#include "core/error.hpp"
#include "topology/shipped_topologies.hpp"
#include "planner/planner.hpp"
#include "runtime/jit/nvrtc_compiler.hpp"
#if CANOPY_WITH_CLANG
#include "codegen/cuda_parse_check.hpp"
#include "planner/plan_eval.hpp"
#endif

namespace canopy {
namespace {

constexpr const DataType (&kTypes)[kDataTypeCount] = kEveryDataType;  // NCCL's twelve, fp8 included

// Returns ptxas's statistics of the entry (empty when it did not compile).
KernelStats expect_compiles(const KernelSource& k, const CodegenOptions& o) {
  const std::string what = fmt::format("{} ({})", k.file.name, to_string(o.op));
  KernelStats stats;
  try {
    const CompiledModule m = compile_cuda(k.file, template_headers(), CompileOptions{});
    EXPECT_FALSE(m.cubin.empty()) << what;
    bool entry = false;
    for (const KernelStats& s : m.kernels)
      if (s.name == k.entry) {
        entry = true;
        stats = s;
      }
    EXPECT_TRUE(entry) << what << ": ptxas reported no statistics for the entry " << k.entry;
  } catch (const Error& e) {
    ADD_FAILURE() << what << ": " << e.what();
  }
#if CANOPY_WITH_CLANG
  for (const SourceDiagnostic& d : check_cuda_source(k.file, template_headers()))
    ADD_FAILURE() << what << ": the generator emitted code Clang flags:\n" << to_string(d);
#endif
  return stats;
}

void expect_compiles(const Plan& p, const CodegenOptions& o) { (void)expect_compiles(generate(p, o), o); }

struct Case {
  std::string topology;
  Collective collective;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.topology << " " << to_string(c.collective); }


class GeneratedKernels : public ::testing::TestWithParam<Case> {};

TEST_P(GeneratedKernels, CompileForEveryElementType) {
  const Plan p = plan(load_topology(GetParam().topology), GetParam().collective);
  for (DataType t : kTypes) {
    CodegenOptions o;
    o.dtype = t;
    expect_compiles(p, o);
  }
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (const ShippedTopology& t : shipped_topologies())
    for (Collective c : {Collective::broadcast, Collective::reduce, Collective::allreduce, Collective::allgather,
                         Collective::reducescatter})
      cases.push_back({std::string(t.name), c});
  return cases;
}

// Pulled edges (receivers read senders' send buffers directly) change the steps, not the templates: one element
// type each is enough.
TEST_P(GeneratedKernels, CompileWithPulledEdges) {
  CodegenOptions o;
  o.pull = PullEdges::all;
  o.dtype = DataType::bf16;
  expect_compiles(plan(load_topology(GetParam().topology), GetParam().collective), o);
}

// Own buffers only (every edge through the receiver's FIFO, for ranks in other processes) changes the steps too.
TEST_P(GeneratedKernels, CompileWithOwnBuffersOnly) {
  CodegenOptions o;
  o.own_buffers_only = true;
  o.dtype = DataType::f16;
  expect_compiles(plan(load_topology(GetParam().topology), GetParam().collective), o);
}

INSTANTIATE_TEST_SUITE_P(Shipped, GeneratedKernels, ::testing::ValuesIn(all_cases()), [](const auto& info) {
  std::string name = info.param.topology + "_" + to_string(info.param.collective);
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return name;
});

TEST(GeneratedKernelsOps, EveryReductionOperatorCompiles) {
  const Plan p = plan(load_topology("hgx-h200"), Collective::allreduce);
  for (ReduceOp op : {ReduceOp::prod, ReduceOp::min, ReduceOp::max})
    for (DataType t : {DataType::f32, DataType::bf16, DataType::i64, DataType::i8, DataType::u64, DataType::f8e4m3,
                       DataType::f8e5m2}) {
      CodegenOptions o;
      o.dtype = t;
      o.op = op;
      expect_compiles(p, o);
    }
}

TEST(GeneratedKernelsOps, VirtualRanksAndSmallBlocksCompile) {
  CodegenOptions o;
  o.device_of_rank = block_placement(8, 1);
  o.threads_per_block = 128;
  o.blocks_per_rank = 1;
  o.chunk_bytes = 64 * 1024;
  expect_compiles(plan(load_topology("dgx1-v100"), Collective::allreduce), o);
}

// Blink+ relays (CodegenOptions::relay_gpus): a DGX-1 tenant's plan with the other GPUs forwarding, every collective,
// a copying and a reducing type, the relays on devices of their own and all on one device (virtual GPUs).
TEST(GeneratedKernelsRelays, DgxOneTenantsWithRelaysCompile) {
  int compiled = 0;
  for (const char* topology : {"dgx1-p100", "dgx1-v100"})
    for (const std::vector<std::string>& gpus : std::vector<std::vector<std::string>>{
             {"gpu0", "gpu1"}, {"gpu0", "gpu1", "gpu4", "gpu5"}})
      for (Collective c : {Collective::broadcast, Collective::reduce, Collective::allreduce, Collective::allgather,
                           Collective::reducescatter}) {
        const Topology t = load_topology(topology);
        PlanOptions po;
        po.gpus = gpus;
        po.relay = true;
        const Plan p = plan(t, c, po);
        CodegenOptions o;
        o.relay_gpus = relay_gpus_of(p, t);
        ASSERT_FALSE(o.relay_gpus.empty()) << topology << " " << to_string(c);
        o.dtype = c == Collective::broadcast || c == Collective::allgather ? DataType::u8 : DataType::bf16;
        const KernelSource k = generate(p, o);
        EXPECT_NE(k.file.name.find("_relays"), std::string::npos) << k.file.name;
        expect_compiles(k, o);
        o.device_of_rank.assign(gpus.size(), 0);
        o.device_of_relay.assign(o.relay_gpus.size(), 0);
        expect_compiles(generate(p, o), o);
        compiled += 2;
      }
  EXPECT_EQ(compiled, 40);
}

// Every shipped collective-algorithm program (dsl/algorithms/), lowered for 2 and 8 ranks (and 16 for the two-host
// ones, on the two-host machine), compiles for a copying and a reducing element type; one also on virtual ranks.
TEST(GeneratedKernelsAlgorithms, EveryShippedAlgorithmCompiles) {
  const Topology hgx = load_topology("hgx-h200"), two_hosts = load_topology("dgx1-v100-x2");
  int compiled = 0;
  for (const algo::ShippedAlgorithm& a : algo::shipped_algorithms())
    for (int n : {2, 8, 16}) {
      if (!a.supports(n)) continue;
      for (DataType t : {DataType::f32, DataType::bf16}) {
        CodegenOptions o;
        o.dtype = t;
        if (n == 8 && t == DataType::bf16) o.device_of_rank = block_placement(8, 1);
        expect_compiles(generate(a.build(n), n == 16 ? two_hosts : hgx, o), o);
        ++compiled;
      }
    }
  EXPECT_GE(compiled, 2 * static_cast<int>(algo::shipped_algorithms().size()));
}

// The planned all-to-all's programs (planner/alltoall_program.hpp) on the DGX-1 (relays between GPUs without an
// NVLink), a DGX-1 allocation, and HGX H200 (16-bit elements), and on virtual ranks.
TEST(GeneratedKernelsAlgorithms, PlannedAlltoallsCompile) {
  const Topology dgx1 = load_topology("dgx1-v100");
  PlanOptions five;
  five.gpus = {"0,1,2,3,5"};
  const Topology cases[] = {dgx1, planning_topology(dgx1, five), load_topology("hgx-h200")};
  for (const Topology& t : cases) {
    const AlltoallPlan plan = plan_alltoall(t);
    const algo::Program p = alltoall_program(t, plan);
    CodegenOptions o;
    o.dtype = t.name() == "hgx-h200" ? DataType::bf16 : DataType::f32;
    expect_compiles(generate(p, t, o), o);
  }
  const AlltoallPlan plan = plan_alltoall(dgx1);
  CodegenOptions o;
  o.device_of_rank = block_placement(8, 2);
  expect_compiles(generate(alltoall_program(dgx1, plan), dgx1, o), o);
}

// The low-latency kernels (templates/low_latency.cuh): every collective x element type, every operator once, and
// virtual ranks.
TEST(GeneratedKernelsLowLatency, EveryCollectiveAndTypeCompiles) {
  for (Collective c : {Collective::broadcast, Collective::reduce, Collective::allreduce, Collective::allgather,
                       Collective::reducescatter})
    for (DataType t : kTypes) {
      LowLatencySpec spec;
      spec.base.collective = c;
      spec.base.dtype = t;
      spec.base.ranks = 2;
      spec.base.root = 1;
      expect_compiles(low_latency_source(spec), CodegenOptions{});
    }
  for (ReduceOp op : {ReduceOp::prod, ReduceOp::min, ReduceOp::max}) {
    LowLatencySpec spec;
    spec.base.op = op;
    spec.base.ranks = 8;
    spec.base.device_of_rank = block_placement(8, 1);
    spec.base.dtype = DataType::bf16;
    expect_compiles(low_latency_source(spec), CodegenOptions{});
  }
}

// The two-shot allreduce: every element type on 4 ranks of two devices, every operator once on 8 ranks of one.
TEST(GeneratedKernelsLowLatency, TwoShotAllreduceCompiles) {
  const auto two_shot = [](DataType t, ReduceOp op, int ranks, int devices) {
    LowLatencySpec spec;
    spec.two_shot = true;
    spec.base.dtype = t;
    spec.base.op = op;
    spec.base.ranks = ranks;
    spec.base.device_of_rank = block_placement(ranks, devices);
    expect_compiles(low_latency_source(spec), CodegenOptions{});
  };
  for (DataType t : kTypes) two_shot(t, ReduceOp::sum, 4, 2);
  for (ReduceOp op : {ReduceOp::prod, ReduceOp::min, ReduceOp::max}) two_shot(DataType::f32, op, 8, 1);
}

// The LL128 kernels (templates/ll128.cuh): every collective x element type, every operator once, and virtual ranks
// (8 ranks on one device and on two). Two ranks' kernels keep their lines in registers: a spill would put local
// memory traffic beside every line they move.
TEST(GeneratedKernelsLL128, EveryCollectiveAndTypeCompiles) {
  for (Collective c : {Collective::broadcast, Collective::reduce, Collective::allreduce, Collective::allgather,
                       Collective::reducescatter})
    for (DataType t : kTypes) {
      LL128Spec spec;
      spec.base.collective = c;
      spec.base.dtype = t;
      spec.base.ranks = 2;
      spec.base.root = 1;
      const KernelStats s = expect_compiles(ll128_source(spec), CodegenOptions{});
      EXPECT_EQ(s.spill_store_bytes + s.spill_load_bytes, 0)
          << to_string(c) << " " << to_string(t) << ": " << s.registers << " registers";
    }
  for (ReduceOp op : {ReduceOp::prod, ReduceOp::min, ReduceOp::max}) {
    LL128Spec spec;
    spec.base.op = op;
    spec.base.ranks = 8;
    spec.base.device_of_rank = block_placement(8, op == ReduceOp::min ? 2 : 1);
    spec.base.dtype = DataType::bf16;
    spec.base.collective = op == ReduceOp::min ? Collective::reducescatter : Collective::allreduce;
    expect_compiles(ll128_source(spec), CodegenOptions{});
  }
}

// Every collective x element type on 2 ranks with root 1, and every operator once on `op_ranks` ranks of two
// devices (the widest reduction: op_ranks sources): the direct kernels, or their inbox form.
void expect_direct_kernels_compile(bool inbox, int op_ranks, std::int64_t piece_bytes = 0) {
  for (Collective c : {Collective::broadcast, Collective::reduce, Collective::allreduce, Collective::allgather,
                       Collective::reducescatter})
    for (DataType t : kTypes) {
      DirectSpec spec;
      spec.inbox = inbox;
      spec.piece_bytes = piece_bytes;
      spec.base.collective = c;
      spec.base.dtype = t;
      spec.base.ranks = 2;
      spec.base.root = 1;
      expect_compiles(direct_source(spec), CodegenOptions{});
    }
  for (ReduceOp op : {ReduceOp::prod, ReduceOp::min, ReduceOp::max}) {
    DirectSpec spec;
    spec.inbox = inbox;
    spec.piece_bytes = piece_bytes;
    spec.base.op = op;
    spec.base.ranks = op_ranks;
    spec.base.device_of_rank = block_placement(op_ranks, 2);
    spec.base.dtype = DataType::bf16;
    spec.base.collective = op == ReduceOp::min ? Collective::reducescatter : Collective::allreduce;
    expect_compiles(direct_source(spec), CodegenOptions{});
  }
}

// The direct kernels (templates/direct.cuh), virtual ranks 16 on 2 devices.
TEST(GeneratedKernelsDirect, EveryCollectiveAndTypeCompiles) { expect_direct_kernels_compile(false, 16); }

// The direct inbox kernels (templates/direct_inbox.cuh, for ranks in other processes), 8 ranks on 2 devices.
TEST(GeneratedKernelsDirect, InboxKernelsCompile) { expect_direct_kernels_compile(true, 8); }

// The same moving each block's part in pieces of 64 KiB (DirectSpec::piece_bytes).
TEST(GeneratedKernelsDirect, InboxKernelsInPiecesCompile) { expect_direct_kernels_compile(true, 8, 64 << 10); }

// The direct protocol's two-shot kernels: allreduce of every element type on 2 ranks, broadcast and reduce on 8, every
// operator on 8 ranks of one device and on 16 of two (16 sources and 16 destinations). Sums and products on up to 8
// ranks keep their pointers and vectors in registers: a spill would put local-memory traffic beside every vector they
// move. (bf16 min and max on 8 ranks spill 76 bytes, one-shot's 108: their conversions need more registers than a
// thread of 512 has.)
void expect_two_shot_kernels_compile(bool inbox) {
  const auto two_shot = [inbox](Collective c, DataType t, ReduceOp op, int ranks, int devices) {
    DirectSpec spec;
    spec.two_shot = true;
    spec.inbox = inbox;
    spec.base.collective = c;
    spec.base.root = 3;
    spec.base.dtype = t;
    spec.base.op = op;
    spec.base.ranks = ranks;
    spec.base.device_of_rank = block_placement(ranks, devices);
    const KernelStats s = expect_compiles(direct_source(spec), CodegenOptions{});
    if (ranks <= 8 && (op == ReduceOp::sum || op == ReduceOp::prod)) {
      EXPECT_EQ(s.spill_store_bytes + s.spill_load_bytes, 0)
          << to_string(c) << " on " << ranks << " ranks, " << to_string(t) << " " << to_string(op) << ": "
          << s.registers << " registers";
    }
  };
  for (DataType t : kTypes) two_shot(Collective::allreduce, t, ReduceOp::sum, 2, 2);
  for (Collective c : {Collective::broadcast, Collective::reduce})  // root 3 of 8 on one device
    two_shot(c, DataType::f32, ReduceOp::sum, 8, 1);
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::prod, ReduceOp::min, ReduceOp::max}) {
    two_shot(Collective::allreduce, DataType::bf16, op, 8, 1);
    two_shot(Collective::allreduce, DataType::f32, op, 16, 2);
  }
}

TEST(GeneratedKernelsDirect, TwoShotKernelsCompile) { expect_two_shot_kernels_compile(false); }

// The two-shot inbox kernels (templates/direct_inbox_two_shot.cuh, for ranks in other processes), the same cases.
TEST(GeneratedKernelsDirect, InboxTwoShotKernelsCompile) { expect_two_shot_kernels_compile(true); }

// fp8 reductions of 3 and 4 sources (allreduce on 3 and 4 ranks: the direct kernels one- and two-shot, and their inbox
// forms) keep reduce_copy's vectors in registers: its 16 conversions to float per vector spilled up to 504 bytes a
// thread with four vectors in flight (2026-11-28); with two (templates/reduce_copy.cuh, kUnroll) none.
TEST(GeneratedKernelsDirect, Fp8ReductionsDoNotSpillInReduceCopy) {
  for (DataType t : {DataType::f8e4m3, DataType::f8e5m2})
    for (int ranks : {3, 4})
      for (const auto& [inbox, two_shot] : {std::pair{false, false}, std::pair{false, true}, std::pair{true, false},
                                            std::pair{true, true}}) {
        DirectSpec spec;
        spec.inbox = inbox;
        spec.two_shot = two_shot;
        spec.base.dtype = t;
        spec.base.ranks = ranks;
        spec.base.device_of_rank = block_placement(ranks, ranks);
        const KernelSource k = direct_source(spec);
        const CompiledModule m = compile_cuda(k.file, template_headers(), CompileOptions{});
        int copies = 0;
        for (const KernelStats& s : m.kernels) {
          if (s.name.find("reduce_copy") == std::string::npos) continue;
          ++copies;
          EXPECT_EQ(s.spill_store_bytes + s.spill_load_bytes, 0) << k.entry << ": " << s.name;
        }
        EXPECT_GT(copies, 0) << k.entry << ": ptxas reported no reduce_copy";
      }
}

TEST(NvrtcCompiler, ReportsTheLineOfAnError) {
  const SourceFile bad{"bad.cu", "extern \"C\" __global__ void k() {\n  undeclared_thing = 1;\n}\n"};
  try {
    compile_cuda(bad, {}, CompileOptions{});
    FAIL() << "compiled";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.cu(2)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("sm_90"), std::string::npos) << e.what();
  }
}

TEST(NvrtcCompiler, StatisticsCountSharedMemoryAndRegisters) {
  const SourceFile k{"k.cu",
                     "extern \"C\" __global__ void k(float* p) {\n  __shared__ float s[1024];\n"
                     "  s[threadIdx.x] = p[threadIdx.x];\n  __syncthreads();\n  p[threadIdx.x] = s[1023 - threadIdx.x];\n}\n"};
  CompileOptions o;
  o.keep_ptx = true;
  const CompiledModule m = compile_cuda(k, {}, o);
  ASSERT_EQ(m.kernels.size(), 1u) << m.log;
  EXPECT_EQ(m.kernels[0].name, "k");
  EXPECT_EQ(m.kernels[0].shared_bytes, 4096) << m.log;
  EXPECT_GT(m.kernels[0].registers, 0);
  EXPECT_NE(m.ptx.find(".entry k"), std::string::npos);
  EXPECT_FALSE(nvrtc_version().empty());
}

}  // namespace
}  // namespace canopy
