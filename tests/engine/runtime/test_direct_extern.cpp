// Externs called straight from their buffers: prepared only when every argument is a computation or a literal,
// and equal, bit for bit, to the interpreter's call of the same op.
#include "engine/runtime/direct_extern.h"

#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/irparser.h>
#include <torch/script.h>

#include <ATen/record_function.h>

#include <cstdlib>
#include <cstring>

#include "engine/runtime/captured_runtime.h"
#include "engine/runtime/example_inputs.h"
#include "tests/support/scripted_models.h"

using namespace kiln;
using lowering::Comp;
using runtime::DirectExtern;

namespace {

struct Parsed {
  std::shared_ptr<torch::jit::Graph> graph;
  std::map<std::string, const torch::jit::Node*> node;  // by its output's name
};

Parsed parse(const std::string& ir) {
  Parsed p;
  p.graph = std::make_shared<torch::jit::Graph>();
  std::unordered_map<std::string, torch::jit::Value*> values;
  torch::jit::parseIR(ir, p.graph.get(), values);
  for (const auto& [name, v] : values) p.node[name] = v->node();
  return p;
}

Comp extern_comp(const std::string& target, std::vector<int> operands) {
  Comp c;
  c.kind = Comp::Kind::Extern;
  c.target = target;
  c.operands = std::move(operands);
  return c;
}

const char* kConvs = R"IR(
graph(%x : Tensor, %w : Tensor, %b : Tensor, %n : int):
  %none : NoneType = prim::Constant()
  %one : int = prim::Constant[value=1]()
  %two : int = prim::Constant[value=2]()
  %s : int[] = prim::ListConstruct(%two, %two)
  %p : int[] = prim::ListConstruct(%one, %one)
  %d : int[] = prim::Constant[value=[1, 1]]()
  %plain : Tensor = aten::conv2d(%x, %w, %none, %s, %p, %d, %one)
  %biased : Tensor = aten::conv2d(%x, %w, %b, %s, %p, %d, %one)
  %sn : int[] = prim::ListConstruct(%n, %n)
  %computed : Tensor = aten::conv2d(%x, %w, %none, %sn, %p, %d, %one)
  %same_text : str = prim::Constant[value="same"]()
  %same : Tensor = aten::conv2d(%x, %w, %none, %d, %same_text, %d, %one)
  return (%plain, %biased, %computed, %same))IR";

// The linears and matmuls dispatched on this thread while a WrapperOpsSeen lives.
thread_local int t_wrapper_ops = 0;
std::unique_ptr<at::ObserverContext> count_wrapper_op(const at::RecordFunction& fn) {
  if (std::strcmp(fn.name(), "aten::linear") == 0 || std::strcmp(fn.name(), "aten::matmul") == 0) ++t_wrapper_ops;
  return nullptr;
}
struct WrapperOpsSeen {
  WrapperOpsSeen() : handle(at::addThreadLocalCallback(at::RecordFunctionCallback(count_wrapper_op).scopes({at::RecordScope::FUNCTION}))) {
    t_wrapper_ops = 0;
  }
  ~WrapperOpsSeen() { at::removeCallback(handle); }
  int count() const { return t_wrapper_ops; }
  at::CallbackHandle handle;
};

}  // namespace

TEST(DirectExtern, ConvolutionWithLiteralArgumentsIsPreparedAndEqualsTheOp) {
  auto g = parse(kConvs);
  // Computations 0, 1, 2: x, w, b.
  std::vector<at::Tensor> bufs = {torch::randn({2, 3, 9, 9}), torch::randn({4, 3, 3, 3}), torch::randn({4})};
  auto plain = runtime::prepare_direct_extern(extern_comp("aten::conv2d", {0, 1, -1, -1, -1, -1, -1}), g.node.at("plain"));
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->op, DirectExtern::Op::Conv2d);
  EXPECT_EQ(plain->stride, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(plain->padding, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(plain->dilation, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(plain->tensors, (std::vector<int>{0, 1}));
  auto out = runtime::call_direct_extern(*plain, bufs);
  EXPECT_TRUE(torch::equal(out, at::conv2d(bufs[0], bufs[1], {}, {2, 2}, {1, 1}, {1, 1}, 1)));

  auto biased_comp = extern_comp("aten::conv2d", {0, 1, 2, -1, -1, -1, -1});
  auto biased = runtime::prepare_direct_extern(biased_comp, g.node.at("biased"));
  ASSERT_TRUE(biased);
  EXPECT_EQ(biased->tensors, (std::vector<int>{0, 1, 2}));
  EXPECT_TRUE(biased->bias);
  EXPECT_FALSE(plain->bias);
  EXPECT_TRUE(torch::equal(runtime::call_direct_extern(*biased, bufs),
                           at::conv2d(bufs[0], bufs[1], bufs[2], {2, 2}, {1, 1}, {1, 1}, 1)));
  // Its readers add the bias (linear_bias.h): called without it.
  biased_comp.drop_bias = true;
  biased_comp.bias_operand = 2;
  auto dropped = runtime::prepare_direct_extern(biased_comp, g.node.at("biased"));
  ASSERT_TRUE(dropped);
  EXPECT_EQ(dropped->tensors, (std::vector<int>{0, 1}));
  EXPECT_FALSE(dropped->bias);
  EXPECT_TRUE(torch::equal(runtime::call_direct_extern(*dropped, bufs), out));

  // A stride computed at run time, and padding by name, stay with the interpreter.
  EXPECT_FALSE(runtime::prepare_direct_extern(extern_comp("aten::conv2d", {0, 1, -1, -1, -1, -1, -1}),
                                              g.node.at("computed")));
  EXPECT_FALSE(runtime::prepare_direct_extern(extern_comp("aten::conv2d", {0, 1, -1, -1, -1, -1, -1}), g.node.at("same")));
  // A tensor argument that is not a computation of the region: not prepared either.
  EXPECT_FALSE(runtime::prepare_direct_extern(extern_comp("aten::conv2d", {0, -1, -1, -1, -1, -1, -1}),
                                              g.node.at("plain")));
  // A target that is not the node's (a mismatch between lowering and graph) is never guessed at.
  EXPECT_FALSE(runtime::prepare_direct_extern(extern_comp("aten::linear", {0, 1, -1}), g.node.at("plain")));
}

TEST(DirectExtern, AMissingBufferLeavesTheCallToTheInterpreter) {
  auto g = parse(kConvs);
  auto plain = runtime::prepare_direct_extern(extern_comp("aten::conv2d", {0, 1, -1, -1, -1, -1, -1}), g.node.at("plain"));
  ASSERT_TRUE(plain);
  std::vector<at::Tensor> bufs = {torch::randn({2, 3, 9, 9}), at::Tensor()};
  EXPECT_FALSE(runtime::call_direct_extern(*plain, bufs).defined());
  bufs.resize(1);
  EXPECT_FALSE(runtime::call_direct_extern(*plain, bufs).defined());
}

TEST(DirectExtern, ProductsArePreparedWhenTheyHaveNoScalarArguments) {
  auto g = parse(R"IR(
graph(%a : Tensor, %b : Tensor, %bias : Tensor):
  %none : NoneType = prim::Constant()
  %one : int = prim::Constant[value=1]()
  %lin : Tensor = aten::linear(%a, %b, %bias)
  %mm : Tensor = aten::mm(%a, %b)
  %mat : Tensor = aten::matmul(%a, %b)
  %addmm : Tensor = aten::addmm(%bias, %a, %b, %one, %one)
  return (%lin, %mm, %mat, %addmm))IR");
  std::vector<at::Tensor> bufs = {torch::randn({5, 7}), torch::randn({6, 7}), torch::randn({6})};
  auto lin = runtime::prepare_direct_extern(extern_comp("aten::linear", {0, 1, 2}), g.node.at("lin"));
  ASSERT_TRUE(lin);
  EXPECT_TRUE(torch::equal(runtime::call_direct_extern(*lin, bufs), at::linear(bufs[0], bufs[1], bufs[2])));
  std::vector<at::Tensor> square = {torch::randn({5, 7}), torch::randn({7, 4})};
  auto mm = runtime::prepare_direct_extern(extern_comp("aten::mm", {0, 1}), g.node.at("mm"));
  ASSERT_TRUE(mm);
  EXPECT_TRUE(torch::equal(runtime::call_direct_extern(*mm, square), at::mm(square[0], square[1])));
  auto mat = runtime::prepare_direct_extern(extern_comp("aten::matmul", {0, 1}), g.node.at("mat"));
  ASSERT_TRUE(mat);
  EXPECT_TRUE(torch::equal(runtime::call_direct_extern(*mat, square), at::matmul(square[0], square[1])));
  // addmm keeps its beta and alpha: prepared only as the product its readers add the bias to.
  auto addmm = extern_comp("aten::addmm", {2, 0, 1, -1, -1});
  EXPECT_FALSE(runtime::prepare_direct_extern(addmm, g.node.at("addmm")));
  addmm.drop_bias = true;
  addmm.bias_operand = 0;
  auto product = runtime::prepare_direct_extern(addmm, g.node.at("addmm"));
  ASSERT_TRUE(product);
  EXPECT_EQ(product->tensors, (std::vector<int>{0, 1}));
}

// A linear without its bias and a matmul by a matrix, on inputs of three and four dimensions (tokens, an image's
// pixels in channels-last order): the input viewed as a matrix and one product, bit for bit linear's and matmul's
// result; inputs that are not contiguous, have no elements or do not match keep the op's own path and errors.
TEST(DirectExtern, ProductsOfBatchedRowsEqualTheOps) {
  auto g = parse(R"IR(
graph(%a : Tensor, %b : Tensor):
  %none : NoneType = prim::Constant()
  %lin : Tensor = aten::linear(%a, %b, %none)
  %mat : Tensor = aten::matmul(%a, %b)
  return (%lin, %mat))IR");
  auto lin = runtime::prepare_direct_extern(extern_comp("aten::linear", {0, 1, -1}), g.node.at("lin"));
  auto mat = runtime::prepare_direct_extern(extern_comp("aten::matmul", {0, 1}), g.node.at("mat"));
  ASSERT_TRUE(lin && mat);
  EXPECT_FALSE(lin->bias);
  at::Tensor w = torch::randn({12, 24});
  std::vector<at::Tensor> inputs = {
      torch::randn({3, 7, 24}),                                  // tokens
      torch::randn({2, 5, 6, 24}),                               // pixels, channels last
      torch::randn({2, 24, 5, 6}).permute({0, 2, 3, 1}),         // not contiguous: the op's own path
      torch::randn({0, 7, 24}),                                  // no rows
  };
  const uint64_t before = runtime::direct_extern_calls();
  for (const auto& x : inputs) {
    const bool direct = x.is_contiguous() && x.numel() > 0;
    for (bool lt : {false, true}) {
      at::Tensor got;
      {
        WrapperOpsSeen seen;
        got = runtime::call_direct_extern(*lin, {x, w}, lt);
        runtime::call_direct_extern(*mat, {x, w.t()}, lt);
        EXPECT_EQ(seen.count() == 0, direct) << x.sizes() << ": linear and matmul dispatched " << seen.count() << " times";
      }
      at::Tensor want = at::linear(x, w);
      EXPECT_EQ(got.sizes(), want.sizes()) << x.sizes();
      EXPECT_TRUE(torch::equal(got, want)) << x.sizes();
      got = runtime::call_direct_extern(*mat, {x, w.t()}, lt);
      want = at::matmul(x, w.t());
      EXPECT_EQ(got.sizes(), want.sizes()) << x.sizes();
      EXPECT_TRUE(torch::equal(got, want)) << x.sizes();
    }
  }
  EXPECT_EQ(runtime::direct_extern_calls() - before, 24u);
  // Sizes that do not match: linear's and matmul's own errors.
  EXPECT_THROW(runtime::call_direct_extern(*lin, {torch::randn({3, 7, 23}), w}), c10::Error);
  EXPECT_THROW(runtime::call_direct_extern(*mat, {torch::randn({3, 7, 23}), w.t()}), c10::Error);
}

// Attention's products: matmul of 4-d views (a transposed one among them) and bmm, called as one batched
// product, equal to matmul's result bit for bit; shapes that broadcast go through matmul itself.
TEST(DirectExtern, BatchedProductsEqualMatmul) {
  auto g = parse(R"IR(
graph(%a : Tensor, %b : Tensor):
  %mat : Tensor = aten::matmul(%a, %b)
  %bmm : Tensor = aten::bmm(%a, %b)
  return (%mat, %bmm))IR");
  auto mat = runtime::prepare_direct_extern(extern_comp("aten::matmul", {0, 1}), g.node.at("mat"));
  auto bmm = runtime::prepare_direct_extern(extern_comp("aten::bmm", {0, 1}), g.node.at("bmm"));
  ASSERT_TRUE(mat && bmm);
  EXPECT_EQ(bmm->op, DirectExtern::Op::Bmm);
  // q and k as attention reads them from one projection: [b, t, 3, h, d] sliced and transposed to [b, h, t, d].
  at::Tensor qkv = torch::randn({2, 5, 3, 4, 8});
  at::Tensor q = qkv.select(2, 0).transpose(1, 2), k = qkv.select(2, 1).transpose(1, 2);
  std::vector<std::vector<at::Tensor>> cases = {
      {q, k.transpose(-2, -1)},                                      // neither folds by a view: copies
      {torch::randn({2, 4, 5, 8}), torch::randn({2, 4, 8, 3})},      // contiguous: views
      {torch::randn({3, 2, 4, 5, 8}), torch::randn({3, 2, 4, 8, 6})}, // five dimensions
      {torch::randn({2, 4, 5, 8}), torch::randn({1, 4, 8, 3})},      // broadcast batch: matmul's own path
      {torch::randn({4, 5, 8}), torch::randn({2, 4, 8, 3})},         // broadcast rank: matmul's own path
  };
  for (const auto& bufs : cases) {
    at::Tensor got = runtime::call_direct_extern(*mat, bufs), want = at::matmul(bufs[0], bufs[1]);
    EXPECT_EQ(got.sizes(), want.sizes());
    EXPECT_TRUE(torch::equal(got, want)) << bufs[0].sizes() << " @ " << bufs[1].sizes();
  }
  std::vector<at::Tensor> three = {torch::randn({6, 5, 8}), torch::randn({6, 8, 3}).transpose(-2, -1).contiguous().transpose(-2, -1)};
  EXPECT_TRUE(torch::equal(runtime::call_direct_extern(*bmm, three), at::bmm(three[0], three[1])));
  EXPECT_TRUE(torch::equal(runtime::call_direct_extern(*mat, three), at::matmul(three[0], three[1])));
  // Wrong shapes keep the op's own error.
  std::vector<at::Tensor> wrong = {torch::randn({2, 4, 5, 8}), torch::randn({2, 4, 7, 3})};
  EXPECT_THROW(runtime::call_direct_extern(*mat, wrong), c10::Error);
  std::vector<at::Tensor> flat = {torch::randn({5, 8}), torch::randn({8, 3})};
  EXPECT_THROW(runtime::call_direct_extern(*bmm, flat), c10::Error);
}

// A whole model through the Kiln backend: direct calls give the interpreter's results exactly.
TEST(DirectExtern, ARegionGivesTheSameResultsEitherWay) {
  torch::jit::Module m("Net");
  m.register_parameter("w1", torch::randn({8, 3, 3, 3}), false);
  m.register_parameter("b1", torch::randn({8}), false);
  m.register_parameter("w2", torch::randn({8, 1, 3, 3}), false);
  m.register_parameter("lw", torch::randn({10, 8}), false);
  m.register_parameter("lb", torch::randn({10}), false);
  m.define(R"JIT(
def forward(self, x):
    y = torch.conv2d(x, self.w1, self.b1, [2, 2], [1, 1])
    y = torch.conv2d(torch.relu(y), self.w2, None, [1, 1], [1, 1], [1, 1], 8)
    z = torch.linear(y.mean([2, 3]), self.lw, self.lb)
    return torch.matmul(z, z.t())
)JIT");
  const std::string path = test::temp_dir() + "/direct_net.pt";
  m.save(path);
  auto model = model::load_model(path);
  auto x = runtime::make_inputs({parse_input_spec("2x3x12x12")})[0];
  capture::CompileOptions o;
  o.backend = "kiln";
  auto run = [&](const char* direct, uint64_t& calls) {
    ::setenv("KILN_DIRECT_EXTERNS", direct, 1);
    runtime::CapturedRuntime rt(model, o);
    const uint64_t before = runtime::direct_extern_calls();
    auto out = rt.run({x})[0].toTensor();
    calls = runtime::direct_extern_calls() - before;
    ::unsetenv("KILN_DIRECT_EXTERNS");
    return out;
  };
  uint64_t direct_calls = 0, interpreted_calls = 0;
  auto direct = run("1", direct_calls), interpreted = run("0", interpreted_calls);
  EXPECT_EQ(direct_calls, 4u) << "two convolutions, the linear and the matmul";
  EXPECT_EQ(interpreted_calls, 0u);
  EXPECT_TRUE(torch::equal(direct, interpreted));
  torch::NoGradGuard no_grad;
  auto eager = m.forward({x}).toTensor();
  EXPECT_TRUE(torch::allclose(direct, eager, 1e-4, 1e-4)) << (direct - eager).abs().max();
}

// The lookups that open a transformer: embedding is its own forward body (the weight's rows by indices of
// any shape, int64 or int32) and gather keeps its literal dim; both equal the ops bit for bit, and inputs the
// ops refuse get the ops' own errors.
TEST(DirectExtern, EmbeddingsAndGathersEqualTheOps) {
  auto g = parse(R"IR(
graph(%w : Tensor, %ids : Tensor, %n : int):
  %false : bool = prim::Constant[value=0]()
  %pad : int = prim::Constant[value=-1]()
  %one : int = prim::Constant[value=1]()
  %emb : Tensor = aten::embedding(%w, %ids, %pad, %false, %false)
  %gat : Tensor = aten::gather(%w, %one, %ids, %false)
  %dyn : Tensor = aten::gather(%w, %n, %ids, %false)
  return (%emb, %gat, %dyn))IR");
  auto emb = runtime::prepare_direct_extern(extern_comp("aten::embedding", {0, 1, -1, -1, -1}), g.node.at("emb"));
  ASSERT_TRUE(emb);
  EXPECT_EQ(emb->op, DirectExtern::Op::Embedding);
  const at::Tensor w = torch::randn({50, 16});
  for (const at::Tensor& ids : {torch::randint(0, 50, {7}), torch::randint(0, 50, {3, 9}), torch::randint(0, 50, {2, 3, 4}),
                                torch::randint(0, 50, {4, 5}, torch::kInt)}) {
    at::Tensor got = runtime::call_direct_extern(*emb, {w, ids});
    EXPECT_TRUE(torch::equal(got, at::embedding(w, ids))) << ids.sizes();
  }
  EXPECT_ANY_THROW(runtime::call_direct_extern(*emb, {torch::randn({5, 4, 3}), torch::randint(0, 5, {3})}));
  EXPECT_ANY_THROW(runtime::call_direct_extern(*emb, {w, torch::rand({3})}));  // float indices
  EXPECT_ANY_THROW(runtime::call_direct_extern(*emb, {w, torch::tensor({3, 50})}));  // out of range

  auto gat = runtime::prepare_direct_extern(extern_comp("aten::gather", {0, -1, 1, -1}), g.node.at("gat"));
  ASSERT_TRUE(gat);
  const at::Tensor idx = torch::randint(0, 16, {50, 5});
  EXPECT_TRUE(torch::equal(runtime::call_direct_extern(*gat, {w, idx}), at::gather(w, 1, idx)));
  EXPECT_ANY_THROW(runtime::call_direct_extern(*gat, {w, torch::randint(0, 16, {50, 5, 2})}));
  // A dim computed at run time: the interpreter's.
  EXPECT_FALSE(runtime::prepare_direct_extern(extern_comp("aten::gather", {0, -1, 1, -1}), g.node.at("dyn")));
}
