// Sha256 over OpenSSL's EVP interface; checked against the FIPS 180-4 test vectors in tests/codegen.
#include "core/sha256.hpp"

#include <openssl/evp.h>

#include "core/error.hpp"

namespace canopy {

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
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < size; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 15];
  }
  return out;
}

std::string sha256_hex(std::string_view bytes) { return Sha256().update(bytes).hex_digest(); }

}  // namespace canopy
