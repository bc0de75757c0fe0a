// The model corpus's miniatures (tests/data/corpus: torchvision and transformers model code with tiny
// configurations, random weights, saved by bench/corpus/make_corpus.py with torch 2.11): each one
// captures with as many graph breaks as Dynamo reports (manifest.json), lowers at least 95% of its
// graph ops, matches LibTorch eager when compiled, and its eager run through Kiln's interpreter
// matches the outputs torch recorded when the model was saved.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <torch/script.h>

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
  std::ifstream in(test::data("corpus/manifest.json"));
  return nlohmann::json::parse(in);
}

nlohmann::json entry(const std::string& name) {
  const auto all = manifest();
  for (const auto& m : all["models"])
    if (m["name"] == name) return m;
  return {};
}

// Models LibTorch itself cannot run here, with the reason (checked: the eager run must fail).
std::string cannot_run_here(const std::string& name) {
  if (name == "vit_b_16") return "torchvision's attention calls aten::scaled_dot_product_attention, absent before torch 2.0";
  if (name.find("_fp16") != std::string::npos) return "LibTorch's CPU convolution and layer_norm have no float16 kernels";
  return "";
}

class CorpusModel : public ::testing::TestWithParam<std::string> {};

TEST(Corpus, ManifestListsEveryMiniatureOnce) {
  auto m = manifest();
  EXPECT_EQ(m["torch"].get<std::string>().substr(0, 4), "2.11");
  std::set<std::string> names;
  for (const auto& e : m["models"]) {
    EXPECT_TRUE(names.insert(e["name"].get<std::string>()).second) << e["name"];
    EXPECT_FALSE(e.contains("error")) << e["name"] << ": " << e.value("error", "");
    EXPECT_TRUE(e.contains("dynamo")) << e["name"];
  }
  EXPECT_EQ(names.size(), 14u);
}

TEST_P(CorpusModel, BreaksAsDynamoLowersAndMatchesEager) {
  const std::string name = GetParam();
  const auto e = entry(name);
  ASSERT_FALSE(e.is_null()) << name;
  std::vector<InputSpec> specs;
  for (const auto& s : e["inputs"]) specs.push_back(parse_input_spec(s.get<std::string>()));
  const std::string path = test::data("corpus/" + e["file"].get<std::string>());

  std::optional<model::Model> m;
  std::string load_error = test::error_of([&] { m = model::load_model(path); });
  std::vector<c10::IValue> expected_outputs;
  std::vector<at::Tensor> recorded_inputs;
  std::string eager_error;
  if (load_error.empty()) {
    auto io = torch::jit::load(test::data("corpus/" + name + ".io.pt"));
    for (int i = 0; io.hasattr("input" + std::to_string(i)); ++i)
      recorded_inputs.push_back(io.attr("input" + std::to_string(i)).toTensor());
    for (int i = 0; io.hasattr("output" + std::to_string(i)); ++i)
      expected_outputs.push_back(io.attr("output" + std::to_string(i)).toTensor());
    try {
      std::vector<c10::IValue> args(recorded_inputs.begin(), recorded_inputs.end());
      torch::NoGradGuard no_grad;
      auto module = m->impl->module;
      module.forward(args);
    } catch (const std::exception& ex) {
      eager_error = ex.what();
    }
  }
  // A newer LibTorch (the GPU machine's) runs them all: the skip applies only where eager itself fails.
  const std::string why = cannot_run_here(name);
  if (!why.empty() && (!load_error.empty() || !eager_error.empty())) GTEST_SKIP() << name << ": " << why;
  ASSERT_TRUE(load_error.empty()) << load_error;
  ASSERT_TRUE(eager_error.empty()) << eager_error.substr(0, 400);

  // Kiln's interpreter on the recorded inputs gives torch's recorded outputs.
  {
    capture::CompileOptions o;
    o.backend = "eager";
    o.dynamic = false;
    runtime::CapturedRuntime rt(*m, o);
    auto outs = rt.run(recorded_inputs);
    ASSERT_EQ(outs.size(), 1u);
    c10::IValue got = outs[0];
    std::vector<c10::IValue> flat;
    if (got.isTuple()) for (const auto& x : got.toTupleRef().elements()) flat.push_back(x);
    else flat.push_back(got);
    ASSERT_EQ(flat.size(), expected_outputs.size());
    for (size_t i = 0; i < flat.size(); ++i) {
      auto err = runtime::compare_to_eager(flat[i], expected_outputs[i]);
      EXPECT_TRUE(err.ok) << name << " output " << i << ": max rel " << err.max_rel << " vs the outputs torch "
                          << "recorded (" << runtime::tolerance_for(expected_outputs[i]).str() << ") " << err.problem;
    }
  }

  // explain: the same number of graph breaks as Dynamo.
  capture::CompileOptions o;
  o.dynamic = false;
  auto ex = runtime::explain_model(*m, {specs}, o);
  EXPECT_EQ(static_cast<int>(ex.breaks.size()), e["dynamo"]["breaks"].get<int>()) << name;

  // compile (C++ kernels): within the dtype's tolerance of eager on fresh random inputs, and
  // at least 95% of the graph's ops lowered (externs count as lowered, fallbacks do not).
  o.backend = "kiln";
  auto r = runtime::compile_model(*m, specs, o, "", 2);
  EXPECT_TRUE(r.mismatch.empty()) << r.mismatch;
  EXPECT_TRUE(r.within_tolerance) << name << ": max rel " << r.max_rel_error << ", max abs " << r.max_abs_error;
  EXPECT_FALSE(r.eager_constant) << name << ": eager's output is constant, so the comparison above cannot fail";
  int ops = 0, fallbacks = 0;
  std::string listed;
  for (const auto& reg : r.regions) {
    ops += reg.graph_ops;
    // A region that runs eagerly (the note says why) lowered none of its ops.
    EXPECT_TRUE(reg.artifacts.note.empty()) << name << " " << reg.compile_id << ": " << reg.artifacts.note;
    fallbacks += reg.artifacts.note.empty() ? static_cast<int>(reg.artifacts.fallbacks.size()) : reg.graph_ops;
    for (const auto& f : reg.artifacts.fallbacks) listed += "\n  " + f;
  }
  ASSERT_GT(ops, 0) << name << ": no region compiled anything";
  EXPECT_GE(100.0 * (ops - fallbacks) / ops, 95.0) << name << ": " << fallbacks << " of " << ops << " ops fall back:" << listed;
}

INSTANTIATE_TEST_SUITE_P(Miniatures, CorpusModel,
                         ::testing::Values("resnet18", "resnet18_fp16", "resnet18_bf16", "mobilenet_v3_small",
                                           "efficientnet_b0", "convnext_tiny", "vit_b_16", "bert_embeds", "bert_ids",
                                           "bert_embeds_fp16", "bert_embeds_bf16", "gpt2_embeds", "gpt2_ids",
                                           "gpt2_embeds_bf16"));

// At 256 rows and more, each layer norm of the transformer miniatures runs in one row kernel with
// the residual add before it and the 2-d view after it (fusion::FusionOptions::stage_rows): fewer
// kernels than the same models at the manifest's few rows, and the results still eager's.
TEST(Corpus, TransformersAtManyRowsFuseTheirLayerNormStagesAndMatchEager) {
  for (auto [name, few, many] : std::vector<std::tuple<const char*, const char*, const char*>>{
           {"gpt2_ids", "2x8:int64[0,100)", "4x64:int64[0,100)"},
           {"bert_ids", "2x8:int64[0,100)", "4x64:int64[0,100)"},
           {"bert_embeds_bf16", "2x8x32:bfloat16", "4x64x32:bfloat16"}}) {
    auto m = model::load_model(test::data(std::string("corpus/") + name + ".pt"));
    capture::CompileOptions o;
    o.dynamic = false;
    o.backend = "kiln";
    auto kernels = [&](const char* spec, bool check) {
      auto r = runtime::compile_model(m, {parse_input_spec(spec)}, o, "", check ? 2 : 1);
      EXPECT_TRUE(r.within_tolerance) << name << " " << spec << ": max rel " << r.max_rel_error;
      size_t n = 0;
      for (const auto& reg : r.regions) n += reg.artifacts.kernels.size();
      return n;
    };
    const size_t at_few = kernels(few, false), at_many = kernels(many, true);
    EXPECT_LT(at_many, at_few) << name;
  }
}

}  // namespace
