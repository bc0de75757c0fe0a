// Where a linear's bias is added (lowering/linear_bias.h): loop IR before/after (golden), which
// linears leave their bias to their readers and which keep it, and the compiled block against
// LibTorch eager on the CPU with the bias in the readers (kiln check's per-kernel comparison too).
#include "engine/lowering/linear_bias.h"

#include <gtest/gtest.h>

#include <functional>

#include "engine/commands/check_model.h"
#include "engine/commands/compile_model.h"
#include "engine/lowering/lower_graph.h"
#include "engine/model/model_impl.h"
#include "engine/runtime/example_inputs.h"
#include "tests/support/paths.h"
#include "tests/support/compile_support.h"

using namespace kiln;

namespace {

lowering::LoweredRegion lower_block() {
  auto cm = test::compile_example("block.pt", "2x16x64", "eager");
  return lowering::lower_graph(cm.rt->regions().at(0).entries.at(0).graph);
}

// The linear whose weight is the parameter `weight` (its second operand).
const lowering::Comp& linear_of(const lowering::LoopProgram& p, const std::string& weight) {
  for (const auto& c : p.comps)
    if (c.target == "aten::linear" && c.operands.size() > 1 && c.operands[1] >= 0 &&
        p.comps[c.operands[1]].attr.find(weight) != std::string::npos)
      return c;
  throw std::runtime_error("no linear of " + weight);
}

std::vector<lowering::Sym> sizes(std::initializer_list<int64_t> v) {
  std::vector<lowering::Sym> s;
  for (auto x : v) s.push_back(capture::sym_const(x));
  return s;
}

// The first region of the model at `path`, captured on `input` and lowered.
lowering::LoweredRegion lower_captured(const std::string& path, const std::string& input) {
  auto model = model::load_model(path);
  capture::CompileOptions o;
  o.backend = "eager";
  o.dynamic = false;
  runtime::CapturedRuntime rt(model, o);
  rt.run(runtime::make_inputs({parse_input_spec(input)}));
  return lowering::lower_graph(rt.regions().at(0).entries.at(0).graph);
}

// tests/data/`file` saved again as temp_dir()/`out_name` with every parameter named "...bias" whose name
// `pick` accepts drawn from N(0, 0.5) (saved and loaded again, so that eager and Kiln both read them):
// these models start their biases at zero, which would hide a bias lost on the way. Returns the path;
// *count says how many biases changed.
std::string with_random_biases(const std::string& file, const std::string& out_name,
                               const std::function<bool(const std::string&)>& pick, int* count) {
  torch::NoGradGuard no_grad;
  torch::jit::Module m = torch::jit::load(test::data(file));
  *count = 0;
  for (const auto& p : m.named_parameters(/*recurse=*/true))
    if (p.name.size() >= 4 && p.name.compare(p.name.size() - 4, 4, "bias") == 0 && pick(p.name)) {
      p.value.normal_(0.0, 0.5);
      ++*count;
    }
  std::string path = test::temp_dir() + "/" + out_name;
  m.save(path);
  return path;
}

// The model compiled with the biases in the readers, against eager over `checks` calls on fresh random inputs.
void expect_readers_match_eager(const model::Model& model, const std::string& input, int checks) {
  capture::CompileOptions o;
  o.backend = "kiln";
  o.linear_bias = "readers";
  o.dynamic = false;
  auto r = runtime::compile_model(model, {parse_input_spec(input)}, o, "", checks);
  EXPECT_TRUE(r.mismatch.empty()) << r.mismatch;
  EXPECT_TRUE(r.within_tolerance) << "max rel " << r.max_rel_error << ", max abs " << r.max_abs_error;
  EXPECT_FALSE(r.eager_constant);
}

}  // namespace

TEST(LinearBias, BeforeAfterGolden) {
  auto lowered = lower_block();
  std::string text = "# before\n" + lowering::loop_program_text(lowered.program);
  int changed = lowering::move_linear_bias_to_readers(lowered.program);
  text += "\n# after (" + std::to_string(changed) + " linears leave their bias to their readers)\n" +
          lowering::loop_program_text(lowered.program);
  EXPECT_TRUE(lowering::verify(lowered.program).empty());
  auto diff = test::check_golden("lowering/block.pt.linear_bias.txt", text);
  EXPECT_TRUE(diff.empty()) << diff;
}

TEST(LinearBias, LinearsReadOnlyByPointwiseWorkLeaveTheirBiasToItOthersKeepIt) {
  auto lowered = lower_block();
  auto& p = lowered.program;
  EXPECT_EQ(lowering::move_linear_bias_to_readers(p), 4);
  // out → residual add, ff1 → gelu, ff2 → residual add: the readers add the bias; qkv is read
  // through views (chunk, reshape) that the kernels copying them for matmul compute: they add it.
  for (const char* w : {"out", "ff1", "ff2", "qkv"}) {
    const auto& lin = linear_of(p, w);
    EXPECT_TRUE(lin.drop_bias) << w;
    const int me = static_cast<int>(&lin - p.comps.data());
    const int bias = lin.operands[2];
    for (const auto& c : p.comps) {
      std::set<int> loads;
      lowering::collect_loads(c.body, loads);
      if (!loads.count(me)) continue;
      EXPECT_TRUE(loads.count(bias)) << c.name << " reads " << w << " without its bias";
      EXPECT_TRUE(std::count(c.deps.begin(), c.deps.end(), bias)) << c.name;
    }
  }
  // A second run changes nothing.
  EXPECT_EQ(lowering::move_linear_bias_to_readers(p), 0);
}

TEST(LinearBias, RegionOutputsExternReadersAndOddBiasesKeepTheirBias) {
  using namespace lowering;
  auto make = [](std::vector<Sym> bias_sizes, bool as_output, bool extern_reader) {
    LoopProgram p;
    Comp x;
    x.kind = Comp::Kind::Input;
    x.name = "x";
    x.sizes = sizes({4, 8});
    Comp w;
    w.kind = Comp::Kind::Constant;
    w.name = "w";
    w.attr = "w";
    w.sizes = sizes({16, 8});
    Comp b = w;
    b.name = "b";
    b.attr = "b";
    b.sizes = std::move(bias_sizes);
    Comp lin;
    lin.kind = Comp::Kind::Extern;
    lin.name = "linear";
    lin.target = "aten::linear";
    lin.sizes = sizes({4, 16});
    lin.operands = {0, 1, 2};
    lin.bias_operand = 2;
    lin.deps = {0, 1, 2};
    Comp reader;
    reader.name = "relu";
    reader.sizes = sizes({4, 16});
    if (extern_reader) {
      reader.kind = Comp::Kind::Extern;
      reader.target = "aten::mm";
      reader.operands = {3, 1};
      reader.deps = {1, 3};
    } else {
      reader.body = ve_binary("max", ve_load(3, {ie_var(0), ie_var(1)}), ve_const(0));
      reader.deps = {3};
    }
    p.comps = {x, w, b, lin, reader};
    p.outputs = {as_output ? 3 : 4};
    return p;
  };
  auto plain = make(sizes({16}), false, false);
  EXPECT_EQ(move_linear_bias_to_readers(plain), 1);
  EXPECT_EQ(ve_str(plain.comps[4].body, {"x", "w", "b", "linear", "relu"}), "max(add(linear[i0, i1], b[i1]), 0)");
  auto output = make(sizes({16}), true, false);
  EXPECT_EQ(move_linear_bias_to_readers(output), 0);
  auto by_extern = make(sizes({16}), false, true);
  EXPECT_EQ(move_linear_bias_to_readers(by_extern), 0);
  auto wrong_size = make(sizes({1}), false, false);
  EXPECT_EQ(move_linear_bias_to_readers(wrong_size), 0);
}

// addmm(bias, a, b) with beta = alpha = 1 (GPT-2's Conv1D) is a product plus a bias like linear;
// with another beta or alpha, or a bias that is not a row vector, it keeps its bias.
TEST(LinearBias, AddmmWithUnitScalesLeavesItsBiasToItsReadersLikeALinear) {
  auto lowered = lower_captured(test::data("corpus/gpt2_embeds.pt"), "2x8x32");
  auto& p = lowered.program;
  int addmms = 0;
  for (const auto& c : p.comps)
    if (c.target == "aten::addmm") {
      ++addmms;
      EXPECT_EQ(c.bias_operand, 0) << c.name;
    }
  EXPECT_EQ(addmms, 8);  // c_attn, c_proj, c_fc, mlp.c_proj in each of two layers
  const int moved = lowering::move_linear_bias_to_readers(p);
  EXPECT_GE(moved, 8);
  for (const auto& c : p.comps)
    if (c.target == "aten::addmm") EXPECT_TRUE(c.drop_bias) << c.name;
  EXPECT_TRUE(lowering::verify(p).empty());

  // addmm(bias, a, b, beta=2): lowered with no bias to move.
  {
    using namespace lowering;
    LoopProgram q;
    Comp a;
    a.kind = Comp::Kind::Input;
    a.name = "a";
    a.sizes = sizes({4, 8});
    Comp b = a;
    b.kind = Comp::Kind::Constant;
    b.name = "b";
    b.attr = "b";
    b.sizes = sizes({8, 16});
    Comp bias = b;
    bias.name = "bias";
    bias.attr = "bias";
    bias.sizes = sizes({16});
    Comp mm;
    mm.kind = Comp::Kind::Extern;
    mm.name = "addmm";
    mm.target = "aten::addmm";
    mm.sizes = sizes({4, 16});
    mm.operands = {2, 0, 1};
    mm.deps = {0, 1, 2};
    Comp reader;
    reader.name = "relu";
    reader.sizes = sizes({4, 16});
    reader.body = ve_binary("max", ve_load(3, {ie_var(0), ie_var(1)}), ve_const(0));
    reader.deps = {3};
    q.comps = {a, b, bias, mm, reader};
    q.outputs = {4};
    auto scaled = q;  // as lowering leaves an addmm whose beta or alpha is not 1: no bias operand
    EXPECT_EQ(move_linear_bias_to_readers(scaled), 0);
    q.comps[3].bias_operand = 0;
    EXPECT_EQ(move_linear_bias_to_readers(q), 1);
    EXPECT_EQ(ve_str(q.comps[4].body, {"a", "b", "bias", "addmm", "relu"}), "max(add(addmm[i0, i1], bias[i1]), 0)");
  }
}

// GPT-2 (miniature) compiled with the biases in the readers (its addmms run as mm, the views of
// their products add the bias) is within float32's tolerance of eager on fresh random inputs.
TEST(LinearBias, Gpt2WithItsAddmmBiasesInTheReadersMatchesEager) {
  int biases = 0;
  std::string path = with_random_biases("corpus/gpt2_embeds.pt", "gpt2_biased.pt", [](const std::string&) { return true; },
                                        &biases);
  ASSERT_GE(biases, 8);
  expect_readers_match_eager(model::load_model(path), "2x8x32", 2);
}

TEST(LinearBias, TheBlockCompiledWithTheBiasInTheReadersMatchesEagerKernelByKernel) {
  auto model = model::load_model(test::example("block.pt"));
  for (const char* where : {"readers", "epilogue"}) {
    capture::CompileOptions o;
    o.backend = "kiln";
    o.linear_bias = where;
    o.dynamic = false;
    runtime::CapturedRuntime rt(model, o);
    for (int trial = 0; trial < 3; ++trial) {
      auto x = runtime::make_inputs({parse_input_spec("2x16x64")});
      auto out = rt.run(x)[0].toTensor();
      auto ref = runtime::eager_call(const_cast<torch::jit::Module&>(model.impl->module), {x[0]}).toTensor();
      // float32: the bias added after the product instead of inside it rounds differently.
      EXPECT_TRUE(out.allclose(ref, 1e-5, 1e-5)) << where;
    }
    std::string loops;
    for (const auto& st : rt.artifacts(0).at(0).stages)
      if (st.file == "20_loops_before_fusion.txt") loops = st.text;
    EXPECT_EQ(loops.find("without its bias") != std::string::npos, std::string(where) == "readers") << loops;
    // kiln check: kernel buffers NaN-poisoned, each kernel fed eager's values and compared; the
    // product without its bias is not compared with eager's linear (which has it).
    runtime::CheckOptions c;
    c.capture.backend = "kiln";
    c.capture.linear_bias = where;
    auto r = runtime::check_model(model, {parse_input_spec("2x16x64")}, c);
    EXPECT_TRUE(r.match) << where << "\n" << runtime::check_text(r);
  }
}

// Convolutions: mobilenet_v3_small's squeeze-excitation convs (conv2d with a bias, read by relu and
// hardsigmoid) leave their bias to those kernels, added along the channels; its other convs have no
// bias. With random biases (torchvision starts them at zero, which would hide a lost bias) the model
// compiled that way is within float32's tolerance of eager on fresh random inputs.
TEST(LinearBias, ConvolutionsReadByPointwiseWorkLeaveTheirBiasAlongTheChannels) {
  int biases = 0;
  std::string path = with_random_biases("corpus/mobilenet_v3_small.pt", "mobilenet_biased.pt",
                                        [](const std::string& name) { return name.find("fc") != std::string::npos; }, &biases);
  ASSERT_GE(biases, 18);  // fc1 and fc2 of its nine squeeze-excitation blocks
  auto model = model::load_model(path);
  auto lowered = lower_captured(path, "2x3x32x32");
  auto& p = lowered.program;
  int with_bias = 0;
  for (const auto& c : p.comps)
    if (c.target == "aten::conv2d" && c.bias_operand == 2 && c.operands[2] >= 0) ++with_bias;
  EXPECT_EQ(with_bias, 18);
  // and the classifier's first linear (its last is the region's output, which keeps its bias)
  EXPECT_EQ(lowering::move_linear_bias_to_readers(p), 18 + 1);
  int dropped = 0;
  for (const auto& c : p.comps)
    if (c.target == "aten::conv2d" && c.drop_bias) {
      ++dropped;
      EXPECT_EQ(c.sizes.size(), 4u);
    }
  EXPECT_EQ(dropped, 18);
  EXPECT_TRUE(lowering::verify(p).empty());
  // Every load of such a convolution became load + bias[index 1 of that load] (its channel); a bare
  // load of one would be a lost bias.
  using lowering::VExprNode;
  auto moved_conv = [&](const VExprNode* e) {
    return e && e->op == VExprNode::Op::Load && e->comp >= 0 && p.comps[e->comp].drop_bias &&
           p.comps[e->comp].target == "aten::conv2d";
  };
  int added = 0;
  std::function<void(const lowering::VExpr&)> visit = [&](const lowering::VExpr& e) {
    if (!e) return;
    if (e->op == VExprNode::Op::Binary && e->fn == "add" && moved_conv(e->a.get())) {
      const VExprNode& load = *e->a;
      ASSERT_TRUE(e->b && e->b->op == VExprNode::Op::Load && e->b->index.size() == 1 && load.index.size() == 4);
      EXPECT_EQ(e->b->comp, p.comps[load.comp].operands[2]);
      EXPECT_EQ(lowering::ie_str(e->b->index[0]), lowering::ie_str(load.index[1]));
      ++added;
      return;
    }
    if (moved_conv(e.get())) ADD_FAILURE() << "a load of " << p.comps[e->comp].name << " without its bias";
    visit(e->a), visit(e->b), visit(e->c);
  };
  for (const auto& c : p.comps) visit(c.body);
  EXPECT_GE(added, 18);

  expect_readers_match_eager(model, "2x3x32x32", 3);
  runtime::CheckOptions c;
  c.capture.backend = "kiln";
  c.capture.linear_bias = "readers";
  auto checked = runtime::check_model(model, {parse_input_spec("2x3x32x32")}, c);
  EXPECT_TRUE(checked.match) << runtime::check_text(checked);
}
