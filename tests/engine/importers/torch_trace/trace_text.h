// Builds TORCH_TRACE log text for tests: glog headers, envelopes with context and payloads with
// their real MD5, so fixtures stay small and readable in the test that uses them.
#pragma once

#include <fstream>
#include <string>

#include "engine/importers/common/md5.h"

namespace kiln::test {

struct TraceText {
  std::string text;
  int pid = 4242;
  int second = 0;

  // One record: `event` is the event key's JSON ("\"dynamo_start\": {...}"), `context` the rest
  // (", \"frame_id\": 0, ..."), `payload` lines joined by "\n" (empty: none).
  TraceText& record(const std::string& event, const std::string& context = "", const std::string& payload = "",
                    bool with_payload = false) {
    char ts[32];
    std::snprintf(ts, sizeof ts, "%02d:%02d:%02d.%06d", 7, (second / 60) % 60, second % 60, 0);
    ++second;
    text += "V1122 " + std::string(ts) + " " + std::to_string(pid) + " torch/_dynamo/x.py:1] {" + event + context;
    if (!payload.empty() || with_payload) text += ", \"has_payload\": \"" + importers::md5_hex(payload) + "\"";
    text += "}\n";
    if (!payload.empty() || with_payload) {
      size_t start = 0;
      while (true) {
        size_t nl = payload.find('\n', start);
        text += "\t" + payload.substr(start, nl == std::string::npos ? std::string::npos : nl - start) + "\n";
        if (nl == std::string::npos) break;
        start = nl + 1;
      }
    }
    return *this;
  }

  static std::string ctx(int frame, int compile, int attempt = 0) {
    return ", \"frame_id\": " + std::to_string(frame) + ", \"frame_compile_id\": " + std::to_string(compile) +
           ", \"attempt\": " + std::to_string(attempt);
  }

  void write(const std::string& path) const { std::ofstream(path, std::ios::binary) << text; }
};

}  // namespace kiln::test
