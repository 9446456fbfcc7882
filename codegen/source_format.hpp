// format_cuda_source: generated CUDA C++ text -> the same code laid out by Clang's libFormat, LLVM style except
// that line breaks are the emitter's (no column limit: the emitter keeps lines within 120 columns, and libFormat's
// line-breaking search was 5-8x slower). Deterministic and idempotent: formatting the result again returns it
// unchanged.
#pragma once

#include <string>
#include <string_view>

namespace canopy {

// Throws InternalError when libFormat cannot lay the text out (the emitter produced unbalanced code).
std::string format_cuda_source(std::string_view text);

}  // namespace canopy
