// libFuzzer target: the HTML and Markdown renderers on a session whose text fields come from the
// input (model path, break reason and source line, kernel source, a memory owner, and a memory
// event's and the profiler event's args as the session stores them). Findings besides
// crashes: markup that escapes into the HTML, raw control characters in the Markdown, and a report
// read row by row (session_rows.h) that is not the report of the whole session.
#include <algorithm>
#include <cctype>
#include <string>
#include <tuple>
#include <vector>

#include "engine/report/render_html.h"
#include "engine/report/render_markdown.h"
#include "engine/session/session.h"
#include "engine/session/session_rows.h"

namespace {

// The input cut at NUL bytes into up to n fields.
std::vector<std::string> fields(const uint8_t* data, size_t size, size_t n) {
  std::vector<std::string> out(n);
  size_t f = 0;
  for (size_t i = 0; i < size && f < n; ++i) {
    if (data[i] == 0) ++f;
    else out[f] += static_cast<char>(data[i]);
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto f = fields(data, size, 8);
  kiln::session::Session s;
  s.model.path = f[0];
  s.origin = f[1];
  kiln::session::GraphBreakRecord b;
  b.info.id = "KB001";
  b.info.reason = f[2];
  b.info.loc = kiln::ir::SourceLoc{f[3], 1, 1, f[4]};
  s.breaks.push_back(b);
  kiln::session::Kernel k;
  k.name = "k0";
  k.source = f[5];
  s.kernels.push_back(k);
  kiln::session::Run r;
  r.id = 0;
  r.mode = "default";
  r.backend = "kiln";
  s.runs.push_back(r);
  // A run's memory lane and what was live at its peak (report/memory_view reads them back).
  for (const auto& [category, name, args] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"memory", "allocated", f[7]}, {"memory", "allocated", "{\"bytes\": 4096}"},
           {"memory peak", f[6], f[7]}, {"memory peak", f[6] + "x", "{\"bytes\": 2048}"}}) {
    kiln::session::TimelineEvent e;
    e.run = 0;
    e.lane = "memory " + f[1];
    e.category = category;
    e.name = name;
    e.args_json = args;
    s.timeline.push_back(e);
  }
  // The run's profiler event: what tracing its window cost (report/trace_cost reads it back).
  kiln::session::TimelineEvent profiler;
  profiler.run = 0;
  profiler.lane = "profiler";
  profiler.category = "profiler";
  profiler.name = "CUPTI trace";
  profiler.args_json = f[7];
  s.timeline.push_back(profiler);
  std::string html = kiln::report::render_html(s);
  std::string lower = html;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const char* active : {"<script", "<img", "<iframe", "<object", "<embed", "<a "})
    if (lower.find(active) != std::string::npos) __builtin_trap();
  std::string md = kiln::report::render_markdown(s);
  for (unsigned char c : md)
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) __builtin_trap();
  kiln::session::SessionInMemory rows(s);
  if (kiln::report::render_html(rows) != html || kiln::report::render_markdown(rows) != md) __builtin_trap();
  return 0;
}
