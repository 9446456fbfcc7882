// Parsing and printing byte sizes.
#include "core/byte_size.hpp"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cstdint>

#include "core/error.hpp"

namespace canopy {

std::int64_t parse_byte_size(std::string_view text, std::string_view what) {
  std::int64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [rest, ec] = std::from_chars(text.data(), end, value);
  std::string unit(rest, end);
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::int64_t scale = 0;
  if (unit.empty() || unit == "b") scale = 1;
  else if (unit == "k" || unit == "kib" || unit == "kb") scale = 1024;
  else if (unit == "m" || unit == "mib" || unit == "mb") scale = 1024 * 1024;
  else if (unit == "g" || unit == "gib" || unit == "gb") scale = 1024LL * 1024 * 1024;
  if (ec != std::errc() || rest == text.data() || scale == 0 || value < 0 || value > (INT64_MAX / scale))
    throw Error(fmt::format("{} '{}': expected a size such as 65536, 64KiB or 1MiB", what, text));
  return value * scale;
}

std::string format_byte_size(std::int64_t bytes) {
  if (bytes >= 1024 * 1024 && bytes % (1024 * 1024) == 0) return fmt::format("{} MiB", bytes / (1024 * 1024));
  if (bytes >= 1024 && bytes % 1024 == 0) return fmt::format("{} KiB", bytes / 1024);
  return fmt::format("{} B", bytes);
}

}  // namespace canopy
