#include "engine/codegen/cuda/cubin_info.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <set>

namespace kiln::codegen {

namespace {

// Little-endian reads that fail instead of reading past the end.
struct Bytes {
  const std::string& b;
  template <class T>
  std::optional<T> at(uint64_t off) const {
    if (off > b.size() || b.size() - off < sizeof(T)) return std::nullopt;
    T v;
    std::memcpy(&v, b.data() + off, sizeof(T));
    return v;
  }
  // The NUL-terminated string at off, within [begin, begin + size).
  std::optional<std::string> str(uint64_t begin, uint64_t size, uint64_t off) const {
    if (begin > b.size() || size > b.size() - begin || off >= size) return std::nullopt;
    const char* p = b.data() + begin + off;
    const void* nul = std::memchr(p, '\0', size - off);
    if (!nul) return std::nullopt;
    return std::string(p, static_cast<const char*>(nul));
  }
};

struct Section {
  uint32_t name = 0, type = 0;
  uint64_t offset = 0, size = 0;
  uint32_t link = 0;
  uint64_t entsize = 0;
};

constexpr uint32_t kSymtab = 2;
constexpr uint8_t kFormatSval = 4;     // EIFMT_SVAL: a u16 size, then that many bytes
constexpr uint8_t kRegisterCount = 0x2f;  // EIATTR_REGCOUNT: u32 symbol, u32 registers
constexpr uint8_t kFrameSize = 0x11;      // EIATTR_FRAME_SIZE: u32 symbol, u32 bytes

}  // namespace

std::vector<KernelResources> cubin_resources(const std::string& cubin) {
  std::vector<KernelResources> out;
  const Bytes b{cubin};
  if (cubin.size() < 64 || std::memcmp(cubin.data(), "\x7f" "ELF", 4) != 0 || cubin[4] != 2 || cubin[5] != 1) return out;
  const auto shoff = b.at<uint64_t>(0x28);
  const auto shentsize = b.at<uint16_t>(0x3a), shnum = b.at<uint16_t>(0x3c), shstrndx = b.at<uint16_t>(0x3e);
  if (!shoff || !shentsize || !shnum || !shstrndx || *shentsize < 64 || *shoff > cubin.size()) return out;
  std::vector<Section> sections;
  for (uint64_t i = 0; i < *shnum; ++i) {
    const uint64_t h = *shoff + i * *shentsize;
    const auto name = b.at<uint32_t>(h), type = b.at<uint32_t>(h + 4), link = b.at<uint32_t>(h + 40);
    const auto offset = b.at<uint64_t>(h + 24), size = b.at<uint64_t>(h + 32), entsize = b.at<uint64_t>(h + 56);
    if (!name || !type || !link || !offset || !size || !entsize) return out;
    sections.push_back({*name, *type, *offset, *size, *link, *entsize});
  }
  if (*shstrndx >= sections.size()) return out;
  const Section& names = sections[*shstrndx];
  const Section* info = nullptr;
  const Section* symtab = nullptr;
  std::set<std::string> kernels;  // functions with a .nv.info.<name> section of their own: entries, not subroutines
  for (const auto& s : sections) {
    auto n = b.str(names.offset, names.size, s.name);
    if (n && *n == ".nv.info") info = &s;
    if (n && n->rfind(".nv.info.", 0) == 0) kernels.insert(n->substr(9));
    if (s.type == kSymtab && !symtab) symtab = &s;
  }
  if (!info || !symtab || symtab->link >= sections.size() || info->offset > cubin.size() ||
      symtab->offset > cubin.size())
    return out;
  const Section& strtab = sections[symtab->link];
  const uint64_t symsize = symtab->entsize ? symtab->entsize : 24;
  if (symsize < 24 || symsize > 4096) return out;
  // What the records say, by symbol index (the symbol table's order).
  std::map<uint32_t, KernelResources> by_symbol;
  for (uint64_t o = info->offset, end = info->offset + std::min<uint64_t>(info->size, cubin.size()); o + 2 <= end;) {
    const auto format = b.at<uint8_t>(o), attr = b.at<uint8_t>(o + 1);
    if (!format || !attr) break;
    if (*format != kFormatSval) {
      o += *format == 1 ? 2 : 4;  // EIFMT_NVAL: no value; EIFMT_BVAL, EIFMT_HVAL: two bytes of it
      continue;
    }
    const auto size = b.at<uint16_t>(o + 2);
    if (!size || o + 4 + *size > end) break;
    if ((*attr == kRegisterCount || *attr == kFrameSize) && *size == 8) {
      const auto sym = b.at<uint32_t>(o + 4), value = b.at<uint32_t>(o + 8);
      if (sym && value) {
        auto& k = by_symbol[*sym];
        if (*attr == kRegisterCount) k.registers = static_cast<int>(std::min<uint32_t>(*value, 1u << 20));
        else k.stack_bytes = *value;
      }
    }
    o += 4 + *size;
  }
  for (auto& [sym, k] : by_symbol) {
    const uint64_t s = symtab->offset + static_cast<uint64_t>(sym) * symsize;
    if (static_cast<uint64_t>(sym) * symsize >= symtab->size) continue;
    const auto name = b.at<uint32_t>(s);
    if (!name) continue;
    auto n = b.str(strtab.offset, strtab.size, *name);
    if (!n || !kernels.count(*n)) continue;
    k.function = *n;
    out.push_back(std::move(k));
  }
  return out;
}

}  // namespace kiln::codegen
