// Directory expansion, sniffing, importing and grouping. Grouping order of preference for a
// profiler trace: the log of the same pid; else of the same rank; else the only log given, when its
// pid is unknown; else a session of its own.
#include "engine/importers/import_files.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <map>

#include "engine/base/build_info.h"
#include "engine/base/error.h"
#include "engine/importers/common/byte_source.h"
#include "engine/importers/imported_break_costs.h"
#include "engine/importers/join.h"
#include "engine/importers/kineto/kineto.h"

namespace kiln::importers {

namespace fs = std::filesystem;

namespace {

bool ends_with(const std::string& s, const std::string& p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

bool is_log_name(const std::string& n) { return ends_with(n, ".log") || ends_with(n, ".log.gz"); }
bool is_trace_name(const std::string& n) { return ends_with(n, ".json") || ends_with(n, ".json.gz"); }

std::vector<std::string> expand(const std::string& path, bool all, int& skipped) {
  std::error_code ec;
  auto st = fs::status(path, ec);
  if (ec || !fs::exists(st)) throw Error(path + ": no such file or directory");
  if (!fs::is_directory(st)) return {path};
  std::vector<std::pair<fs::file_time_type, std::string>> logs, traces;
  for (const auto& entry : fs::directory_iterator(path, ec)) {
    if (!entry.is_regular_file(ec)) continue;
    std::string name = entry.path().filename().string();
    auto t = entry.last_write_time(ec);
    if (is_log_name(name)) logs.push_back({t, entry.path().string()});
    else if (is_trace_name(name)) traces.push_back({t, entry.path().string()});
  }
  if (ec) throw Error(path + ": cannot list the directory (" + ec.message() + ")");
  auto& pick = logs.empty() ? traces : logs;
  if (pick.empty()) throw Error(path + ": no TORCH_TRACE logs (*.log) or profiler traces (*.json) in this directory");
  std::vector<std::string> out;
  if (all) {
    std::sort(pick.begin(), pick.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
    for (auto& p : pick) out.push_back(p.second);
  } else {
    auto newest = std::max_element(pick.begin(), pick.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : a.second < b.second;
    });
    out.push_back(newest->second);
    skipped += static_cast<int>(pick.size()) - 1;
  }
  return out;
}

std::string stem(const std::string& path) {
  std::string name = fs::path(path).filename().string();
  for (const char* ext : {".gz", ".json", ".log", ".pt.trace"})
    if (ends_with(name, ext)) name.resize(name.size() - std::string(ext).size());
  return name;
}

}  // namespace

InputKind sniff_input(const std::string& path) {
  ByteSource src(path);
  char buf[256];
  size_t n = src.read(buf, sizeof buf);
  size_t i = 0;
  if (n >= 3 && static_cast<unsigned char>(buf[0]) == 0xEF && static_cast<unsigned char>(buf[1]) == 0xBB) i = 3;  // BOM
  while (i < n && (buf[i] == ' ' || buf[i] == '\n' || buf[i] == '\r' || buf[i] == '\t')) ++i;
  if (i < n && (buf[i] == '{' || buf[i] == '[')) return InputKind::ChromeTrace;
  if (i < n && std::string_view(buf + i, std::min<size_t>(n - i, 2)).find_first_of("VIWEFDC") == 0 && n - i > 5 &&
      std::isdigit(static_cast<unsigned char>(buf[i + 1])))
    return InputKind::TorchTrace;
  if (n == 0) throw Error(path + ": empty file");
  throw Error(path + ": neither a TORCH_TRACE log nor a profiler (Chrome trace) JSON file");
}

ImportResult import_files(const ImportRequest& request) {
  ImportResult result;
  if (request.paths.empty()) throw Error("no input given: name a TORCH_TRACE directory or log, or a profiler trace");
  std::vector<std::string> files;
  for (const auto& p : request.paths)
    for (auto& f : expand(p, request.all_logs, result.skipped_in_dirs))
      if (std::find(files.begin(), files.end(), f) == files.end()) files.push_back(f);

  struct Imported {
    session::Session session;
    ImportedFile file;
  };
  std::vector<Imported> logs, traces;
  for (const auto& f : files) {
    Imported im;
    im.file.path = f;
    im.file.kind = sniff_input(f);
    auto t0 = std::chrono::steady_clock::now();
    if (im.file.kind == InputKind::TorchTrace) {
      TraceFacts facts;
      im.session = import_torch_trace(f, request.trace_options, &facts);
      im.file.pid = facts.pid;
      im.file.bytes = facts.bytes;
    } else {
      KinetoFacts facts;
      im.session = import_kineto_trace(f, &facts);
      im.file.pid = facts.pid;
      im.file.bytes = facts.bytes;
    }
    im.file.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    (im.file.kind == InputKind::TorchTrace ? logs : traces).push_back(std::move(im));
  }

  // Logs are the groups; each profiler trace joins the log of its process if there is one.
  for (auto& l : logs) {
    ImportedSession g;
    g.session = std::move(l.session);
    g.files.push_back(l.file);
    result.sessions.push_back(std::move(g));
  }
  size_t log_groups = result.sessions.size();
  for (auto& t : traces) {
    int target = -1;
    for (size_t i = 0; i < log_groups && target < 0; ++i)
      if (t.file.pid >= 0 && result.sessions[i].files[0].pid == t.file.pid) target = static_cast<int>(i);
    for (size_t i = 0; i < log_groups && target < 0; ++i)
      if (t.session.rank >= 0 && result.sessions[i].session.rank == t.session.rank &&
          (t.file.pid < 0 || result.sessions[i].files[0].pid < 0))
        target = static_cast<int>(i);
    if (target < 0 && log_groups == 1 && (t.file.pid < 0 || result.sessions[0].files[0].pid < 0)) target = 0;
    if (target < 0) {
      if (log_groups > 0)
        result.not_joined.push_back(t.file.path + ": profiled process " + std::to_string(t.file.pid) +
                                    " matches no TORCH_TRACE log given");
      // Profiler traces of one process still share a session.
      for (size_t i = log_groups; i < result.sessions.size() && target < 0; ++i)
        if (t.file.pid >= 0 && result.sessions[i].files[0].pid == t.file.pid) target = static_cast<int>(i);
    }
    if (target < 0) {
      ImportedSession g;
      g.session = std::move(t.session);
      g.files.push_back(t.file);
      result.sessions.push_back(std::move(g));
    } else {
      merge_sessions(result.sessions[target].session, std::move(t.session));
      result.sessions[target].files.push_back(t.file);
    }
  }

  std::map<std::string, int> used;
  for (auto& g : result.sessions) {
    join_runtime_to_compile(g.session);
    g.session.break_costs = measure_imported_break_costs(g.session);
    g.session.env.kiln_version = build_description();  // the Kiln that imported it
    g.label = g.session.rank >= 0 ? "rank" + std::to_string(g.session.rank) : stem(g.files[0].path);
    if (used[g.label]++ > 0) g.label += "-" + std::to_string(used[g.label]);
  }
  return result;
}

}  // namespace kiln::importers
