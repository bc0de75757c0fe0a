// measure_what_if on real runs: breaky and the weighted-breaks model, each removable break rewritten,
// checked against eager on fresh inputs and timed; refusals stated; the JSON and text it prints.
// Timings are only checked for being measured (positive, consistent), never against a threshold.
#include "engine/commands/what_if.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine/base/error.h"
#include "engine/commands/explain.h"
#include "tests/support/paths.h"
#include "tests/support/weighted_breaks.h"

using namespace kiln;

namespace {

std::vector<std::vector<InputSpec>> one_call(const char* shape) { return {{parse_input_spec(shape)}}; }

const runtime::WhatIfBreak* site(const runtime::WhatIfResult& r, const std::string& id) {
  for (const auto& s : r.sites)
    if (s.info.id == id) return &s;
  return nullptr;
}

}  // namespace

TEST(WhatIf, BreakyEachBreakFixedAloneAndAllTogetherMeasuredAndChecked) {
  auto r = runtime::measure_what_if(test::example("breaky.pt"), one_call("4x64"), {}, 5);
  EXPECT_EQ(r.breaks, 3);
  ASSERT_EQ(r.sites.size(), 3u);
  EXPECT_GT(r.baseline_ms, 0);
  for (const auto& s : r.sites) {
    ASSERT_TRUE(s.removable) << s.info.id << ": " << s.why_not;
    EXPECT_GT(s.fixed.median_ms, 0);
    EXPECT_NEAR(s.fixed.speedup, r.baseline_ms / s.fixed.median_ms, 1e-9);
    EXPECT_EQ(s.fixed.breaks_left, 2);
    EXPECT_TRUE(s.fixed.check.ok) << s.info.id << " " << s.fixed.check.problem;
  }
  const auto* print = site(r, "KB001");
  ASSERT_NE(print, nullptr);
  EXPECT_EQ(print->kind, "drop_print");
  EXPECT_EQ(print->fixed.check.rule, "bit for bit");  // the eager backend replays LibTorch's ops
  ASSERT_EQ(print->fixed.check.missing_prints, std::vector<std::string>{"mid"});
  const auto* branch = site(r, "KB002");
  ASSERT_NE(branch, nullptr);
  EXPECT_EQ(branch->kind, "branch_as_where");
  EXPECT_EQ(branch->fixed.check.rule, "rtol 1e-04, atol 1e-05");
  EXPECT_TRUE(branch->fixed.check.missing_prints.empty());
  ASSERT_TRUE(r.has_all);
  EXPECT_EQ(r.all_indices, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(r.all.breaks_left, 0);
  EXPECT_TRUE(r.all.check.ok) << r.all.check.problem;
  EXPECT_GT(r.all.median_ms, 0);
  EXPECT_EQ(r.all.check.missing_prints, std::vector<std::string>{"mid"});

  auto text = runtime::what_if_text(r);
  EXPECT_NE(text.find("fixed alone:"), std::string::npos) << text;
  EXPECT_NE(text.find("all 3 removable fixed together:"), std::string::npos) << text;
  EXPECT_NE(text.find("no longer prints: \"mid\""), std::string::npos) << text;
}

TEST(WhatIf, WeightedBreaksTheLoopIsRefusedWithItsReason) {
  auto r = runtime::measure_what_if(test::weighted_breaks_model(), one_call("16x64"), {}, 3);
  const runtime::WhatIfBreak* loop = nullptr;
  int removable = 0;
  for (const auto& s : r.sites) {
    if (s.info.id == "KB005") loop = &s;
    if (!s.removable) continue;
    ++removable;
    EXPECT_GT(s.fixed.median_ms, 0);
    EXPECT_TRUE(s.fixed.check.ok) << s.info.id << " " << s.fixed.check.problem;
    EXPECT_EQ(s.fixed.breaks_left, r.breaks - 1);
  }
  ASSERT_NE(loop, nullptr);
  EXPECT_FALSE(loop->removable);
  EXPECT_NE(loop->why_not.find("trip count depends on a tensor's value"), std::string::npos);
  EXPECT_EQ(loop->fixed.median_ms, 0);  // nothing measured for a refused break
  EXPECT_GE(removable, 2);              // the print and the scalar read
  ASSERT_TRUE(r.has_all);
  EXPECT_TRUE(r.all.check.ok) << r.all.check.problem;
  EXPECT_EQ(r.all.breaks_left, r.breaks - removable);
  auto text = runtime::what_if_text(r);
  EXPECT_NE(text.find("KB005 prim::Loop"), std::string::npos) << text;
  EXPECT_NE(text.find("cannot be removed soundly: the loop's trip count"), std::string::npos) << text;
}

TEST(WhatIf, OneBreakOnlyAsThePanelAsks) {
  auto m = model::load_model(test::example("breaky.pt"));
  auto e = runtime::explain_model(m, one_call("4x64"), {}, 1);
  ASSERT_EQ(e.breaks.size(), 3u);
  auto r = runtime::measure_what_if(m, one_call("4x64"), {}, 3, e.breaks[2]);
  ASSERT_EQ(r.sites.size(), 1u);
  EXPECT_EQ(r.sites[0].info.id, "KB003");
  EXPECT_EQ(r.sites[0].kind, "scalar_as_tensor");
  EXPECT_FALSE(r.has_all);
  EXPECT_TRUE(r.sites[0].fixed.check.ok);
  auto text = runtime::what_if_site_text(r, r.sites[0]);
  EXPECT_NE(text.find("Rewrite: keep item() as a 0-d tensor"), std::string::npos) << text;
  EXPECT_NE(text.find("Fixed: "), std::string::npos) << text;

  capture::GraphBreak none = e.breaks[0];
  none.loc.line = 9999;
  EXPECT_THROW(runtime::measure_what_if(m, one_call("4x64"), {}, 1, none), Error);
  EXPECT_THROW(runtime::measure_what_if(m, one_call("4x64"), {}, 0), Error);
}

TEST(WhatIf, JsonFields) {
  auto m = model::load_model(test::weighted_breaks_model());
  auto r = runtime::measure_what_if(m, one_call("8x64"), {}, 2);
  auto e = runtime::explain_model(m, one_call("8x64"), {}, 1);
  auto j = nlohmann::json::parse(runtime::explain_json_with_what_if(e, r));
  ASSERT_TRUE(j.contains("what_if"));
  const auto& w = j["what_if"];
  EXPECT_EQ(w["rounds"], 2);
  EXPECT_EQ(w["calls"], 1);
  EXPECT_EQ(w["backend"], "eager");
  EXPECT_GT(w["baseline_ms"].get<double>(), 0);
  EXPECT_EQ(w["breaks"].get<int>(), r.breaks);
  ASSERT_EQ(w["sites"].size(), r.sites.size());
  for (const auto& s : w["sites"]) {
    for (const char* k : {"index", "id", "op", "file", "line", "reason", "removable", "rewrite"})
      EXPECT_TRUE(s.contains(k)) << k;
    if (s["removable"].get<bool>()) {
      EXPECT_FALSE(s.contains("why_not"));
      EXPECT_GT(s["fixed"]["median_ms"].get<double>(), 0);
      EXPECT_GT(s["fixed"]["speedup"].get<double>(), 0);
      for (const char* k : {"ok", "rule", "max_abs_diff", "problem", "missing_prints"})
        EXPECT_TRUE(s["fixed"]["check"].contains(k)) << k;
    } else {
      EXPECT_EQ(s["rewrite"], "none");
      EXPECT_FALSE(s["why_not"].get<std::string>().empty());
      EXPECT_FALSE(s.contains("fixed"));
    }
  }
  ASSERT_TRUE(w.contains("all"));
  EXPECT_FALSE(w["all"]["indices"].empty());
  EXPECT_TRUE(j.contains("break_count"));  // explain's own fields stay
}
