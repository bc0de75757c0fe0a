// Units of the same code; see kernel_units.h.
#include "engine/codegen/cuda/kernel_units.h"

#include <cctype>
#include <cstdlib>
#include <map>

namespace kiln::codegen {

namespace {

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Letters then digits, nothing else: "b12" gives ("b", true).
bool numbered(const std::string& id, std::string* prefix) {
  size_t i = 0;
  while (i < id.size() && std::isalpha(static_cast<unsigned char>(id[i]))) ++i;
  if (i == 0 || i == id.size()) return false;
  for (size_t j = i; j < id.size(); ++j)
    if (!std::isdigit(static_cast<unsigned char>(id[j]))) return false;
  *prefix = id.substr(0, i);
  return true;
}

bool vector_type(const std::string& id) {
  static const std::set<std::string> bases = {"char", "uchar", "short", "ushort", "int", "uint", "long", "ulong",
                                              "longlong", "ulonglong", "float", "double", "half", "bfloat"};
  if (id.size() < 2) return false;
  char last = id.back();
  if (last < '1' || last > '4') return false;
  return bases.count(id.substr(0, id.size() - 1)) > 0;
}

// Walks the text's tokens: comments dropped, literals and punctuation copied, each identifier handed to `ident`
// with what precedes and follows it (the last non-blank characters around it).
template <typename F>
std::string walk(const std::string& s, F ident) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  auto next_non_blank = [&](size_t j) {  // comments skipped too: they are left out of the text
    for (;;) {
      while (j < s.size() && (s[j] == ' ' || s[j] == '\t' || s[j] == '\n' || s[j] == '\r')) ++j;
      if (j + 1 < s.size() && s[j] == '/' && s[j + 1] == '/') {
        while (j < s.size() && s[j] != '\n') ++j;
      } else if (j + 1 < s.size() && s[j] == '/' && s[j + 1] == '*') {
        size_t end = s.find("*/", j + 2);
        j = end == std::string::npos ? s.size() : end + 2;
      } else {
        return j < s.size() ? s[j] : '\0';
      }
    }
  };
  auto member_before = [&](size_t start) {
    size_t j = start;
    while (j > 0 && (s[j - 1] == ' ' || s[j - 1] == '\t')) --j;
    if (j >= 1 && s[j - 1] == '.') return true;
    if (j >= 2 && ((s[j - 2] == '-' && s[j - 1] == '>') || (s[j - 2] == ':' && s[j - 1] == ':'))) return true;
    return false;
  };
  while (i < s.size()) {
    char c = s[i];
    if (c == '/' && i + 1 < s.size() && s[i + 1] == '/') {
      while (i < s.size() && s[i] != '\n') ++i;
      continue;
    }
    if (c == '/' && i + 1 < s.size() && s[i + 1] == '*') {
      size_t end = s.find("*/", i + 2);
      i = end == std::string::npos ? s.size() : end + 2;
      out += ' ';
      continue;
    }
    if (c == '"' || c == '\'') {
      size_t j = i + 1;
      while (j < s.size() && s[j] != c) j += s[j] == '\\' ? 2 : 1;
      j = std::min(j + 1, s.size());
      out.append(s, i, j - i);
      i = j;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {  // a run of blanks: a line break if it holds one, else a space
      bool line = false;
      while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) line |= s[i++] == '\n';
      out += line ? '\n' : ' ';
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {  // a number, its suffix and exponent letters with it
      size_t j = i;
      while (j < s.size() && (ident_char(s[j]) || s[j] == '.')) ++j;
      out.append(s, i, j - i);
      i = j;
      continue;
    }
    if (ident_start(c)) {
      size_t j = i;
      while (j < s.size() && ident_char(s[j])) ++j;
      out += ident(s.substr(i, j - i), member_before(i), next_non_blank(j) == '(');
      i = j;
      continue;
    }
    out += c;
    ++i;
  }
  return out;
}

}  // namespace

std::set<std::string> canonical_reserved(const std::string& prelude) {
  std::set<std::string> ids;
  walk(prelude, [&](const std::string& id, bool, bool) {
    ids.insert(id);
    return id;
  });
  return ids;
}

std::optional<std::string> canonical_kernel(const std::string& text, const std::vector<std::string>& functions,
                                            const std::string& args_struct, const std::set<std::string>& reserved) {
  std::map<std::string, std::string> fixed;
  for (size_t j = 0; j < functions.size(); ++j) fixed[functions[j]] = "kiln_fn" + std::to_string(j);
  fixed[args_struct] = "KilnArgs_kiln_fn";
  // What keeps its name: the prelude's, called names, members, vector types. The first pass finds them all, so a
  // renamed identifier never takes one of their names.
  std::set<std::string> keep = reserved;
  walk(text, [&](const std::string& id, bool member, bool call) {
    if (!fixed.count(id) && (member || call || vector_type(id))) keep.insert(id);
    return id;
  });
  std::map<std::string, std::string> renamed;
  std::map<std::string, int> next;  // per prefix
  std::string out = walk(text, [&](const std::string& id, bool, bool) -> std::string {
    if (auto f = fixed.find(id); f != fixed.end()) return f->second;
    std::string prefix;
    if (keep.count(id) || !numbered(id, &prefix)) return id;
    auto [it, fresh] = renamed.try_emplace(id);
    if (fresh) {
      std::string name;
      do name = prefix + std::to_string(next[prefix]++);
      while (keep.count(name));
      it->second = name;
    }
    return it->second;
  });
  // A name left anywhere (inside a longer identifier, a literal): not vouched for.
  for (const auto& f : functions)
    if (out.find(f) != std::string::npos) return std::nullopt;
  return out;
}

KernelUnits kernel_units(const std::string& source, const std::vector<CudaKernelInfo>& info) {
  KernelUnits out;
  out.sources = cuda_units(source, info);
  const size_t n = out.sources.size();
  out.groups.group.resize(n);
  out.groups.functions.resize(n);
  for (size_t u = 0; u < n; ++u) out.groups.group[u] = static_cast<int>(u);
  if (n != info.size()) return out;  // the source whole
  for (size_t u = 0; u < n; ++u)
    for (const auto& v : info[u].variants) out.groups.functions[u].push_back(v.function);
  const char* env = std::getenv("KILN_SHARED_UNITS");
  if (env && std::string(env) == "0") return out;
  const std::set<std::string> reserved = n ? canonical_reserved(source.substr(0, info[0].prelude_end)) : std::set<std::string>{};
  std::map<std::string, int> first;  // canonical text -> its group
  for (size_t u = 0; u < n; ++u) {
    const auto& k = info[u];
    if (k.prelude_end != info[0].prelude_end) continue;  // another prelude: a unit of its own
    auto canon = canonical_kernel(source.substr(k.source_begin, k.source_end - k.source_begin), out.groups.functions[u],
                                  "KilnArgs_" + k.name, reserved);
    if (!canon) continue;
    auto [it, fresh] = first.try_emplace(*canon, static_cast<int>(u));
    out.groups.group[u] = it->second;
  }
  return out;
}

}  // namespace kiln::codegen
