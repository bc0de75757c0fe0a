#include "viewers/breaks/break_source.h"

#include <filesystem>

namespace kiln::viewers {

namespace fs = std::filesystem;

BreakSource locate_break_source(const session::Session& s, const session::GraphBreakRecord& b,
                                const std::string& session_path, const std::vector<std::string>& extra_dirs,
                                int context) {
  BreakSource out;
  out.recorded_file = b.info.loc.file;
  out.line = b.info.loc.line;
  if (!b.info.loc.known()) {
    for (auto it = b.user_stack.rbegin(); it != b.user_stack.rend(); ++it) {
      StackFrame f = parse_stack_frame(*it);
      if (f.line > 0) {
        out.recorded_file = f.file;
        out.line = f.line;
        break;
      }
    }
  }
  if (out.line <= 0) {
    out.line = 0;
    out.note = "this break has no source location";
    return out;
  }
  std::vector<std::string> dirs;
  const fs::path session_dir = session_path.empty() ? fs::path() : fs::path(session_path).parent_path();
  if (!s.model.path.empty()) {
    fs::path model_dir = fs::path(s.model.path).parent_path();
    dirs.push_back(model_dir.string());
    if (model_dir.is_relative() && !session_dir.empty()) dirs.push_back((session_dir / model_dir).string());
  }
  if (!session_dir.empty()) dirs.push_back(session_dir.string());
  dirs.insert(dirs.end(), extra_dirs.begin(), extra_dirs.end());
  out.found_file = find_source_file(out.recorded_file, dirs);
  if (!out.found_file.empty()) {
    out.excerpt = read_source_excerpt(out.found_file, out.line, context);
    if (!out.excerpt.text.empty()) return out;
    out.note = out.found_file + " has no line " + std::to_string(out.line);
    out.found_file.clear();
  } else {
    out.note = fs::path(out.recorded_file).filename().string() +
               " was not found next to the model or the session; showing the recorded line";
  }
  out.excerpt.text = b.info.loc.text;
  out.excerpt.first_line = out.line;
  return out;
}

}  // namespace kiln::viewers
