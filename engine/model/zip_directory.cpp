#include "engine/model/zip_directory.h"

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <sstream>

namespace kiln::model {

namespace {

uint32_t le(const std::string& b, size_t at, int bytes) {
  uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[at + i]);
  return v;
}

// Reads `n` bytes at `offset` of the archive.
using ReadAt = bool (*)(void* ctx, int64_t offset, std::string& out);

std::optional<std::vector<std::string>> names(int64_t size, void* ctx, ReadAt read_at) {
  const int64_t tail_size = std::min<int64_t>(size, 22 + 65535);
  if (tail_size < 22) return std::nullopt;
  std::string tail(static_cast<size_t>(tail_size), '\0');
  if (!read_at(ctx, size - tail_size, tail)) return std::nullopt;
  for (int64_t at = tail_size - 22; at >= 0; --at) {
    if (le(tail, at, 4) != 0x06054b50) continue;  // end of central directory
    const uint32_t count = le(tail, at + 10, 2), cd_size = le(tail, at + 12, 4), cd_offset = le(tail, at + 16, 4);
    if (cd_offset == 0xffffffffu || static_cast<int64_t>(cd_offset) + cd_size > size) return std::nullopt;
    std::string cd(cd_size, '\0');
    if (!read_at(ctx, cd_offset, cd)) return std::nullopt;
    std::vector<std::string> out;
    size_t p = 0;
    for (uint32_t i = 0; i < count; ++i) {
      if (p + 46 > cd.size() || le(cd, p, 4) != 0x02014b50) return std::nullopt;
      const size_t name_len = le(cd, p + 28, 2), extra = le(cd, p + 30, 2), comment = le(cd, p + 32, 2);
      if (p + 46 + name_len > cd.size()) return std::nullopt;
      out.push_back(cd.substr(p + 46, name_len));
      p += 46 + name_len + extra + comment;
    }
    return out;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::vector<std::string>> zip_entry_names(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return std::nullopt;
  const int64_t size = in.tellg();
  if (size < 0) return std::nullopt;
  return names(size, &in, [](void* ctx, int64_t offset, std::string& out) {
    auto& f = *static_cast<std::ifstream*>(ctx);
    f.clear();
    f.seekg(offset);
    return static_cast<bool>(f.read(out.data(), static_cast<std::streamsize>(out.size())));
  });
}

std::optional<std::vector<std::string>> zip_entry_names_of(const std::string& bytes) {
  return names(static_cast<int64_t>(bytes.size()), const_cast<std::string*>(&bytes),
               [](void* ctx, int64_t offset, std::string& out) {
                 const auto& b = *static_cast<const std::string*>(ctx);
                 if (offset < 0 || static_cast<size_t>(offset) + out.size() > b.size()) return false;
                 std::copy(b.begin() + offset, b.begin() + offset + static_cast<int64_t>(out.size()), out.begin());
                 return true;
               });
}

}  // namespace kiln::model
