#include "engine/commands/explain.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/paths.h"

using namespace kiln;

TEST(Explain, BreakyGolden) {
  auto m = model::load_model(test::example("breaky.pt"));
  auto r = runtime::explain_model(m, {{parse_input_spec("4x64")}, {parse_input_spec("4x64")}}, {}, /*seed=*/7);
  // The model path differs per checkout; the rest must not.
  r.model = "resources/examples/breaky.pt";
  for (const auto& c : r.calls) EXPECT_TRUE(c.equal);
  auto text = runtime::explain_text(r, /*timings=*/false);
  auto diff = test::check_golden("explain/breaky.txt", text);
  EXPECT_TRUE(diff.empty()) << diff;
  EXPECT_NE(text.find("1. KB001 side effect at sample_models.py:42:9  (hit 2x)"), std::string::npos) << text;
  EXPECT_NE(text.find("2. KB002 data-dependent branch at sample_models.py:43:9  (hit 2x)"), std::string::npos) << text;
  EXPECT_NE(text.find("3. KB003 scalar extraction from a tensor at sample_models.py:47:23  (hit 2x)"),
            std::string::npos)
      << text;
}

TEST(Explain, JsonCarriesBreaksRegionsAndEvents) {
  auto m = model::load_model(test::example("shape_branch.pt"));
  std::vector<std::vector<InputSpec>> calls;
  for (const char* s : {"2x16", "8x16", "6x16", "3x16"}) calls.push_back({parse_input_spec(s)});
  auto j = nlohmann::json::parse(runtime::explain_json(runtime::explain_model(m, calls, {})));
  EXPECT_EQ(j["graph_count"], 1);
  EXPECT_EQ(j["compile_count"], 3);
  EXPECT_EQ(j["break_count"], 0);
  EXPECT_EQ(j["regions"][0]["entries"][1]["recompile_reason"],
            "tensor 'x' size mismatch at index 0. expected 2, actual 8");
  bool recompile = false;
  for (const auto& e : j["events"]) recompile |= e["kind"] == "recompile";
  EXPECT_TRUE(recompile);
  for (const auto& c : j["calls"]) EXPECT_TRUE(c["equal"].get<bool>());
}

// Guards and breaks are located at the user's lines: TorchScript's own builtins ("<string>" frames,
// such as adaptive_avg_pool2d's size checks in torchvision's ResNet) never stand in for one.
TEST(Explain, TorchScriptBuiltinFramesAreNotShownAsSourceLines) {
  auto m = model::load_model(test::data("corpus/resnet18.pt"));
  auto text = runtime::explain_text(runtime::explain_model(m, {{parse_input_spec("2x3x32x32")}}, {}));
  EXPECT_EQ(text.find("<string>"), std::string::npos) << text;
  EXPECT_NE(text.find("branch inside a TorchScript builtin (assert len(defaults) > len(out_size))"), std::string::npos)
      << text;
  EXPECT_NE(text.find("Region 0 (from resnet.py:"), std::string::npos) << text;
}
