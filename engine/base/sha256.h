// Digests over OpenSSL's libcrypto (EVP), hex encoded: SHA-256 identifies models in sessions and
// verifies cached kernels; MD5 checks the `has_payload` digests TORCH_TRACE writes (integrity of a
// log, not security).
//
// Digest: update() any number of times, then hex() once.
//   post: hex() is the lower-case hex digest of all bytes given, in order.
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace kiln {

class Digest {
 public:
  enum class Kind { Sha256, Md5 };
  explicit Digest(Kind kind);
  ~Digest();
  Digest(const Digest&) = delete;
  Digest& operator=(const Digest&) = delete;
  void update(std::string_view bytes);
  std::string hex();  // finishes the digest; the object is spent afterwards

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

std::string sha256_hex(std::string_view data);
// Streams the file; throws kiln::Error naming it when it cannot be read.
std::string sha256_file(const std::string& path);

}  // namespace kiln
