// Errors: `canopy::Error` is what users see (bad input, named with its place and the fix);
// `CANOPY_INTERNAL_ASSERT` guards Canopy's own invariants and says so, so a user knows whose bug it is.
#pragma once

#include <stdexcept>
#include <string>

namespace canopy {

// A mistake in something the user gave us (a file, an argument, a program). The message names the input,
// the place in it and how to fix it; the CLI prints it as is and exits 1.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// A broken invariant inside Canopy: never the user's fault, always a bug to report.
class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& message) : std::logic_error(message) {}
};

[[noreturn]] void throw_internal_error(const char* condition, const char* file, int line, const std::string& detail);

}  // namespace canopy

#define CANOPY_INTERNAL_ASSERT(condition, detail)                                \
  do {                                                                           \
    if (!(condition)) ::canopy::throw_internal_error(#condition, __FILE__, __LINE__, (detail)); \
  } while (0)
