// The interpreter must reproduce module.forward exactly: same ops, same kernels, same bits.
#include "engine/capture/interpreter.h"
#include "engine/base/error.h"

#include <gtest/gtest.h>

#include <sstream>

#include "engine/model/model_impl.h"
#include "engine/runtime/example_inputs.h"
#include "tests/support/paths.h"

using namespace kiln;

namespace {

struct Case {
  const char* model;
  const char* input;
};

const Case kCases[] = {{"small_mlp.pt", "4x64"},        {"small_mlp_traced.pt", "8x64"}, {"gate.pt", "4x64"},
                       {"breaky.pt", "4x64"},           {"block.pt", "2x16x64"},        {"tiny_resnet.pt", "2x3x16x16"},
                       {"shape_branch.pt", "2x16"},     {"shape_branch.pt", "8x16"}};

}  // namespace

TEST(Interpreter, MatchesModuleForwardBitForBit) {
  for (const auto& c : kCases) {
    auto m = model::load_model(test::example(c.model));
    for (int trial = 0; trial < 3; ++trial) {  // fresh random inputs each trial, so both branches get exercised
      auto x = runtime::make_inputs({parse_input_spec(c.input)})[0];
      std::ostringstream printed;
      capture::Interpreter interp(m.impl->graph);
      capture::InterpreterHooks hooks;
      hooks.print_sink = &printed;
      auto out = interp.run({m.impl->frozen._ivalue(), x}, hooks);
      ASSERT_EQ(out.size(), 1u);
      torch::NoGradGuard g;
      auto ref = const_cast<torch::jit::Module&>(m.impl->module).forward({x}).toTensor();
      ASSERT_TRUE(out[0].isTensor()) << c.model;
      EXPECT_TRUE(torch::equal(out[0].toTensor(), ref)) << c.model << " differs from module.forward";
      if (std::string(c.model) == "breaky.pt") EXPECT_EQ(printed.str(), "mid\n");
    }
  }
}

TEST(Interpreter, HooksSeeEveryExecutedNode) {
  auto m = model::load_model(test::example("gate.pt"));
  capture::Interpreter interp(m.impl->graph);
  int sigmoids = 0, ifs = 0;
  capture::InterpreterHooks hooks;
  hooks.after_node = [&](const torch::jit::Node* n, const std::vector<c10::IValue>&) {
    if (n->kind() == c10::prim::If) ++ifs;
    if (n->kind() == c10::aten::sigmoid) ++sigmoids;
  };
  interp.run({m.impl->frozen._ivalue(), runtime::make_inputs({parse_input_spec("4x64")})[0]}, hooks);
  EXPECT_EQ(ifs, 1);
  EXPECT_EQ(sigmoids, 3);  // range(3), whether or not freezing unrolled it
}

TEST(Interpreter, WrongShapeNamesTheFailingOp) {
  auto m = model::load_model(test::example("small_mlp.pt"));
  capture::Interpreter interp(m.impl->graph);
  try {
    interp.run({m.impl->frozen._ivalue(), runtime::make_inputs({parse_input_spec("4x32")})[0]});
    FAIL() << "expected an error";
  } catch (const kiln::Error& e) {
    EXPECT_NE(std::string(e.what()).find("aten::linear failed"), std::string::npos) << e.what();
    ASSERT_NE(interp.failed_node(), nullptr);
    EXPECT_EQ(interp.failed_node()->kind(), c10::aten::linear);
  }
}
