// libFuzzer target for the nccl-tests log reader (canopy nccl-tests-compare): any bytes must give runs or a
// canopy::Error, never a crash, hang or sanitizer report; what is accepted must hold together (row line numbers
// ascending through the runs, finite non-negative times and bandwidths, no negative #wrong).
#include <cmath>
#include <cstdint>
#include <string_view>

#include "bench/harness/nccl_tests_output.hpp"
#include "core/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const canopy::NcclTestsOutput log = canopy::parse_nccl_tests_output(text, "fuzz.log");
    int last = 0;
    for (const canopy::NcclTestsRun& run : log.runs)
      for (const canopy::NcclTestsRow& row : run.rows) {
        if (row.line <= last) __builtin_trap();
        last = row.line;
        for (const canopy::NcclTestsTiming* t : {&row.out_of_place, &row.in_place})
          if (!(t->time_us >= 0 && std::isfinite(t->time_us) && t->busbw_gbps >= 0 && std::isfinite(t->busbw_gbps)) ||
              (t->wrong && *t->wrong < 0))
            __builtin_trap();
      }
  } catch (const canopy::Error&) {
    // rejected input: fine
  }
  return 0;
}
