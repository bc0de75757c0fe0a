// JSON from someone else: nesting deep enough to overflow a recursive printer, and bytes that are not
// UTF-8, in sessions and in TORCH_TRACE logs. Each is kept in a bounded form; nothing crashes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/base/json_text.h"
#include "engine/report/render_chrome_trace.h"
#include "engine/report/render_json.h"
#include "engine/session/session.h"
#include "tests/support/paths.h"

using namespace kiln;

namespace {

session::Session session_with_args(const std::string& args_json) {
  session::Session s;
  s.model.path = "m.pt";
  session::Run r;
  r.id = 0;
  r.mode = "default";
  s.runs.push_back(r);
  session::TimelineEvent e;
  e.run = 0;
  e.name = "k";
  e.dur_ns = 10;
  e.args_json = args_json;
  s.timeline.push_back(e);
  return s;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
  return s;
}

}  // namespace

TEST(HostileJson, DeepArgsInASessionStayAStringInReportsAndTraces) {
  const size_t depth = 100000;
  std::string deep = std::string(depth, '[') + std::string(depth, ']');
  auto s = session_with_args(deep);
  std::string json = report::render_json(s);  // crashed (stack overflow) before the bound
  std::string trace = report::render_chrome_trace(s, "default");
  EXPECT_LT(json.size(), 4 * deep.size()) << "pretty-printing must not grow with the square of the depth";
  EXPECT_LT(trace.size(), 4 * deep.size());
  auto parsed = nlohmann::json::parse(json);
  EXPECT_TRUE(parsed["timeline"][0]["args"].is_string());
  // Shallow arguments are still structured.
  auto shallow = nlohmann::json::parse(report::render_json(session_with_args(R"({"grid": [1, 2, 3]})")));
  EXPECT_EQ(shallow["timeline"][0]["args"]["grid"][2], 3);
}

TEST(HostileJson, SafeDumpBoundsDepthAndReplacesInvalidUtf8) {
  nlohmann::json bad = {{"name", std::string("ab\xff\xfe" "cd")}};
  EXPECT_THROW(bad.dump(), nlohmann::json::type_error);
  EXPECT_EQ(safe_dump(bad), "{\"name\":\"ab\xEF\xBF\xBD\xEF\xBF\xBD" "cd\"}");
  nlohmann::json deep = 1;
  for (int i = 0; i < 200; ++i) deep = nlohmann::json::array({deep});
  EXPECT_NE(safe_dump(deep).find("nested deeper than 64 levels"), std::string::npos);
  EXPECT_EQ(json_depth(nlohmann::json::array({nlohmann::json::object({{"a", 1}})})), 2);
  EXPECT_EQ(text_nesting_depth(R"({"a": "[[[[", "b": [1, {"c": []}]})"), 4);
}

TEST(HostileJson, InvalidUtf8InATorchTraceLogIsImported) {
  // Every JSON string that starts a name, a kernel name or a source gets two bytes that are not UTF-8.
  std::string log = test::read_file(test::data("traces/block_default.log"));
  for (const char* key : {"\"name\": \"", "\"kernel_name\": \"", "\"source\": \"", "\"compile_id\": \""})
    log = replace_all(log, key, std::string(key) + "\xff\xfe");
  std::string dir = test::temp_dir(), path = dir + "/bad_utf8.log", out;
  std::ofstream(path, std::ios::binary) << log;
  std::string kiln = test::binary("app/kiln");
  ASSERT_EQ(test::run_command(kiln + " import " + path + " -o " + dir + "/s.kiln", out), 0) << out;
  EXPECT_EQ(test::run_command(kiln + " report " + dir + "/s.kiln --format json -o " + dir + "/r.json", out), 0) << out;
  EXPECT_NO_THROW(nlohmann::json::parse(test::read_file(dir + "/r.json")));
}
