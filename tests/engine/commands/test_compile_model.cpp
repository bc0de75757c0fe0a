// kiln compile's check against eager: a model whose eager output is constant (zero-initialized head)
// is named, because no kernel error can show in such a comparison.
#include "engine/commands/compile_model.h"

#include <gtest/gtest.h>

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
  auto blind = compile_source("zero_head", R"JIT(
def forward(self, x):
    return torch.relu(x) * 0.0
)JIT");
  EXPECT_TRUE(blind.within_tolerance);
  EXPECT_TRUE(blind.eager_constant);
  EXPECT_NE(runtime::compile_text(blind).find("WARNING: eager's outputs are constant"), std::string::npos);
  EXPECT_NE(runtime::compile_json(blind).find("\"eager_constant\": true"), std::string::npos);

  auto seeing = compile_source("live_head", R"JIT(
def forward(self, x):
    return torch.relu(x) * 2.0
)JIT");
  EXPECT_TRUE(seeing.within_tolerance);
  EXPECT_FALSE(seeing.eager_constant);
  EXPECT_EQ(runtime::compile_text(seeing).find("WARNING"), std::string::npos);
  EXPECT_EQ(runtime::compile_json(seeing).find("eager_constant"), std::string::npos);
}
