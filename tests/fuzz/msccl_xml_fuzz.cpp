// libFuzzer target for MSCCL-IR XML import: any bytes must give a Program or a canopy::Error, never a crash, hang or
// sanitizer report; an accepted program must be checkable, and survive export -> import with its statements.
#include <cstdint>
#include <string_view>

#include "dsl/algorithm_check.hpp"
#include "core/error.hpp"
#include "dsl/msccl_xml.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const canopy::algo::Program p = canopy::algo::from_msccl_xml(text, "fuzz.xml");
    (void)canopy::algo::check_program(p);
    const canopy::algo::Program q = canopy::algo::from_msccl_xml(canopy::algo::to_msccl_xml(p), "written.xml");
    if (q.ops().size() != p.ops().size()) __builtin_trap();
  } catch (const canopy::Error&) {
    // rejected input: fine
  }
  return 0;
}
