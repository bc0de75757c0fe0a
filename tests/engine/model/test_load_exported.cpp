// torch.export programs (tests/data/pt2: the corpus miniatures exported with torch 2.11 and a
// dynamic-batch MLP): read without Python, their weights and graph give the outputs torch recorded
// when it exported them, Kiln compiles them within tolerance, and a program a LibTorch cannot run
// or that is damaged is one clear error naming the file.
#include "engine/model/load_exported.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <zip.h>

#include <filesystem>
#include <fstream>

#include "engine/base/error.h"
#include "engine/commands/compile_model.h"
#include "engine/commands/explain.h"
#include "engine/model/model_impl.h"
#include "engine/runtime/captured_runtime.h"
#include "engine/runtime/compare_values.h"
#include "tests/support/paths.h"

using namespace kiln;

namespace {

nlohmann::json manifest() {
  std::ifstream in(test::data("pt2/manifest.json"));
  return nlohmann::json::parse(in);
}

struct Recorded {
  std::vector<at::Tensor> inputs, outputs;
};

Recorded recorded(const std::string& name) {
  auto io = torch::jit::load(test::data("pt2/" + name + ".io.pt"));
  Recorded r;
  for (int i = 0; io.hasattr("input" + std::to_string(i)); ++i) r.inputs.push_back(io.attr("input" + std::to_string(i)).toTensor());
  for (int i = 0; io.hasattr("output" + std::to_string(i)); ++i) r.outputs.push_back(io.attr("output" + std::to_string(i)).toTensor());
  return r;
}

// Ops a LibTorch lacks (1.13 has no scaled_dot_product_attention): the error names the op.
bool unknown_op_error(const std::string& error) { return error.find("is not known to this LibTorch") != std::string::npos; }

// A .pt2 archive holding only models/model.json (the program's text; no weights).
void write_program(const std::string& file, const std::string& model_json) {
  int err = 0;
  zip_t* z = zip_open(file.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
  ASSERT_NE(z, nullptr);
  std::string text = model_json;
  zip_source_t* src = zip_source_buffer(z, text.data(), text.size(), 0);
  zip_file_add(z, "p/models/model.json", src, ZIP_FL_OVERWRITE);
  ASSERT_EQ(zip_close(z), 0);
}

}  // namespace

TEST(LoadExported, EveryExportedMiniatureGivesTheOutputsTorchRecordedAndCompiles) {
  int read = 0;
  const auto all = manifest();
  for (const auto& e : all["models"]) {
    const std::string name = e["name"];
    if (name == "mlp_dynamic") continue;
    const std::string path = test::data("pt2/" + e["file"].get<std::string>());
    std::optional<model::Model> m;
    std::string error = test::error_of([&] { m = model::load_model(path); });
    if (!error.empty()) {
      EXPECT_TRUE(unknown_op_error(error)) << name << ": " << error;
      EXPECT_NE(error.find(path), std::string::npos) << error;
      continue;
    }
    ++read;
    auto io = recorded(name);
    ASSERT_EQ(io.inputs.size(), 1u) << name;
    ASSERT_EQ(io.outputs.size(), 1u) << name;
    // The module read from the archive (weights, argument order, defaults) against torch's own run.
    {
      torch::NoGradGuard no_grad;
      auto module = m->impl->module;
      auto got = module.forward({io.inputs[0]});
      auto err = runtime::compare_to_eager(got, io.outputs[0]);
      EXPECT_TRUE(err.ok) << name << ": max rel " << err.max_rel << " against the outputs torch recorded " << err.problem;
    }
    // Kiln's compiled kernels on the recorded input.
    capture::CompileOptions o;
    o.backend = "kiln";
    o.dynamic = false;
    runtime::CapturedRuntime rt(*m, o);
    auto outs = rt.run({io.inputs[0]});
    ASSERT_EQ(outs.size(), 1u);
    auto err = runtime::compare_to_eager(outs[0], io.outputs[0]);
    EXPECT_TRUE(err.ok) << name << " compiled: max rel " << err.max_rel << " " << err.problem;
    for (const auto& arts : rt.artifacts(0)) {
      EXPECT_TRUE(arts.note.empty()) << name << ": " << arts.note;
      EXPECT_FALSE(arts.kernels.empty()) << name;
    }
  }
  EXPECT_GE(read, 6) << "resnet18, mobilenet_v3_small, efficientnet_b0, convnext_tiny, bert and gpt2 read everywhere";
}

TEST(LoadExported, ADynamicBatchProgramRunsAtSeveralBatchSizesWithOneCompile) {
  auto m = model::load_model(test::data("pt2/mlp_dynamic.pt2"));
  auto io = recorded("mlp_dynamic");
  ASSERT_EQ(io.inputs.size(), 2u);  // batch 4 and batch 7
  capture::CompileOptions o;
  o.backend = "kiln";  // dynamic left automatic: the program's own Dim makes the batch symbolic
  runtime::CapturedRuntime rt(m, o);
  for (size_t i = 0; i < 2; ++i) {
    auto outs = rt.run({io.inputs[i]});
    auto err = runtime::compare_to_eager(outs.at(0), io.outputs[i]);
    EXPECT_TRUE(err.ok) << "batch " << io.inputs[i].size(0) << ": max rel " << err.max_rel;
  }
  const auto regions = rt.regions();  // a copy: the loop below reads into it
  ASSERT_EQ(regions.size(), 1u);
  EXPECT_EQ(regions[0].entries.size(), 1u) << "one compile for both batch sizes";
  // Its guards state the program's range for the batch (range_constraints: s77 in 1..1024).
  bool range_guard = false;
  for (const auto& g : regions[0].entries[0].guards.guards)
    if (g.kind == capture::Guard::Kind::SymbolicSize && g.dim == 0)
      range_guard = g.text.find("s77, 1..1024") != std::string::npos && g.text.find("<= 1024") != std::string::npos;
  EXPECT_TRUE(range_guard);
  // Outside what the program was exported for: one error naming the input, the dimension and the range.
  auto too_big = test::error_of([&] { rt.run({torch::randn({2000, 16})}); });
  EXPECT_NE(too_big.find("x.size(0) = 2000 is outside the range the program was exported for: 1 <= s77 <= 1024"),
            std::string::npos) << too_big;
  auto wrong_static = test::error_of([&] { rt.run({torch::randn({4, 17})}); });
  EXPECT_NE(wrong_static.find("x.size(1) = 17, but the program was exported with 16"), std::string::npos) << wrong_static;
  EXPECT_EQ(rt.regions()[0].entries.size(), 1u) << "refused calls compile nothing";
  // Source lines and module paths from the program's node metadata (stack_trace, nn_module_stack).
  std::vector<std::string> linears;
  for (const auto& n : regions[0].entries[0].graph.nodes) {
    if (n.target != "aten::linear") continue;
    linears.push_back(n.module_path);
    EXPECT_NE(n.loc.file.find("make_exported.py"), std::string::npos) << n.loc.file;
    EXPECT_EQ(n.loc.line, 30);
  }
  EXPECT_EQ(linears, (std::vector<std::string>{"fc1", "fc2"}));
  // explain says why there are no breaks.
  capture::CompileOptions eo;
  eo.dynamic = false;
  auto ex = runtime::explain_model(m, {{parse_input_spec("4x16")}}, eo);
  EXPECT_TRUE(ex.exported_program);
  EXPECT_NE(runtime::explain_text(ex).find("one graph by construction"), std::string::npos) << runtime::explain_text(ex);
  EXPECT_EQ(m.forward_arg_names(), std::vector<std::string>{"x"});
}

TEST(LoadExported, DamagedOrUnknownProgramsAreOneClearError) {
  const std::string dir = test::temp_dir();
  // A truncated archive.
  {
    std::ifstream in(test::data("pt2/mlp_dynamic.pt2"), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream out(dir + "/cut.pt2", std::ios::binary);
    out << bytes.substr(0, bytes.size() / 2);
  }
  auto cut = test::error_of([&] { model::load_model(dir + "/cut.pt2"); });
  EXPECT_NE(cut.find(dir + "/cut.pt2"), std::string::npos) << cut;
  EXPECT_EQ(cut.find('\n'), std::string::npos) << cut;
  // A program of another schema version, and one calling an operator no LibTorch has.
  write_program(dir + "/v9.pt2", R"({"schema_version": {"major": 9, "minor": 0}, "graph_module": {}})");
  EXPECT_TRUE(model::is_exported_program(dir + "/v9.pt2"));
  auto v9 = test::error_of([&] { model::load_model(dir + "/v9.pt2"); });
  EXPECT_NE(v9.find("export schema version 9.0"), std::string::npos) << v9;
  write_program(dir + "/op.pt2", R"({"schema_version": {"major": 8, "minor": 17}, "graph_module": {
    "signature": {"input_specs": [{"user_input": {"arg": {"as_tensor": {"name": "x"}}}}],
                  "output_specs": [{"user_output": {"arg": {"as_tensor": {"name": "y"}}}}]},
    "graph": {"nodes": [{"target": "torch.ops.aten.no_such_op.default",
                         "inputs": [{"name": "self", "arg": {"as_tensor": {"name": "x"}}}],
                         "outputs": [{"as_tensor": {"name": "y"}}]}]}}})");
  auto op = test::error_of([&] { model::load_model(dir + "/op.pt2"); });
  EXPECT_NE(op.find("aten::no_such_op"), std::string::npos) << op;
  EXPECT_NE(op.find(dir + "/op.pt2"), std::string::npos) << op;
}

// The exporter writes aten.view where its own trace's strides allowed one; on another device a kernel may
// return other strides (CUDA's attention output, seen on vit_b_16), and a strict view then fails. The program is
// functional, so Kiln reads the view as a reshape: here a view of a transposed (non-contiguous) input.
TEST(LoadExported, AViewOfATensorWithOtherStridesIsReadAsAReshape) {
  const std::string dir = test::temp_dir();
  write_program(dir + "/view.pt2", R"({"schema_version": {"major": 8, "minor": 17}, "graph_module": {
    "signature": {"input_specs": [{"user_input": {"arg": {"as_tensor": {"name": "x"}}}}],
                  "output_specs": [{"user_output": {"arg": {"as_tensor": {"name": "y"}}}}]},
    "graph": {"nodes": [
      {"target": "torch.ops.aten.transpose.int",
       "inputs": [{"name": "self", "arg": {"as_tensor": {"name": "x"}}}, {"name": "dim0", "arg": {"as_int": 0}},
                  {"name": "dim1", "arg": {"as_int": 1}}],
       "outputs": [{"as_tensor": {"name": "t"}}]},
      {"target": "torch.ops.aten.view.default",
       "inputs": [{"name": "self", "arg": {"as_tensor": {"name": "t"}}}, {"name": "size", "arg": {"as_ints": [24]}}],
       "outputs": [{"as_tensor": {"name": "y"}}]}]}}})");
  auto m = model::load_model(dir + "/view.pt2");
  auto x = torch::randn({4, 6});
  auto want = x.t().reshape({24});
  auto module = m.impl->module;
  auto got = module.forward({x}).toTensor();
  EXPECT_TRUE(torch::equal(got, want));
  capture::CompileOptions o;
  o.backend = "kiln";
  o.dynamic = false;
  runtime::CapturedRuntime rt(m, o);
  auto x2 = torch::randn({4, 6});
  auto outs = rt.run({x2});
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_TRUE(torch::equal(outs[0].toTensor(), x2.t().reshape({24})));
}
