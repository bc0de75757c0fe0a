// Model-supplied strings cannot alter generated code. A region graph is built whose value names,
// attribute path, module paths and source lines carry hostile text (comment ends, newlines,
// trailing backslashes, trigraphs, quotes, NUL, non-ASCII); it goes through lowering, fusion and the
// C++ (and CUDA) emitters. The generated source must compile, must be byte-for-byte the source of the
// same graph with plain names once comments are removed, and its kernels must compute the right values.
#include <gtest/gtest.h>
#include "kiln_build_config.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include "engine/codegen/cpp/cpp_compiler.h"
#include "engine/codegen/cpp/emit_cpp.h"
#include "engine/lowering/channels_last.h"
#include "engine/lowering/lower_graph.h"
#include "engine/lowering/wrong_lowering.h"
#include "engine/model/torch_compat.h"
#include "tests/support/paths.h"
#if KILN_WITH_CUDA
#include "engine/codegen/cuda/emit_cuda.h"
#include "engine/codegen/cuda/nvrtc_compiler.h"
#endif

using namespace kiln;

namespace {

const std::vector<std::string> kHostile = {
    "x */ int injected_a = 1; /*",
    "w??/",                           // a trigraph backslash, for compilers that still read trigraphs
    "bias\\",                         // a trailing backslash would splice the next line into the comment
    "d\nint injected_b = 2;",
    "e \"quoted\" 'single' `tick`",
    std::string("f\0nul", 5),         // an embedded NUL
    "g_r\xc3\xa9sum\xc3\xa9_\xce\xbb_\xe6\x95\xb0",  // UTF-8: résumé_λ_数
    "h\r\n#error injected\r\n",
};
const std::string kHostileModule = "layer.*/ #include <evil.h>\n#define float int\n//\\";
const std::string kHostileFile = "evil\".py\n#error from file";

ir::ValueMeta tensor_meta(std::vector<int64_t> shape) {
  ir::ValueMeta m;
  m.kind = ir::ValueMeta::Kind::Tensor;
  m.dtype = ir::DType::Float32;
  for (auto s : shape) m.shape.push_back(ir::Dim::concrete(s));
  m.device = "cpu";
  m.type_name = "Tensor";
  return m;
}

// x, w: f32[4, 8]; bias: f32[8] (an attribute); f = relu(x + bias) * w; outputs softmax(f, 1), sum(f, [1]).
// names: the 8 value names (x, w, bias, add, relu, mul, softmax, sum); module/file: provenance text.
ir::Graph region_graph(const std::vector<std::string>& names, const std::string& module, const std::string& file) {
  ir::Graph g;
  g.name = "region 0";
  auto placeholder = [&](const std::string& n) {
    ir::Node p;
    p.op = ir::NodeOp::Placeholder;
    p.target = n;
    p.outputs.push_back({n, tensor_meta({4, 8})});
    g.nodes.push_back(p);
  };
  placeholder(names[0]);
  placeholder(names[1]);
  ir::Node attr;
  attr.op = ir::NodeOp::GetAttr;
  attr.target = names[2];
  attr.outputs.push_back({names[2], tensor_meta({8})});
  g.nodes.push_back(attr);
  auto call = [&](const std::string& target, std::vector<ir::Arg> args, const std::string& out,
                  std::vector<int64_t> shape) {
    ir::Node n;
    n.target = target;
    n.args = std::move(args);
    n.outputs.push_back({out, tensor_meta(shape)});
    n.module_path = module;
    n.loc = ir::SourceLoc{file, 7, 3, "y = " + out + "  # " + module};
    g.nodes.push_back(n);
  };
  using ir::Arg;
  call("aten::add", {Arg::value(names[0]), Arg::value(names[2]), Arg::integer(1)}, names[3], {4, 8});
  call("aten::relu", {Arg::value(names[3])}, names[4], {4, 8});
  call("aten::mul", {Arg::value(names[4]), Arg::value(names[1])}, names[5], {4, 8});
  call("aten::softmax", {Arg::value(names[5]), Arg::integer(1), Arg::none()}, names[6], {4, 8});
  call("aten::sum", {Arg::value(names[5]), Arg::list({Arg::integer(1)}), Arg::boolean(false), Arg::none()}, names[7],
       {4});
  ir::Node out;
  out.op = ir::NodeOp::Output;
  out.target = "output";
  out.args = {Arg::value(names[6]), Arg::value(names[7])};
  g.nodes.push_back(out);
  return g;
}

std::vector<std::string> plain_names() { return {"x", "w", "bias", "add", "relu", "mul", "softmax", "sum"}; }

// The source with every // comment removed (the code a compiler sees, line by line).
std::string code_only(const std::string& src) {
  std::istringstream in(src);
  std::string out;
  for (std::string line; std::getline(in, line);) out += line.substr(0, line.find("//")) + "\n";
  return out;
}

struct Emitted {
  fusion::FusedProgram fused;
  std::string cpp;
};

Emitted emit(const ir::Graph& g) {
  EXPECT_TRUE(ir::verify(g).empty());
  auto lowered = lowering::lower_graph(g);
  Emitted e{fusion::schedule(lowered.program), ""};
  e.cpp = codegen::emit_cpp(e.fused, codegen::node_notes(g));
  return e;
}

bool printable_ascii(const std::string& s) {
  for (unsigned char c : s)
    if (c != '\n' && (c < 0x20 || c >= 0x7f)) return false;
  return true;
}

}  // namespace

TEST(CodegenEscaping, HostileNamesOnlyChangeComments) {
  auto hostile = emit(region_graph(kHostile, kHostileModule, kHostileFile));
  auto plain = emit(region_graph(plain_names(), "layer", "model.py"));
  ASSERT_FALSE(hostile.fused.kernels.empty());
  EXPECT_TRUE(printable_ascii(hostile.cpp));
  EXPECT_EQ(code_only(hostile.cpp), code_only(plain.cpp)) << hostile.cpp;
  EXPECT_EQ(hostile.cpp.find("\n#error"), std::string::npos);
  EXPECT_EQ(hostile.cpp.find("\n#define float"), std::string::npos);
  // The hostile names are still there for the reader, inside comments.
  EXPECT_NE(hostile.cpp.find("// x */ int injected_a = 1; /*"), std::string::npos) << hostile.cpp;
}

TEST(CodegenEscaping, CommentTextHasNoTrigraphs) {
  EXPECT_EQ(codegen::cpp_comment("a??/"), "a? ?/");
  EXPECT_EQ(codegen::cpp_comment("???="), "? ? ?=");
}

TEST(CodegenEscaping, HostileSourceCompilesWithTrigraphsAndWarningsAsErrors) {
  auto hostile = emit(region_graph(kHostile, kHostileModule, kHostileFile));
  std::string dir = test::temp_dir();
  std::ofstream(dir + "/k.cpp") << hostile.cpp;
  std::string out;
  // -trigraphs: the C++14 reading of ??/ as a backslash; -Wcomment: a comment that continues or nests.
  EXPECT_EQ(test::run_command("c++ -std=c++14 -trigraphs -Wall -Werror=comment -Werror=trigraphs -fsyntax-only " +
                                  dir + "/k.cpp",
                              out),
            0)
      << out << "\n" << hostile.cpp;
}

TEST(CodegenEscaping, KernelsFromHostileGraphComputeTheRightValues) {
  auto g = region_graph(kHostile, kHostileModule, kHostileFile);
  auto hostile = emit(g);
  std::vector<std::string> names;
  for (const auto& k : hostile.fused.kernels) names.push_back(k.name);
  auto lib = codegen::compile_cpp(hostile.cpp, names);
  auto x = at::randn({4, 8}), w = at::randn({4, 8}), bias = at::randn({8});
  const auto& comps = hostile.fused.program.comps;
  std::vector<at::Tensor> bufs(comps.size());
  std::vector<void*> ptrs(comps.size(), nullptr);
  for (size_t c = 0; c < comps.size(); ++c) {
    if (comps[c].kind == lowering::Comp::Kind::Input) bufs[c] = comps[c].input == 0 ? x : w;
    else if (comps[c].kind == lowering::Comp::Kind::Constant) bufs[c] = bias;
    else if (hostile.fused.realized[c]) {
      std::vector<int64_t> sizes;
      for (const auto& s : comps[c].sizes) sizes.push_back(s->value);
      bufs[c] = at::full(sizes, NAN);
    }
    if (bufs[c].defined()) ptrs[c] = bufs[c].data_ptr();
  }
  for (const auto& step : hostile.fused.steps) {
    ASSERT_EQ(step.kind, fusion::Step::Kind::Kernel);
    lib.kernels.at(hostile.fused.kernels[step.index].name)(ptrs.data(), nullptr, nullptr);
  }
  auto f = at::relu(x + bias) * w;
  const auto& outs = hostile.fused.program.outputs;
  ASSERT_EQ(outs.size(), 2u);
  EXPECT_TRUE(at::allclose(bufs[outs[0]], at::softmax(f, 1), 1e-5, 1e-6));
  EXPECT_TRUE(at::allclose(bufs[outs[1]], f.sum(1), 1e-5, 1e-5));
}

TEST(CodegenEscaping, UnknownFunctionNamesCannotEndTheirComment) {
  // A function the emitters do not know is written as a comment inside an expression; a wrongly
  // lowered add (the checker's test hook) stands in for a decomposition producing such a name.
  lowering::WrongLoweringForTesting wrong("add", "foo */ + 1; int injected; /*");
  auto e = emit(region_graph(plain_names(), "layer", "model.py"));
  EXPECT_EQ(e.cpp.find("int injected"), std::string::npos) << e.cpp;
  std::string dir = test::temp_dir();
  std::ofstream(dir + "/k.cpp") << e.cpp;
  std::string out;
  EXPECT_EQ(test::run_command("c++ -std=c++17 -fsyntax-only " + dir + "/k.cpp", out), 0) << out << "\n" << e.cpp;
}

#if KILN_WITH_CUDA
TEST(CodegenEscaping, CudaSourceFromHostileNamesOnlyChangesCommentsAndCompiles) {
  auto g = region_graph(kHostile, kHostileModule, kHostileFile);
  auto fused = fusion::schedule(lowering::lower_graph(g).program);
  auto hostile = codegen::emit_cuda(fused, codegen::node_notes(g));
  auto pg = region_graph(plain_names(), "layer", "model.py");
  auto plain = codegen::emit_cuda(fusion::schedule(lowering::lower_graph(pg).program), codegen::node_notes(pg));
  EXPECT_TRUE(printable_ascii(hostile));
  EXPECT_EQ(code_only(hostile), code_only(plain)) << hostile;
  try {
    EXPECT_GT(codegen::compile_cuda(hostile, "sm_90").cubin.size(), 0u);
  } catch (const std::exception& ex) {
    ADD_FAILURE() << ex.what() << "\n" << hostile;
  }
}
#endif

// A conv weight with a hostile attribute name, copied channels-last per call by the region's own kernel
// (lowering::copy_conv_weights_per_call): the copy's name and the conv's provenance reach only comments.
namespace {

ir::Graph conv_graph(const std::string& weight, const std::string& module) {
  ir::Graph g;
  g.name = "region 0";
  ir::Node x;
  x.op = ir::NodeOp::Placeholder;
  x.target = "x";
  x.outputs.push_back({"x", tensor_meta({1, 4, 8, 8})});
  g.nodes.push_back(x);
  ir::Node w;
  w.op = ir::NodeOp::GetAttr;
  w.target = weight;
  w.outputs.push_back({weight, tensor_meta({4, 4, 3, 3})});
  g.nodes.push_back(w);
  using ir::Arg;
  auto ints = [](int64_t a) { return Arg::list({Arg::integer(a), Arg::integer(a)}); };
  ir::Node conv;
  conv.target = "aten::conv2d";
  conv.args = {Arg::value("x"), Arg::value(weight), Arg::none(), ints(1), ints(1), ints(1), Arg::integer(1)};
  conv.outputs.push_back({"conv", tensor_meta({1, 4, 8, 8})});
  conv.module_path = module;
  g.nodes.push_back(conv);
  ir::Node relu;
  relu.target = "aten::relu";
  relu.args = {Arg::value("conv")};
  relu.outputs.push_back({"relu", tensor_meta({1, 4, 8, 8})});
  g.nodes.push_back(relu);
  ir::Node out;
  out.op = ir::NodeOp::Output;
  out.target = "output";
  out.args = {Arg::value("relu")};
  g.nodes.push_back(out);
  return g;
}

fusion::FusedProgram weight_copy_program(const ir::Graph& g) {
  EXPECT_TRUE(ir::verify(g).empty());
  auto lowered = lowering::lower_graph(g);
  lowering::choose_channels_last(lowered.program, false);
  EXPECT_EQ(lowering::copy_conv_weights_per_call(lowered), 1);
  return fusion::schedule(lowered.program);
}

}  // namespace

TEST(CodegenEscaping, HostileConvWeightNamesCopiedPerCallOnlyChangeComments) {
  for (const auto& name : kHostile) {
    auto hg = conv_graph(name, kHostileModule);
    auto pg = conv_graph("weight", "layer");
    auto hostile = weight_copy_program(hg), plain = weight_copy_program(pg);
    const auto hcpp = codegen::emit_cpp(hostile, codegen::node_notes(hg));
    EXPECT_TRUE(printable_ascii(hcpp));
    EXPECT_EQ(code_only(hcpp), code_only(codegen::emit_cpp(plain, codegen::node_notes(pg)))) << hcpp;
#if KILN_WITH_CUDA
    const auto hcu = codegen::emit_cuda(hostile, codegen::node_notes(hg));
    EXPECT_TRUE(printable_ascii(hcu));
    EXPECT_EQ(code_only(hcu), code_only(codegen::emit_cuda(plain, codegen::node_notes(pg)))) << hcu;
#endif
  }
}
