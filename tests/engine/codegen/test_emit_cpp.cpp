#include "engine/codegen/cpp/emit_cpp.h"

#include <gtest/gtest.h>

#include <fstream>

#include "engine/codegen/cpp/cpp_compiler.h"
#include "engine/lowering/lower_graph.h"
#include "tests/support/compile_support.h"

using namespace kiln;

TEST(EmitCpp, GoldenSourcesForTheSampleModels) {
  for (auto [name, input] : std::vector<std::pair<const char*, const char*>>{{"small_mlp.pt", "4x64"},
                                                                             {"block.pt", "2x16x64"}}) {
    auto cm = test::compile_example(name, input);
    auto diff = test::check_golden(std::string("codegen/") + name + ".cpp", cm.stages["30_kernels.cpp"]);
    EXPECT_TRUE(diff.empty()) << diff;
  }
}

TEST(EmitCpp, CommentsCannotBeBrokenOutOf) {
  EXPECT_EQ(codegen::cpp_comment("a */ b\nint x = 1; \\"), "a */ b int x = 1;");
  EXPECT_EQ(codegen::cpp_comment("trailing\\\\"), "trailing");
  EXPECT_EQ(codegen::cpp_comment("tab\there\r\n\x01"), "tab here");
}

TEST(EmitCpp, HostileModelStringsStillCompile) {
  auto cm = test::compile_example("small_mlp.pt", "4x64");
  // Re-emit with node notes full of hostile text: quotes, backslashes, newlines, comment ends.
  auto lowered = lowering::lower_graph(cm.rt->regions()[0].entries[0].graph);
  auto fused = fusion::schedule(lowered.program);
  std::vector<codegen::NodeNote> notes;
  for (const auto& k : fused.kernels)
    for (const auto& n : k.nodes)
      notes.push_back(codegen::NodeNote{n, "aten::\"evil\"\\", "x.py:1 in a.b */ int boom = 1; //\\\n#error injected"});
  std::string src = codegen::emit_cpp(fused, notes);
  EXPECT_EQ(src.find("\n#error"), std::string::npos);
  std::string dir = test::temp_dir();
  std::ofstream(dir + "/k.cpp") << src;
  std::string out;
  EXPECT_EQ(test::run_command("c++ -std=c++17 -fsyntax-only " + dir + "/k.cpp", out), 0) << out;
}
