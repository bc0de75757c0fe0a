#include "engine/codegen/cpp/emit_cpp.h"

#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <fstream>

#include "engine/codegen/cpp/cpp_compiler.h"
#include "engine/lowering/lower_graph.h"
#include "tests/support/compile_support.h"
#include "tests/support/scripted_models.h"

using namespace kiln;

TEST(EmitCpp, GoldenSourcesForTheSampleModels) {
  for (auto [name, input] : std::vector<std::pair<const char*, const char*>>{{"small_mlp.pt", "4x64"},
                                                                             {"block.pt", "2x16x64"}}) {
    auto cm = test::compile_example(name, input);
    auto diff = test::check_golden(std::string("codegen/") + name + ".cpp.txt", cm.stages["30_kernels.cpp"]);
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

// Each kernel's span is its comment block and function, exactly: the kernel records (and the
// workbench's kernel view) show that text, without re-parsing the whole translation unit.
TEST(EmitCpp, KernelSpansCoverEachFunctionWithItsComments) {
  auto cm = test::compile_example("block.pt", "2x16x64");
  auto lowered = lowering::lower_graph(cm.rt->regions()[0].entries[0].graph);
  auto fused = fusion::schedule(lowered.program);
  ASSERT_GE(fused.kernels.size(), 2u);
  std::vector<codegen::KernelSpan> spans;
  std::string src = codegen::emit_cpp(fused, {}, &spans);
  ASSERT_EQ(spans.size(), fused.kernels.size());
  size_t previous_end = 0;
  for (size_t i = 0; i < spans.size(); ++i) {
    EXPECT_EQ(spans[i].name, fused.kernels[i].name);
    EXPECT_GE(spans[i].begin, previous_end);
    std::string text = codegen::kernel_text(src, spans, spans[i].name);
    EXPECT_EQ(text.rfind("// " + spans[i].name + ":", 0), 0u) << text;
    EXPECT_NE(text.find("extern \"C\" void " + spans[i].name + "("), std::string::npos);
    EXPECT_EQ(text.substr(text.size() - 2), "}\n");
    EXPECT_EQ(text.find("extern \"C\"", text.find("extern \"C\"") + 1), std::string::npos) << "one function only";
    previous_end = spans[i].end;
  }
  EXPECT_EQ(codegen::kernel_text(src, spans, "no_such_kernel"), "");
  EXPECT_EQ(codegen::kernel_text("short", {{"k", 2, 99}}, "k"), "") << "a span past the source's end gives nothing";
}

// A fused cat reads each piece only where that piece is the output: its inputs sit right against
// inaccessible pages (y just after one, x just before one), so a load of y at a negative offset or of x
// past its end faults. Before, a where's branches were hoisted into temporaries computed for every
// element (the memory checker found k6_cat reading 512 bytes before an allocation on squeezenet).
TEST(EmitCpp, ACatLoadsEachPieceOnlyWhereItIsTheOutput) {
  const std::string path = test::scripted_model("CatOfPointwise", R"JIT(
def forward(self, x, y):
    return torch.cat([torch.relu(x) * 2.0, torch.sigmoid(y) + 1.0], 1)
)JIT");
  auto m = model::load_model(path);
  capture::CompileOptions o;
  o.backend = "kiln";
  o.dynamic = false;
  runtime::CapturedRuntime rt(m, o);
  const long page = sysconf(_SC_PAGESIZE);
  char* mem = static_cast<char*>(mmap(nullptr, 4 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(mem, MAP_FAILED);
  ASSERT_EQ(mprotect(mem, page, PROT_NONE), 0);             // [guard][y ...][x ...][guard]
  ASSERT_EQ(mprotect(mem + 3 * page, page, PROT_NONE), 0);
  const int64_t rows = 4, cols = 16;
  auto y = torch::from_blob(mem + page, {rows, cols}, torch::kFloat32);
  auto x = torch::from_blob(mem + 3 * page - rows * cols * 4, {rows, cols}, torch::kFloat32);
  x.copy_(torch::randn({rows, cols}));
  y.copy_(torch::randn({rows, cols}));
  auto got = rt.run({x, y}).at(0).toTensor();
  auto want = torch::cat({torch::relu(x) * 2.0, torch::sigmoid(y) + 1.0}, 1);
  EXPECT_TRUE(torch::allclose(got, want, 1e-5, 1e-6));
  ASSERT_FALSE(rt.artifacts(0).empty());
  EXPECT_TRUE(rt.artifacts(0)[0].note.empty()) << rt.artifacts(0)[0].note;  // compiled, not run eagerly
  munmap(mem, 4 * page);
}
