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

namespace {
session::Session imported(const std::string& data_file) {
  importers::ImportRequest req;
  req.paths = {test::data(data_file)};
  return importers::import_files(req).sessions.at(0).session;
}
}  // namespace

// An imported log reads as tlparse lays it out: one row per compile with the time split and cache
// results, the failures and restarts, the configuration that is not the default; recompiles'
// guards as differences; the whole Markdown small enough to paste into an issue.
TEST(Report, ImportedLogsAreCompactTables) {
  auto s = imported("tlparse/cache_hit_miss.log");
  auto md = report::render_markdown(s);
  EXPECT_LT(md.size(), 60u * 1024);
  EXPECT_NE(md.find("| compile id | frame | total ms | Dynamo ms | AOT autograd ms | Inductor ms | cache | guards | graph ops |"),
            std::string::npos);
  EXPECT_NE(md.find("| `[1/0]#2` | fn at /data/users/xmfan/a/pytorch/test/inductor/test\\_codecache.py:459 | 243.0 | 243.0 "
                    "| 135.0 | 77.5 | FX graph hit, AOT autograd bypass | 91 | 2 |"),
            std::string::npos)
      << md.substr(0, 3000);
  // cache_size_limit set for the test (not the default of 8) is listed; keys at their default are not.
  EXPECT_NE(md.find("| dynamo | `cache_size_limit` | `9223372036854775807` | `8` |"), std::string::npos);
  EXPECT_EQ(md.find("| dynamo | `specialize_int` |"), std::string::npos);
  EXPECT_EQ(md.find("dynamo\\_config:"), std::string::npos);  // no raw config dump
  EXPECT_NE(md.find("guards: those of \\[0/0\\], but:"), std::string::npos);

  auto failed = imported("tlparse/comp_failure.log");
  auto fmd = report::render_markdown(failed);
  EXPECT_NE(fmd.find("## Failures and restarts"), std::string::npos) << fmd;
  EXPECT_NE(fmd.find("BackendCompilerFailed"), std::string::npos) << fmd;
}

// However large the session, its Markdown stays under 60 KB; what is left out is counted.
TEST(Report, MarkdownOfAHugeSessionStaysUnder60KB) {
  session::Session s;
  s.model.path = "huge.pt";
  for (int r = 0; r < 300; ++r) {
    session::Run run;
    run.id = r;
    run.mode = "default";
    run.backend = "peer" + std::to_string(r);
    run.status = "failed: " + std::string(2000, 'x');
    s.runs.push_back(run);
  }
  for (int i = 0; i < 2000; ++i) {
    session::CompiledRegion c;
    c.compile_id = "[" + std::to_string(i) + "/0]";
    c.region = i;
    c.recompile_reason = "size mismatch at index 0. expected " + std::to_string(i);
    for (int g = 0; g < 60; ++g) c.guards.push_back("TENSOR_MATCH: check_tensor(L['x" + std::to_string(g) + "'], " + std::string(200, 'y') + std::to_string(i) + ")");
    c.metrics["note"] = std::string(5000, 'n');
    s.regions.push_back(c);
    session::Kernel k;
    k.name = "k" + std::to_string(i);
    k.compile_id = c.compile_id;
    k.nodes = std::vector<std::string>(100, "node_with_a_long_name");
    s.kernels.push_back(k);
    session::GraphBreakRecord b;
    b.info.id = "KB00" + std::to_string(i % 9);
    b.info.reason = std::string(3000, 'r') + std::to_string(i);
    b.info.loc.file = "m.py";
    b.info.loc.line = i + 1;
    b.hits = 1;
    s.breaks.push_back(b);
    session::ImportNote n;
    n.source = "log";
    n.what = "unknown record " + std::to_string(i);
    n.count = 1;
    n.example = std::string(1000, 'e');
    s.import_notes.push_back(n);
  }
  auto md = report::render_markdown(s);
  EXPECT_LT(md.size(), 60u * 1024) << md.size();
  EXPECT_NE(md.find("more region entries (their guards are in the JSON report)"), std::string::npos);
  EXPECT_NE(md.find("more (every break is in the JSON report)"), std::string::npos);
  EXPECT_NE(md.find("more kernels (all, with their source, in the JSON and HTML reports)"), std::string::npos);
}
