#include "engine/base/sha256.h"

#include <openssl/evp.h>

#include <fstream>
#include <vector>

#include "engine/base/error.h"

namespace kiln {

struct Digest::Impl {
  EVP_MD_CTX* ctx = nullptr;
  ~Impl() { EVP_MD_CTX_free(ctx); }
};

Digest::Digest(Kind kind) : impl_(std::make_unique<Impl>()) {
  impl_->ctx = EVP_MD_CTX_new();
  const EVP_MD* md = kind == Kind::Sha256 ? EVP_sha256() : EVP_md5();
  if (!impl_->ctx || EVP_DigestInit_ex(impl_->ctx, md, nullptr) != 1)
    throw Error(std::string("OpenSSL cannot start a ") + (kind == Kind::Sha256 ? "SHA-256" : "MD5") + " digest");
}

Digest::~Digest() = default;

void Digest::update(std::string_view bytes) {
  if (!bytes.empty()) EVP_DigestUpdate(impl_->ctx, bytes.data(), bytes.size());
}

std::string Digest::hex() {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_DigestFinal_ex(impl_->ctx, out, &size);
  static const char kHex[] = "0123456789abcdef";
  std::string text;
  text.reserve(2 * size);
  for (unsigned int i = 0; i < size; ++i) {
    text += kHex[out[i] >> 4];
    text += kHex[out[i] & 15];
  }
  return text;
}

std::string sha256_hex(std::string_view data) {
  Digest d(Digest::Kind::Sha256);
  d.update(data);
  return d.hex();
}

std::string sha256_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot be read to hash it");
  Digest d(Digest::Kind::Sha256);
  std::vector<char> buf(1 << 16);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    d.update(std::string_view(buf.data(), static_cast<size_t>(in.gcount())));
  }
  if (in.bad()) throw Error(path + ": read error while hashing it");
  return d.hex();
}

}  // namespace kiln
