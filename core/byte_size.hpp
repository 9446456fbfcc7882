// Byte sizes as users write them ("64KiB", "1MiB", "65536") and as logs print them ("256 KiB").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace canopy {

// Parses "256KiB", "1MiB", "65536", "64k": bytes. Throws canopy::Error naming `what` on bad input.
std::int64_t parse_byte_size(std::string_view text, std::string_view what);
std::string format_byte_size(std::int64_t bytes);  // "256 KiB", "1 MiB", "1000 B"

}  // namespace canopy
