// Import benchmark: synthesizes a TORCH_TRACE log and a Chrome (Kineto) trace, the trace both
// minified and in Kineto's own indented layout, each of at least the requested size in /tmp (default
// 1 GiB each) by repeating the sample records with fresh compile ids / timestamps / correlation ids,
// imports each once, and prints MB/s, peak RSS (VmHWM, reset before each import), the bytes the
// session holds, and the time and size of writing the session (save_session, as kiln import does). Deletes the files unless --keep.
//   kiln_import_bench [--mb N] [--keep] [--reuse] [--dir DIR]
// --reuse takes the inputs a run with --keep left in DIR instead of synthesizing them again.
// Not a test: nothing asserts speed.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "engine/importers/kineto/kineto.h"
#include "engine/importers/common/md5.h"
#include "engine/importers/torch_trace/torch_trace.h"
#include "engine/session/store.h"

using namespace kiln;  // NOLINT
using Clock = std::chrono::steady_clock;

namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int64_t status_kb(const char* key) {  // "VmHWM:" (peak resident) or "VmRSS:" (resident now)
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key, 0) == 0) return std::atoll(line.c_str() + std::strlen(key));
  return -1;
}
int64_t vm_hwm_kb() { return status_kb("VmHWM:"); }

void reset_peak_rss() { std::ofstream("/proc/self/clear_refs") << "5"; }

// Rewrites "frame_id": F and "compile_id": "F/C" so that F becomes F + offset.
std::string shift_ids(const std::string& line, int offset, bool* changed) {
  static const std::regex frame("\"frame_id\": (\\d+)"), compile("\"compile_id\": \"(\\d+)/");
  if (line.find("frame_id") == std::string::npos && line.find("compile_id") == std::string::npos) return line;
  std::string out;
  auto shift = [&](const std::string& in, const std::regex& re, const char* prefix, const char* suffix) {
    std::string r;
    auto it = std::sregex_iterator(in.begin(), in.end(), re);
    size_t last = 0;
    for (; it != std::sregex_iterator(); ++it) {
      r += in.substr(last, it->position() - last);
      r += prefix + std::to_string(std::stoi((*it)[1]) + offset) + suffix;
      last = it->position() + it->length();
    }
    return r + in.substr(last);
  };
  out = shift(shift(line, frame, "\"frame_id\": ", ""), compile, "\"compile_id\": \"", "/");
  if (out != line) *changed = true;
  return out;
}

// One record's lines: header then payload lines (with their tab).
void write_record(std::ofstream& out, std::string header, std::vector<std::string>& payload, int offset) {
  bool changed = false;
  header = shift_ids(header, offset, &changed);
  bool payload_changed = false;
  std::string joined;
  for (size_t i = 0; i < payload.size(); ++i) {
    payload[i] = shift_ids(payload[i], offset, &payload_changed);
    joined += (i ? "\n" : "") + payload[i].substr(1);
  }
  if (payload_changed) {  // keep the digest true
    size_t at = header.find("\"has_payload\": \"");
    if (at != std::string::npos) header.replace(at + 16, 32, importers::md5_hex(joined));
  }
  out << header << '\n';
  for (const auto& p : payload) out << p << '\n';
}

uint64_t make_torch_trace(const std::string& sample, const std::string& path, uint64_t min_bytes) {
  std::string text = read_all(sample);
  std::vector<std::string> lines;
  for (size_t at = 0; at < text.size();) {
    size_t nl = text.find('\n', at);
    if (nl == std::string::npos) nl = text.size();
    lines.push_back(text.substr(at, nl - at));
    at = nl + 1;
  }
  std::ofstream out(path, std::ios::binary);
  uint64_t written = 0;
  for (int rep = 0; written < min_bytes; ++rep) {
    std::string header;
    std::vector<std::string> payload;
    for (const auto& l : lines) {
      if (!l.empty() && l[0] == '\t') {
        payload.push_back(l);
        continue;
      }
      if (!header.empty()) write_record(out, header, payload, rep * 10);
      header = l;
      payload.clear();
    }
    if (!header.empty()) write_record(out, header, payload, rep * 10);
    written = static_cast<uint64_t>(out.tellp());
  }
  return written;
}

// An event as Kineto writes it: indented, its members in their order on shared lines, args below.
std::string kineto_layout(const nlohmann::ordered_json& e) {
  std::string out = "  {\n    ";
  bool first = true;
  for (const auto& [k, v] : e.items()) {
    if (k == "args") continue;
    out += (first ? "\"" : ", \"") + k + "\": " + v.dump();
    first = false;
  }
  if (e.contains("args")) {
    out += ",\n    \"args\": {\n      ";
    bool first_arg = true;
    for (const auto& [k, v] : e["args"].items()) {
      out += (first_arg ? "\"" : ", \"") + k + "\": " + v.dump();
      first_arg = false;
    }
    out += "\n    }";
  }
  return out + "\n  }";
}

// The sample's events repeated with fresh ids and times: minified with sorted members (Json =
// nlohmann::json), or in Kineto's own layout (nlohmann::ordered_json, indented = true).
template <typename Json>
uint64_t make_chrome_trace(const std::string& sample, const std::string& path, uint64_t min_bytes, bool indented) {
  auto doc = Json::parse(read_all(sample));
  auto events = doc["traceEvents"];
  doc["traceEvents"] = Json::array();
  double lo = 1e300, hi = -1e300;
  for (const auto& e : events)
    if (e.contains("ts") && e["ts"].is_number()) {
      lo = std::min(lo, e["ts"].template get<double>());
      hi = std::max(hi, e["ts"].template get<double>() + e.value("dur", 0.0));
    }
  double span = hi - lo + 100;
  std::string head = doc.dump(2);
  head.resize(head.rfind(']'));  // ... "traceEvents": [
  std::ofstream out(path, std::ios::binary);
  out << head << "\n";
  uint64_t written = 0;
  bool first = true;
  for (int rep = 0; written < min_bytes; ++rep) {
    double shift = rep * span;
    Json step = {{"ph", "X"},  {"cat", "user_annotation"}, {"name", "ProfilerStep#" + std::to_string(rep)},
                           {"pid", 1034}, {"tid", 1034}, {"ts", lo + shift - 1}, {"dur", span - 50}};
    out << (first ? "" : ",\n") << (indented ? kineto_layout(step) : step.dump());
    first = false;
    for (auto e : events) {
      if (e.value("ph", "") == "M" && rep > 0) continue;
      if (e.contains("ts") && e["ts"].is_number()) e["ts"] = e["ts"].template get<double>() + shift;
      if (e.contains("id") && e["id"].is_number()) e["id"] = e["id"].template get<int64_t>() + rep * 1000;
      if (e.contains("args")) {
        auto& a = e["args"];
        if (a.contains("External id")) a["External id"] = a["External id"].template get<int64_t>() + rep * 1000;
        if (a.contains("correlation")) a["correlation"] = a["correlation"].template get<int64_t>() + rep * 1000;
      }
      out << ",\n" << (indented ? kineto_layout(e) : e.dump());
    }
    written = static_cast<uint64_t>(out.tellp());
  }
  out << "\n]}\n";
  return static_cast<uint64_t>(out.tellp());
}

uint64_t stored_bytes(const session::Session& s) {
  uint64_t n = 0;
  for (const auto& r : s.regions) {
    for (const auto& g : r.graphs) n += g.stage.size() + g.text.size();
    for (const auto& g : r.guards) n += g.size();
    for (const auto& [k, v] : r.metrics) n += k.size() + v.size();
  }
  for (const auto& k : s.kernels) n += k.name.size() + k.source.size() + k.launch_config.size();
  for (const auto& e : s.events) n += e.message.size();
  for (const auto& b : s.breaks) n += b.info.reason.size() + b.info.hint.size();
  for (const auto& e : s.timeline)
    n += sizeof(e) + e.lane.size() + e.name.size() + e.args_json.size() + e.compile_id.size() + e.kernel.size();
  return n;
}

struct Row {
  std::string what;
  uint64_t bytes;
  double seconds;
  int64_t peak_kb;
  uint64_t stored;
  std::string detail;
  double write_seconds = 0;
  uint64_t file_bytes = 0;
};

// Writes `s` as kiln import does; returns the seconds it took and the file's size.
std::pair<double, uint64_t> timed_save(const session::Session& s, const std::string& path) {
  auto t = Clock::now();
  session::save_session(path, s);
  double sec = std::chrono::duration<double>(Clock::now() - t).count();
  uint64_t size = std::filesystem::file_size(path);
  std::filesystem::remove(path);
  return {sec, size};
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t mb = 1024;
  bool keep = false, reuse = false;
  std::string dir = "/tmp";
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--mb") && i + 1 < argc) mb = std::strtoull(argv[++i], nullptr, 10);
    else if (!std::strcmp(argv[i], "--keep")) keep = true;
    else if (!std::strcmp(argv[i], "--reuse")) reuse = keep = true;
    else if (!std::strcmp(argv[i], "--dir") && i + 1 < argc) dir = argv[++i];
  }
  const std::string data = KILN_TEST_DATA;
  const std::string log = dir + "/kiln_bench_torch_trace.log", trace = dir + "/kiln_bench_kineto.json",
                    indented = dir + "/kiln_bench_kineto_indented.json";
  const std::string session_path = dir + "/kiln_bench_session.kiln";
  uint64_t log_bytes = 0, trace_bytes = 0, indented_bytes = 0;
  if (reuse && std::filesystem::exists(log) && std::filesystem::exists(trace) && std::filesystem::exists(indented)) {
    log_bytes = std::filesystem::file_size(log);
    trace_bytes = std::filesystem::file_size(trace);
    indented_bytes = std::filesystem::file_size(indented);
    std::printf("reusing the inputs in %s\n\n", dir.c_str());
  } else {
    std::printf("synthesizing %llu MB inputs in %s ...\n", static_cast<unsigned long long>(mb), dir.c_str());
    auto t0 = Clock::now();
    log_bytes = make_torch_trace(data + "/traces/breaky_dynamic.log", log, mb << 20);
    trace_bytes = make_chrome_trace<nlohmann::json>(data + "/traces/kineto_small_mlp.json", trace, mb << 20, false);
    indented_bytes =
        make_chrome_trace<nlohmann::ordered_json>(data + "/traces/kineto_small_mlp.json", indented, mb << 20, true);
    std::printf("  done in %.1f s\n\n", std::chrono::duration<double>(Clock::now() - t0).count());
  }

  reset_peak_rss();
  std::printf("resident before importing (the binary, LibTorch and friends): %.0f MB\n\n",
              double(status_kb("VmRSS:")) / 1024);
  std::vector<Row> rows;
  for (bool md5 : {true, false}) {
    reset_peak_rss();
    importers::TorchTraceOptions o;
    o.verify_md5 = md5;
    auto t = Clock::now();
    auto s = importers::import_torch_trace(log, o);
    double sec = std::chrono::duration<double>(Clock::now() - t).count();
    rows.push_back({md5 ? "TORCH_TRACE (MD5 checked)" : "TORCH_TRACE (no MD5)", log_bytes, sec, vm_hwm_kb(),
                    stored_bytes(s),
                    std::to_string(s.regions.size()) + " compile ids, " + std::to_string(s.kernels.size()) +
                        " kernels, " + std::to_string(s.timeline.size()) + " spans, notes " +
                        std::to_string(s.import_notes.size())});
    if (md5) std::tie(rows.back().write_seconds, rows.back().file_bytes) = timed_save(s, session_path);
  }
  for (const auto& [what, path, bytes] : {std::make_tuple("Chrome trace (minified)", trace, trace_bytes),
                                          std::make_tuple("Chrome trace (Kineto's layout)", indented, indented_bytes)}) {
    reset_peak_rss();
    auto t = Clock::now();
    auto s = importers::import_kineto_trace(path);
    double sec = std::chrono::duration<double>(Clock::now() - t).count();
    rows.push_back({what, bytes, sec, vm_hwm_kb(), stored_bytes(s),
                    std::to_string(s.timeline.size()) + " events, " + std::to_string(s.runs.size()) + " runs, notes " +
                        std::to_string(s.import_notes.size())});
    std::tie(rows.back().write_seconds, rows.back().file_bytes) = timed_save(s, session_path);
  }

  std::printf("%-30s %8s %9s %9s %8s %12s %12s %9s %9s  %s\n", "input", "MB", "seconds", "MB/s", "s/GB",
              "peak RSS MB", "stored MB", "write s", "file MB", "what");
  for (const auto& r : rows) {
    double m = double(r.bytes) / (1 << 20);
    char write[32] = "-", file[32] = "-";
    if (r.file_bytes > 0) {
      std::snprintf(write, sizeof write, "%.2f", r.write_seconds);
      std::snprintf(file, sizeof file, "%.0f", double(r.file_bytes) / (1 << 20));
    }
    std::printf("%-30s %8.0f %9.2f %9.0f %8.2f %12.0f %12.0f %9s %9s  %s\n", r.what.c_str(), m, r.seconds,
                m / r.seconds, r.seconds / (m / 1024), double(r.peak_kb) / 1024, double(r.stored) / (1 << 20), write,
                file, r.detail.c_str());
  }
  long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
  std::printf("\none thread; machine has %ld cores\n", cores);
  if (!keep) {
    std::filesystem::remove(log);
    std::filesystem::remove(trace);
    std::filesystem::remove(indented);
  }
  return 0;
}
