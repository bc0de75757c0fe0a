// Reports from a real session: numbers round-trip DB -> JSON, the HTML stands alone and escapes
// model text, the Chrome trace has one event per recorded span.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine/base/error.h"
#include "engine/importers/import_files.h"
#include "engine/model/model.h"
#include "engine/report/render_chrome_trace.h"
#include "engine/report/render_html.h"
#include "engine/report/render_json.h"
#include "engine/report/render_markdown.h"
#include "engine/commands/profile_model.h"
#include "engine/session/store.h"
#include "tests/support/paths.h"

using namespace kiln;

namespace {

session::Session block_session(const std::string& path) {
  runtime::ProfileOptions o;
  o.iters = 5;
  o.device = "cpu";
  runtime::profile_model(model::load_model(test::example("block.pt")), {parse_input_spec("2x16x64")}, o, path);
  return session::load_session(path);
}

}  // namespace

TEST(Report, JsonNumbersMatchTheStoredSession) {
  auto s = block_session(test::temp_dir() + "/b.kiln");
  auto j = nlohmann::json::parse(report::render_json(s));
  ASSERT_EQ(j["runs"].size(), s.runs.size());
  for (size_t i = 0; i < s.runs.size(); ++i) {
    EXPECT_EQ(j["runs"][i]["mode"], s.runs[i].mode);
    EXPECT_DOUBLE_EQ(j["runs"][i]["latency"]["median_ms"].get<double>(), s.runs[i].latency.median_ms);
    EXPECT_DOUBLE_EQ(j["runs"][i]["speedup_vs_eager"].get<double>(), s.runs[i].speedup_vs_eager);
  }
  EXPECT_EQ(j["kernels"].size(), s.kernels.size());
}

TEST(Report, HtmlIsSelfContainedAndEscapesModelText) {
  auto s = block_session(test::temp_dir() + "/b.kiln");
  session::GraphBreakRecord evil;
  evil.info.id = "KB004";
  evil.info.reason = "<script>alert(1)</script>";
  evil.info.loc = ir::SourceLoc{"x.py", 3, 1, "y = f(\"</pre><img src=x>\")"};
  s.breaks.push_back(evil);
  s.kernels.front().source += "\n// </pre><script>bad()</script>";
  auto html = report::render_html(s);
  EXPECT_NE(html.find("<svg"), std::string::npos);
  // Nothing is fetched: no external sources, links or stylesheets (SVG's xmlns is a name, not a fetch).
  for (const char* ref : {"src=\"http", "href=\"http", "src='http", "href='http", "<link", "@import", "url(http"})
    EXPECT_EQ(html.find(ref), std::string::npos) << ref;
  EXPECT_EQ(html.find("<script>"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("Modes and backends"), std::string::npos);
  auto md = report::render_markdown(s);
  EXPECT_NE(md.find("default"), std::string::npos);
}

TEST(Report, ChromeTraceHasOneEventPerSpan) {
  auto s = block_session(test::temp_dir() + "/b.kiln");
  for (const auto& r : s.runs) {
    if (r.status != "ok") continue;
    size_t spans = 0;
    for (const auto& e : s.timeline) spans += e.run == r.id && e.dur_ns > 0;
    auto j = nlohmann::json::parse(report::render_chrome_trace(s, r.mode));
    size_t complete = 0;
    for (const auto& e : j["traceEvents"]) complete += e["ph"] == "X";
    EXPECT_EQ(complete, spans) << r.mode;
    break;  // the first run of each mode is the one exported; eager is first
  }
}

TEST(Report, ARunThatMeasuredNothingShowsDashesNotZerosInEveryFormat) {
  auto s = block_session(test::temp_dir() + "/b.kiln");
  session::Run skipped = s.runs.front();
  skipped.mode = "reduce-overhead";
  skipped.status = "skipped: needs an NVIDIA GPU";
  skipped.latency = {};
  skipped.speedup_vs_eager = 0;
  skipped.kernels_per_iter = 0;
  skipped.max_rel_error = skipped.max_abs_error = 0;
  s.runs.push_back(skipped);
  auto md = report::render_markdown(s);
  auto row = md.substr(md.find("| reduce-overhead |"));
  row = row.substr(0, row.find('\n'));
  EXPECT_EQ(row.find("0.0"), std::string::npos) << row;
  EXPECT_EQ(row.find("| 0 |"), std::string::npos) << row;
  auto html = report::render_html(s);
  auto hrow = html.substr(html.find("<tr><td>reduce-overhead"));
  hrow = hrow.substr(0, hrow.find("</tr>"));
  EXPECT_EQ(hrow.find(">0.0"), std::string::npos) << hrow;
  // Eager compiles nothing: its compile columns are "-" in HTML as in Markdown.
  auto erow = html.substr(html.find("<tr><td>eager"));
  erow = erow.substr(0, erow.find("</tr>"));
  EXPECT_EQ(erow.find(">0.0<"), std::string::npos) << erow;
  EXPECT_NE(erow.find(">-<"), std::string::npos) << erow;
}

TEST(Report, ChromeTracePicksRunsByModeBackendOrPeerAndExportsImportedSessions) {
  auto s = block_session(test::temp_dir() + "/b.kiln");
  session::Run peer = s.runs.back();
  peer.id = 100;
  peer.mode = "default";
  peer.backend = "cudagraphs";
  s.runs.push_back(peer);
  session::TimelineEvent e;
  e.run = 100;
  e.lane = "host:1";
  e.name = "replay";
  e.dur_ns = 10;
  s.timeline.push_back(e);
  for (const char* which : {"default/cudagraphs", "cudagraphs"}) {
    auto j = nlohmann::json::parse(report::render_chrome_trace(s, which));
    EXPECT_EQ(j["otherData"]["backend"], "cudagraphs") << which;
  }
  std::string err = test::error_of([&] { report::render_chrome_trace(s, "nope"); });
  EXPECT_NE(err.find("default/cudagraphs"), std::string::npos) << err;
  EXPECT_EQ(err.find("default, default,"), std::string::npos) << err;  // each label once

  // An imported torch.compile log has no runs: its compile events are the trace.
  importers::ImportRequest req;
  req.paths = {test::data("traces/block_default.log")};
  auto imported = importers::import_files(req).sessions.at(0).session;
  ASSERT_TRUE(imported.runs.empty());
  auto j = nlohmann::json::parse(report::render_chrome_trace(imported, "default"));
  EXPECT_GT(j["traceEvents"].size(), 10u);
  EXPECT_EQ(j["otherData"]["run"], -1);
}
