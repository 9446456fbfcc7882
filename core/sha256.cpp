// Sha256 over OpenSSL's EVP interface, HMAC-SHA256 over its HMAC(); checked against the FIPS 180-4 and RFC 4231 test
// vectors in tests/core.
#include "core/sha256.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "core/error.hpp"

namespace canopy {

namespace {

std::string hex(const unsigned char* bytes, unsigned int size) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < size; ++i) {
    out += kHex[bytes[i] >> 4];
    out += kHex[bytes[i] & 15];
  }
  return out;
}

}  // namespace

struct Sha256::Context {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  ~Context() { EVP_MD_CTX_free(ctx); }
};

Sha256::Sha256() : context_(std::make_unique<Context>()) {
  if (!context_->ctx || EVP_DigestInit_ex(context_->ctx, EVP_sha256(), nullptr) != 1)
    throw InternalError("OpenSSL could not start a SHA-256 digest");
}

Sha256::~Sha256() = default;

Sha256& Sha256::update(std::string_view bytes) {
  if (EVP_DigestUpdate(context_->ctx, bytes.data(), bytes.size()) != 1)
    throw InternalError("OpenSSL could not update a SHA-256 digest");
  return *this;
}

std::string Sha256::hex_digest() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (EVP_DigestFinal_ex(context_->ctx, digest, &size) != 1 || size != 32)
    throw InternalError("OpenSSL could not finish a SHA-256 digest");
  return hex(digest, size);
}

std::string sha256_hex(std::string_view bytes) { return Sha256().update(bytes).hex_digest(); }

std::string hmac_sha256_hex(std::string_view key, std::string_view message) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (!HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
            reinterpret_cast<const unsigned char*>(message.data()), message.size(), digest, &size) ||
      size != 32)
    throw InternalError("OpenSSL could not compute an HMAC-SHA256");
  return hex(digest, size);
}

}  // namespace canopy
