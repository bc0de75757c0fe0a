// MD5 (RFC 1321), used to check the `has_payload` digest TORCH_TRACE writes for every payload.
// Not for security: only to tell an intact payload from a cut or edited one.
//
// Md5: update() any number of times, then hex() once.
//   post: hex() is the 32-character lower-case digest of all bytes given, in order.
// md5_hex(text): the same for one buffer.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace kiln::importers {

class Md5 {
 public:
  Md5();
  void update(std::string_view bytes);
  std::string hex();  // finishes the digest; the object is spent afterwards

 private:
  void block(const unsigned char* p);
  uint32_t state_[4];
  uint64_t length_ = 0;        // bytes given so far
  unsigned char pending_[64];  // a partial block
  size_t pending_size_ = 0;
};

std::string md5_hex(std::string_view bytes);

}  // namespace kiln::importers
