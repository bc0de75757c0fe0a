// kiln import PATH... [-o session.kiln] [--all]
// Imports real torch.compile runs: a TORCH_TRACE directory (its newest log, or every log with
// --all), TORCH_TRACE log files, PyTorch profiler traces (.json, .json.gz). A log and a profiler
// trace of the same process become one session, joined by compile id; each other process or rank
// gets its own session. Prints what each session holds and what was skipped, then writes it with
// the session store: to -o (with ".<label>" before the extension when there are several), else to
// "<label>.kiln" in the current directory.
#include <iomanip>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>

#include "app/cli/commands.h"
#include "engine/api/files.h"
#include "engine/api/import.h"
#include "engine/api/session.h"

namespace kiln::cli {

namespace {

struct ImportArgs {
  std::vector<std::string> paths;
  std::string output;
  bool all = false;
  bool no_md5 = false;
};

std::string output_path(const ImportArgs& a, const importers::ImportedSession& g, size_t count) {
  if (a.output.empty()) return g.label + ".kiln";
  if (count == 1) return a.output;
  std::string out = a.output;
  size_t dot = out.rfind('.');
  size_t slash = out.rfind('/');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return out + "." + g.label;
  return out.substr(0, dot) + "." + g.label + out.substr(dot);
}

std::string megabytes(uint64_t bytes) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(1) << double(bytes) / 1e6 << " MB";
  return os.str();
}

std::string first_line(const std::string& s, size_t max = 110) {
  std::string l = s.substr(0, s.find('\n'));
  return l.size() > max ? l.substr(0, max - 3) + "..." : l;
}

void print_session(const importers::ImportedSession& g, const std::string& path) {
  const auto& s = g.session;
  std::cout << "session " << path << (s.rank >= 0 ? "  (rank " + std::to_string(s.rank) + ")" : "") << "\n";
  for (const auto& f : g.files)
    std::cout << "  from " << f.path << "  ("
              << (f.kind == importers::InputKind::TorchTrace ? "TORCH_TRACE log" : "profiler trace") << ", "
              << megabytes(f.bytes) << " in " << std::fixed << std::setprecision(2) << f.seconds << " s)\n";
  std::cout << "  compile ids " << s.regions.size();
  size_t shown = 0;
  for (const auto& r : s.regions) {
    if (shown++ == 12) {
      std::cout << " ...";
      break;
    }
    std::cout << " " << r.compile_id;
  }
  std::cout << "\n";
  std::set<std::string> unique;
  for (const auto& b : s.breaks) unique.insert(b.info.loc.file + ":" + std::to_string(b.info.loc.line) + b.info.reason);
  std::cout << "  graph breaks " << s.breaks.size() << " (" << unique.size() << " unique)\n";
  for (const auto& b : s.breaks)
    std::cout << "    " << b.compile_id << " "
              << (b.info.loc.known() ? b.info.loc.str() + (b.info.loc.text.empty() ? "" : " `" + b.info.loc.text + "`")
                                     : std::string("(no line)"))
              << "\n      " << first_line(b.info.reason) << "\n";
  size_t recompiles = 0;
  for (const auto& r : s.regions) recompiles += !r.recompile_reason.empty();
  std::cout << "  recompiles " << recompiles << "\n";
  for (const auto& r : s.regions)
    if (!r.recompile_reason.empty()) std::cout << "    " << r.compile_id << " " << first_line(r.recompile_reason) << "\n";
  size_t graphs = 0, guards = 0, triton = 0;
  for (const auto& r : s.regions) {
    graphs += r.graphs.size();
    guards += r.guards.size();
  }
  for (const auto& k : s.kernels) triton += k.language == "triton";
  std::cout << "  kernels " << s.kernels.size() << " (" << triton << " triton), stage graphs " << graphs << ", guards "
            << guards << ", events " << s.events.size() << "\n";
  if (!s.runs.empty() || !s.timeline.empty()) {
    size_t linked = 0;
    for (const auto& e : s.timeline) linked += !e.compile_id.empty();
    std::cout << "  runs " << s.runs.size() << ", timeline events " << s.timeline.size() << " (" << linked
              << " linked to a compile id)\n";
  }
  int64_t skipped = 0;
  for (const auto& n : s.import_notes) skipped += n.count;
  std::cout << "  skipped or kept generically " << skipped << (s.import_notes.empty() ? "" : ":") << "\n";
  for (const auto& n : s.import_notes)
    std::cout << "    " << n.count << " x " << n.what << (n.example.empty() ? "" : "  (" + first_line(n.example, 90) + ")")
              << "\n";
}

int run(const ImportArgs& a) {
  importers::ImportRequest req;
  req.paths = a.paths;
  req.all_logs = a.all;
  req.trace_options.verify_md5 = !a.no_md5;
  if (!a.output.empty()) refuse_input_as_output(a.output, a.paths);  // before the (long) import
  auto result = importers::import_files(req);
  for (const auto& g : result.sessions) {
    std::string path = output_path(a, g, result.sessions.size());
    print_session(g, path);
    refuse_input_as_output(path, a.paths);
    session::save_session(path, g.session);
    std::cout << "  wrote " << path << "\n";
  }
  for (const auto& n : result.not_joined) std::cout << "not joined: " << n << "\n";
  if (result.skipped_in_dirs > 0)
    std::cout << "left " << result.skipped_in_dirs << " older file(s) in the directory; --all imports every one\n";
  // The sessions are not taken apart: the process ends here, and freeing a million imported events
  // one string at a time took 0.2 s of a profiler trace's import. They stay reachable (no leak).
  static auto* parting = new importers::ImportResult;
  *parting = std::move(result);
  return 0;
}

}  // namespace

Command add_import(CLI::App& app) {
  auto [cmd, args, command] = subcommand<ImportArgs>(app, "import",
      "Import real torch.compile runs: TORCH_TRACE logs (a directory or files) and PyTorch profiler traces (.json, "
      ".json.gz), joined per compile id, into a session file.");
  cmd.add_option("paths", args.paths, "TORCH_TRACE directory, log file or profiler trace (repeatable)")->required();
  add_output_option(cmd, args.output, "Session file to write (default: <name>.kiln here)");
  cmd.add_flag("--all", args.all, "Import every log of a directory (default: the newest)");
  cmd.add_flag("--no-md5", args.no_md5, "Do not check payload MD5 digests");
  return command(run);
}

}  // namespace kiln::cli
