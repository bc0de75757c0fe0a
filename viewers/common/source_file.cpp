#include "viewers/common/source_file.h"

#include <filesystem>
#include <fstream>

namespace kiln::viewers {

namespace fs = std::filesystem;

namespace {
bool is_file(const fs::path& p) {
  std::error_code ec;
  return !p.empty() && fs::is_regular_file(p, ec);
}
}  // namespace

std::string find_source_file(const std::string& recorded, const std::vector<std::string>& search_dirs) {
  if (recorded.empty()) return "";
  if (is_file(recorded)) return recorded;
  const fs::path base = fs::path(recorded).filename();
  if (base.empty()) return "";
  for (const auto& d : search_dirs) {
    if (d.empty()) continue;
    for (const fs::path& p : {fs::path(d) / base, fs::path(d) / "src" / base})
      if (is_file(p)) return p.string();
  }
  return "";
}

StackFrame parse_stack_frame(const std::string& frame) {
  StackFrame f;
  std::string head = frame.substr(0, frame.find(" in "));
  size_t colon = head.rfind(':');
  if (colon == std::string::npos || colon + 1 >= head.size()) return f;
  int line = 0;
  for (size_t i = colon + 1; i < head.size(); ++i) {
    if (head[i] < '0' || head[i] > '9') return f;
    line = line * 10 + (head[i] - '0');
    if (line > 100000000) return f;
  }
  f.file = head.substr(0, colon);
  f.line = line;
  return f;
}

SourceExcerpt read_source_excerpt(const std::string& path, int line, int context) {
  SourceExcerpt ex;
  std::ifstream in(path);
  if (!in || line < 1) return ex;
  const int first = std::max(1, line - context);
  const int last = line + context;
  int n = 0;
  std::string l;
  while (std::getline(in, l)) {
    ++n;
    if (n < first) continue;
    if (n > last) break;
    if (!ex.text.empty() || n > first) ex.text += '\n';
    ex.text += l;
  }
  if (n < first) return {};
  ex.first_line = first;
  return ex;
}

}  // namespace kiln::viewers
