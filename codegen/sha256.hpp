// SHA-256 (FIPS 180-4), for cache keys and content checksums: incremental (update, then hex_digest) or one call.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace canopy {

class Sha256 {
 public:
  Sha256();
  Sha256& update(std::string_view bytes);
  std::string hex_digest();  // finishes the hash; the object must not be updated afterwards

 private:
  void compress(const unsigned char* block);
  std::array<std::uint32_t, 8> state_;
  std::array<unsigned char, 64> buffer_{};
  std::size_t buffered_ = 0;
  std::uint64_t total_bytes_ = 0;
};

std::string sha256_hex(std::string_view bytes);

}  // namespace canopy
