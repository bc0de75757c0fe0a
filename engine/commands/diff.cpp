// Loading both sides of `kiln diff`; see diff.h.
#include "engine/commands/diff.h"

#include <cstring>
#include <filesystem>
#include <fstream>

#include "engine/base/error.h"
#include "engine/importers/import_files.h"
#include "engine/session/store.h"

namespace kiln::commands {

namespace {

bool is_session_file(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec)) return false;
  if (fs::path(path).extension() == ".kiln") return true;
  std::ifstream in(path, std::ios::binary);
  char magic[16] = {};
  in.read(magic, sizeof magic);
  return in.gcount() == sizeof magic && std::memcmp(magic, "SQLite format 3", 16) == 0;
}

}  // namespace

session::Session load_diff_side(const std::string& path) {
  if (!std::filesystem::exists(path)) throw Error(path + ": file not found");
  if (is_session_file(path)) return session::load_session(path);
  importers::ImportRequest req;
  req.paths = {path};
  auto result = importers::import_files(req);
  if (result.sessions.empty()) throw Error(path + ": nothing to compare (no TORCH_TRACE log or profiler trace in it)");
  if (result.sessions.size() > 1) {
    std::string labels;
    for (const auto& g : result.sessions) labels += (labels.empty() ? "" : ", ") + g.label;
    throw Error(path + ": holds " + std::to_string(result.sessions.size()) + " processes (" + labels +
                "); name one rank's log, or import it with kiln import and compare the session");
  }
  return std::move(result.sessions[0].session);
}

report::SessionDiff diff_inputs(const std::string& a, const std::string& b, report::DiffOptions options) {
  if (options.label_a.empty()) options.label_a = a;
  if (options.label_b.empty()) options.label_b = b;
  session::Session sa = load_diff_side(a);
  session::Session sb = load_diff_side(b);
  return report::diff_sessions(sa, sb, options);
}

}  // namespace kiln::commands
