// libFuzzer target: the kernel cache's verified load on arbitrary entry and hash-file bytes (split at
// the first NUL). A finding besides a crash: bytes accepted whose SHA-256 is not the recorded one.
#include <cstdlib>
#include <fstream>
#include <string>
#include <unistd.h>

#include "engine/base/error.h"
#include "engine/base/kernel_cache.h"
#include "engine/base/sha256.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string root = "/tmp/kiln-fuzz-cache-" + std::to_string(::getpid());
  ::setenv("KILN_CACHE_DIR", root.c_str(), 1);
  std::string in(reinterpret_cast<const char*>(data), size);
  size_t cut = in.find('\0');
  std::string entry_bytes = in.substr(0, cut), hash_bytes = cut == std::string::npos ? "" : in.substr(cut + 1);
  try {
    auto dir = kiln::open_kernel_cache("fuzz");
    auto entry = dir / "k.so";
    std::ofstream(entry, std::ios::binary | std::ios::trunc) << entry_bytes;
    std::ofstream(entry.string() + ".sha256", std::ios::binary | std::ios::trunc) << hash_bytes;
    auto loaded = kiln::cache_load_verified(entry);
    if (loaded.bytes) {
      if (*loaded.bytes != entry_bytes) __builtin_trap();
      if (hash_bytes.substr(0, hash_bytes.find_first_of(" \n")) != kiln::sha256_hex(entry_bytes)) __builtin_trap();
    }
  } catch (const kiln::Error&) {
  }
  return 0;
}
