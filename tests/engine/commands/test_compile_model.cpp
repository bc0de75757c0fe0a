// kiln compile's check against eager: a model whose eager output is constant (zero-initialized head)
// is named, because no kernel error can show in such a comparison.
#include "engine/commands/compile_model.h"

#include <gtest/gtest.h>

#include <tuple>

#include "engine/model/model.h"
#include "tests/support/scripted_models.h"

using namespace kiln;

namespace {

runtime::CompileResult compile_source(const std::string& name, const std::string& source) {
  auto model = model::load_model(test::scripted_model(name, source));
  capture::CompileOptions o;
  o.backend = "kiln";
  o.dynamic = false;
  return runtime::compile_model(model, {parse_input_spec("4x8")}, o, "", 2);
}

}  // namespace

TEST(CompileModel, AConstantEagerOutputMakesTheCheckBlindAndSaysSo) {
  // x * 0: every output 0 whatever the input (a zero-initialized head); x * 2 depends on it.
  for (const auto& [name, factor, blind] : std::vector<std::tuple<std::string, std::string, bool>>{
           {"zero_head", "0.0", true}, {"live_head", "2.0", false}}) {
    auto r = compile_source(name, "def forward(self, x):\n    return torch.relu(x) * " + factor + "\n");
    EXPECT_TRUE(r.within_tolerance) << name;
    EXPECT_EQ(r.eager_constant, blind) << name;
    EXPECT_EQ(runtime::compile_text(r).find("WARNING: eager's outputs are constant") != std::string::npos, blind) << name;
    EXPECT_EQ(runtime::compile_json(r).find("\"eager_constant\": true") != std::string::npos, blind) << name;
  }
}
