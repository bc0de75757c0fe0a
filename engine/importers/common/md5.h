// MD5 of TORCH_TRACE payloads (the `has_payload` digest): OpenSSL's, through engine/base/sha256.h.
// Not for security: only to tell an intact payload from a cut or edited one.
#pragma once

#include <string>
#include <string_view>

#include "engine/base/sha256.h"

namespace kiln::importers {

class Md5 : public Digest {
 public:
  Md5() : Digest(Kind::Md5) {}
};

inline std::string md5_hex(std::string_view bytes) {
  Md5 h;
  h.update(bytes);
  return h.hex();
}

}  // namespace kiln::importers
