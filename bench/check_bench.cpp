// bench/check: what the GPU tests' host reference costs per element checked (bench/harness/collective_check.hpp), on
// one CPU thread, for a planned collective of each kind and two msccl-tools programs, over outputs that are right
// (so no time goes to reporting). The GPU suite's long tier is bound by this check on the host. Plain program, not a
// timed test: `build/bin/canopy-bench-check [ELEMENTS]` (--help says more).
#include <fmt/format.h>

#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "bench/harness/collective_check.hpp"
#include "core/error.hpp"
#include "dsl/msccl_xml.hpp"
#include "tools/usage/command_line.hpp"

using namespace canopy;

namespace {

double thread_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// Rank `rank`'s right output of `s`, in the few types this program checks.
std::vector<unsigned char> right_output(const CheckSpec& s, int rank) {
  const std::uint64_t n = output_elements(s, rank);
  std::vector<unsigned char> out(n * static_cast<std::uint64_t>(size_of(s.dtype)));
  for (std::uint64_t j = 0; j < n; ++j) {
    std::int64_t exact = 0;
    const double v = expected_value(s, rank, j, nullptr, &exact);
    unsigned char* p = out.data() + j * static_cast<std::uint64_t>(size_of(s.dtype));
    if (s.dtype == DataType::u8) {
      *p = static_cast<unsigned char>(exact);
    } else if (s.dtype == DataType::f32) {
      const float f = static_cast<float>(v);
      std::memcpy(p, &f, 4);
    } else {  // bf16, rounded to nearest even through f32
      const float f = static_cast<float>(v);
      std::uint32_t b;
      std::memcpy(&b, &f, 4);
      const auto h = static_cast<std::uint16_t>((b + 0x7fff + ((b >> 16) & 1)) >> 16);
      std::memcpy(p, &h, 2);
    }
  }
  return out;
}

void measure(const std::string& what, const CheckSpec& s, int rank) {
  const std::vector<unsigned char> out = right_output(s, rank);
  const double t0 = thread_seconds();
  const CheckResult r = check_outputs_part(s, {rank}, {out.data()}, 0, output_elements(s, rank), 1);
  const double seconds = thread_seconds() - t0;
  fmt::print("{:<44} {:>10} {:>6} {:>10.2f}\n", what, r.checked, r.wrong, seconds * 1e9 / static_cast<double>(r.checked));
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t elements = std::uint64_t{1} << 22;
  std::string corpus = "tests/data/msccl-tools";
  CLI::App app{
      "What the GPU tests' host reference (bench/harness/collective_check) costs: CPU nanoseconds per element checked\n"
      "on one thread, over right outputs, for planned collectives of 8 ranks and two msccl-tools programs. Runs on\n"
      "the CPU; the GPU suite's long tier is bound by this check.\n"};
  app.name("canopy-bench-check");
  app.add_option("ELEMENTS", elements, "elements of each planned collective's count (default 4194304)")
      ->check(canopy::cli::whole_number(1024, 1ll << 28));
  app.add_option("--corpus", corpus, "the msccl-tools programs' folder (default: tests/data/msccl-tools, from the source tree's root)");
  app.footer("Example:\n  canopy-bench-check 1048576\ndocs/development.md (GPU test tiers) shows a run.");
  if (const auto status = canopy::cli::parse_command_line(app, argc, argv)) return *status;
  try {
    fmt::print("{:<44} {:>10} {:>6} {:>10}\n", "case (8 ranks)", "checked", "wrong", "ns/element");
    const auto planned = [&](Collective c, DataType t, ReduceOp op) {
      return CheckSpec{c, t, op, 0, 8, c == Collective::allgather ? elements / 8 : elements, 7};
    };
    measure("allreduce bf16 sum", planned(Collective::allreduce, DataType::bf16, ReduceOp::sum), 1);
    measure("reducescatter f32 sum", planned(Collective::reducescatter, DataType::f32, ReduceOp::sum), 1);
    measure("allgather f32", planned(Collective::allgather, DataType::f32, ReduceOp::sum), 1);
    for (const char* name : {"allgather_ring_8r_2ch_1i_Simple", "allreduce_1step_8r_1i_Simple"}) {
      const std::filesystem::path file = std::filesystem::path(corpus) / (std::string(name) + ".xml");
      std::ifstream in(file);
      if (!in) throw Error(fmt::format("cannot read {}: run from the source tree's root, or pass --corpus", file.string()));
      std::stringstream text;
      text << in.rdbuf();
      const auto outputs = std::make_shared<ProgramOutputs>(algo::from_msccl_xml(text.str(), file.string()));
      const std::uint64_t chunks = static_cast<std::uint64_t>(outputs->program.chunks());
      for (const auto& [t, op] : {std::pair{DataType::f32, ReduceOp::sum}, std::pair{DataType::u8, ReduceOp::min}}) {
        CheckSpec s{Collective::allreduce, t, op, 0, outputs->program.ranks(), elements / 8 / chunks * chunks, 7};
        s.program = outputs;
        measure(fmt::format("{} {} {}", name, to_string(t), to_string(op)), s, 1);
      }
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "canopy-bench-check: {}\n", e.what());
    return 1;
  }
  return 0;
}
