// SHA-256 (FIPS 180-4), for cache keys and content checksums: incremental (update, then hex_digest) or one call;
// and HMAC-SHA256 (RFC 2104), for names only a holder of a key can compute (the descriptor channel's endpoints).
// OpenSSL's libcrypto computes them (with the CPU's SHA instructions where present: about 10x our own loop, which
// kept a cache hit on a large kernel above its 2 ms budget).
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace canopy {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  Sha256& update(std::string_view bytes);
  std::string hex_digest();  // finishes the hash; the object must not be updated afterwards

 private:
  struct Context;
  std::unique_ptr<Context> context_;
};

std::string sha256_hex(std::string_view bytes);
// HMAC-SHA256 of `message` keyed by `key` (any length), as 64 hex digits.
std::string hmac_sha256_hex(std::string_view key, std::string_view message);

}  // namespace canopy
