// libFuzzer target for the process facts a multi-process communicator's join payloads carry
// (runtime/comm/process_group.hpp: decode_process_facts): text another process sent. Any input must be accepted or
// refused with a Status, never crash or trip a sanitizer; accepted facts must survive encoding and decoding again.
#include <cstdint>
#include <string>

#include "runtime/comm/process_group.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace canopy;
  const std::string text(reinterpret_cast<const char*>(data), size);
  ProcessFacts facts;
  if (!decode_process_facts(text, &facts).ok()) return 0;
  const std::string once = encode_process_facts(facts);
  ProcessFacts again;
  // Fields holding a newline or '=' cannot survive the text form; those inputs may be refused the second time, but an
  // accepted second reading must encode to the same text.
  if (decode_process_facts(once, &again).ok() && encode_process_facts(again) != once) __builtin_trap();
  return 0;
}
