// The TORCH_TRACE importer on real logs: the torch 2.11 samples (values read from the files) and
// every log of the tlparse corpus (older torch versions, failures, caches, export, ranks).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "engine/base/error.h"
#include "engine/importers/torch_trace/torch_trace.h"
#include "tests/engine/importers/torch_trace/trace_text.h"
#include "tests/support/paths.h"

using namespace kiln;  // NOLINT
using importers::import_torch_trace;

namespace {

const session::CompiledRegion* region(const session::Session& s, const std::string& id) {
  for (const auto& r : s.regions)
    if (r.compile_id == id) return &r;
  return nullptr;
}

const session::StageGraph* graph(const session::CompiledRegion& r, const std::string& stage) {
  for (const auto& g : r.graphs)
    if (g.stage == stage) return &g;
  return nullptr;
}

const session::Kernel* kernel(const session::Session& s, const std::string& name, const std::string& id) {
  for (const auto& k : s.kernels)
    if (k.name == name && k.compile_id == id) return &k;
  return nullptr;
}

bool contains(const std::vector<std::string>& v, const std::string& x) { return std::find(v.begin(), v.end(), x) != v.end(); }

int64_t note_count(const session::Session& s, const std::string& what_prefix) {
  int64_t n = 0;
  for (const auto& note : s.import_notes)
    if (note.what.rfind(what_prefix, 0) == 0) n += note.count;
  return n;
}

int count_events(const session::Session& s, capture::Event::Kind k) {
  return static_cast<int>(std::count_if(s.events.begin(), s.events.end(), [&](const auto& e) { return e.kind == k; }));
}

}  // namespace

TEST(TorchTrace, BreakyDynamicCompileIdsAndRegions) {
  auto s = import_torch_trace(test::data("traces/breaky_dynamic.log"));
  EXPECT_EQ(s.origin, "TORCH_TRACE import");
  EXPECT_TRUE(s.import_notes.empty()) << s.import_notes.front().what;
  std::vector<std::string> ids;
  for (const auto& r : s.regions) ids.push_back(r.compile_id);
  EXPECT_EQ(ids, (std::vector<std::string>{"[0/0]", "[1/0]", "[2/0]", "[3/0]", "[0/1]", "[1/1]", "[2/1]", "[3/1]"}));
  const auto* r00 = region(s, "[0/0]");
  ASSERT_TRUE(r00);
  EXPECT_EQ(r00->region, 0);
  EXPECT_EQ(r00->frame, "forward at /home/user/kiln/examples/data/src/sample_models.py:40");
  EXPECT_NEAR(r00->compile_ms, 2684.962, 1e-6);
  EXPECT_EQ(r00->metrics.at("guard_count"), "34");
  EXPECT_EQ(r00->metrics.at("graph_op_count"), "2");
  EXPECT_NE(r00->metrics.at("start_stack").find("trace_samples.py:10 in <module>"), std::string::npos);
  EXPECT_EQ(region(s, "[1/0]")->frame,
            "torch_dynamo_resume_in_forward_at_42 at /home/user/kiln/examples/data/src/sample_models.py:42");
}

TEST(TorchTrace, BreakyDynamicGraphBreaksWithReasonsAndUserLines) {
  auto s = import_torch_trace(test::data("traces/breaky_dynamic.log"));
  ASSERT_EQ(s.breaks.size(), 6u);  // print, bool(tensor), item(): once per batch size
  const auto& print = s.breaks[0];
  EXPECT_EQ(print.compile_id, "[0/0]");
  EXPECT_EQ(print.info.category, capture::BreakCategory::SideEffect);
  EXPECT_EQ(print.info.id, "KB001");
  EXPECT_EQ(print.info.loc.file, "/home/user/kiln/examples/data/src/sample_models.py");
  EXPECT_EQ(print.info.loc.line, 42);
  EXPECT_EQ(print.info.loc.text, "print(\"mid\")");
  EXPECT_EQ(print.info.op, "Failed to trace builtin operator");
  EXPECT_NE(print.info.reason.find("Dynamo does not know how to trace builtin operator `print`"), std::string::npos);
  EXPECT_NE(print.info.hint.find("reorderable_logging_functions"), std::string::npos);
  EXPECT_NE(print.info.hint.find("gb0059.html"), std::string::npos);
  ASSERT_FALSE(print.user_stack.empty());
  EXPECT_EQ(print.user_stack.back(), "/home/user/kiln/examples/data/src/sample_models.py:42 in forward");
  EXPECT_EQ(print.user_stack.front(), "<string>:1 in <module>");

  const auto& branch = s.breaks[1];
  EXPECT_EQ(branch.compile_id, "[1/0]");
  EXPECT_EQ(branch.info.category, capture::BreakCategory::ScalarExtraction);
  EXPECT_EQ(branch.info.loc.line, 43);
  EXPECT_EQ(branch.info.loc.text, "if bool(y.sum() > 0):");
  EXPECT_NE(branch.info.reason.find("Tensor.item()"), std::string::npos);

  const auto& item = s.breaks[2];
  EXPECT_EQ(item.compile_id, "[2/0]");
  EXPECT_EQ(item.info.loc.line, 47);
  EXPECT_EQ(item.info.loc.text, "scale = float(y.mean().item())");
  EXPECT_EQ(s.breaks[3].compile_id, "[0/1]");
  EXPECT_EQ(s.breaks[3].info.loc.line, 42);
  EXPECT_EQ(count_events(s, capture::Event::Kind::GraphBreak), 6);
}

TEST(TorchTrace, BreakyDynamicRecompilesGuardsAndSymbols) {
  auto s = import_torch_trace(test::data("traces/breaky_dynamic.log"));
  EXPECT_EQ(region(s, "[0/0]")->recompile_reason, "");
  EXPECT_EQ(region(s, "[0/1]")->recompile_reason, "0/0: tensor 'x' size mismatch at index 0. expected 4, actual 8");
  EXPECT_EQ(region(s, "[1/1]")->recompile_reason, "1/0: tensor 'y' size mismatch at index 0. expected 4, actual 8");
  EXPECT_EQ(count_events(s, capture::Event::Kind::Recompile), 4);
  EXPECT_TRUE(contains(region(s, "[0/1]")->symbols, "s77 = L['x'].size()[0]"));

  const auto& guards = region(s, "[0/0]")->guards;
  EXPECT_TRUE(contains(guards,
                       "TENSOR_MATCH: check_tensor(L['x'], Tensor, DispatchKeySet(CUDA, BackendSelect, ADInplaceOrView, "
                       "AutogradCUDA), torch.float32, device=0, requires_grad=False, size=[4, 64], stride=[64, 1])"));
  EXPECT_TRUE(contains(guards, "DEFAULT_DEVICE: utils_device.CURRENT_DEVICE == None"));
  for (const auto& g : guards) EXPECT_EQ(g.find("GuardManager"), std::string::npos) << g;
  ASSERT_TRUE(graph(*region(s, "[0/0]"), "dynamo_cpp_guards_str"));
}

TEST(TorchTrace, BreakyDynamicGraphsAndOutputCode) {
  auto s = import_torch_trace(test::data("traces/breaky_dynamic.log"));
  const auto* r = region(s, "[0/0]");
  const auto* g = graph(*r, "dynamo_output_graph");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->text.rfind("class GraphModule(torch.nn.Module):", 0), 0u);
  EXPECT_NE(g->text.find("y: \"f32[4, 64][64, 1]cuda:0\" = torch.relu(linear);  linear = None"), std::string::npos);
  ASSERT_TRUE(graph(*r, "aot_inference_graph"));
  EXPECT_NE(graph(*r, "aot_inference_graph")->text.find("torch.ops.aten.addmm.default"), std::string::npos);
  EXPECT_TRUE(graph(*r, "inductor_post_grad_graph") || graph(*r, "after_post_grad_graph"));

  EXPECT_EQ(s.kernels.size(), 16u);  // per compile: the module and its one Triton kernel
  const auto* module = kernel(s, "c3tdwanrku4mpekqck6br7jlo24tddazh4h5eur74wfmeg3ikdrb.py", "[0/0]");
  ASSERT_TRUE(module);
  EXPECT_EQ(module->language, "python");
  EXPECT_EQ(module->source.rfind("# AOT ID: ['0_inference']", 0), 0u);
  const auto* k = kernel(s, "triton_poi_fused_addmm_relu_0", "[0/0]");
  ASSERT_TRUE(k);
  EXPECT_EQ(k->language, "triton");
  EXPECT_NE(k->source.find("@triton.jit\ndef triton_poi_fused_addmm_relu_0("), std::string::npos);
  EXPECT_EQ(k->source.find("'''"), std::string::npos);
  EXPECT_EQ(k->nodes, (std::vector<std::string>{"linear", "y"}));
  EXPECT_EQ(k->launch_config, "run(buf1, arg1_1, 256, stream=stream0)");
  EXPECT_TRUE(kernel(s, "triton_red_fused_mean_mul_0", "[2/1]"));
}

TEST(TorchTrace, BreakyDynamicCompileTimeline) {
  auto s = import_torch_trace(test::data("traces/breaky_dynamic.log"));
  int spans = 0;
  for (const auto& e : s.timeline) {
    EXPECT_EQ(e.lane, "compile");
    if (e.name == "entire_frame_compile" && e.compile_id == "[0/0]") {
      ++spans;
      EXPECT_GT(e.dur_ns, 2000000000);  // 2.68 s in compilation_metrics
      EXPECT_EQ(e.start_ns, 1795334049733985000);
    }
  }
  EXPECT_EQ(spans, 1);
  EXPECT_TRUE(std::is_sorted(s.timeline.begin(), s.timeline.end(),
                             [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; }));
}

TEST(TorchTrace, PointwiseModesReusedCompileIdsAreSeparateRegions) {
  auto s = import_torch_trace(test::data("traces/pointwise_modes.log"));
  ASSERT_EQ(s.regions.size(), 3u);  // default, reduce-overhead, max-autotune (cut during its compile)
  EXPECT_EQ(s.regions[0].compile_id, "[0/0]");
  EXPECT_EQ(s.regions[1].compile_id, "[0/0]#2");
  EXPECT_EQ(s.regions[2].compile_id, "[0/0]#3");
  for (const auto& r : s.regions) {
    ASSERT_TRUE(graph(r, "dynamo_output_graph")) << r.compile_id;
    EXPECT_NE(graph(r, "dynamo_output_graph")->text.find("torch.sin"), std::string::npos);
    EXPECT_EQ(r.frame, "pointwise_chain at /home/user/kiln/examples/data/src/sample_models.py:107");
  }
  const auto* k1 = kernel(s, "triton_poi_fused_add_sin_0", "[0/0]");
  const auto* k2 = kernel(s, "triton_poi_fused_add_sin_0", "[0/0]#2");
  ASSERT_TRUE(k1 && k2);
  EXPECT_EQ(k1->nodes.size(), 40u);
  EXPECT_EQ(s.regions[0].metrics.at("kernel triton_poi_fused_add_sin_0 num_configs"), "2");
  EXPECT_GT(note_count(s, "unfinished compile span"), 0);  // the log ends inside the third compile
  EXPECT_EQ(note_count(s, "payload MD5"), 0);
}

TEST(TorchTrace, BlockDefaultGraphsAndKernels) {
  auto s = import_torch_trace(test::data("traces/block_default.log"));
  ASSERT_EQ(s.regions.size(), 1u);
  const auto& r = s.regions[0];
  EXPECT_EQ(r.frame, "forward at /home/user/kiln/examples/data/src/sample_models.py:63");
  EXPECT_TRUE(graph(r, "dynamo_output_graph"));
  EXPECT_TRUE(graph(r, "aot_inference_graph"));
  EXPECT_EQ(s.kernels.size(), 10u);
  const auto* ln = kernel(s, "triton_per_fused_native_layer_norm_0", "[0/0]");
  ASSERT_TRUE(ln);
  EXPECT_NE(ln->source.find("def triton_per_fused_native_layer_norm_0("), std::string::npos);
  EXPECT_TRUE(kernel(s, "triton_poi_fused_addmm_gelu_view_7", "[0/0]"));
  EXPECT_TRUE(s.breaks.empty());
  EXPECT_TRUE(s.import_notes.empty());
}

TEST(TorchTrace, EveryTlparseCorpusLogImports) {
  namespace fs = std::filesystem;
  int logs = 0;
  for (const auto& entry : fs::recursive_directory_iterator(test::data("tlparse"))) {
    if (entry.path().extension() != ".log") continue;
    ++logs;
    SCOPED_TRACE(entry.path().string());
    session::Session s;
    ASSERT_NO_THROW(s = import_torch_trace(entry.path().string()));
    EXPECT_GE(s.regions.size(), 1u);
    for (const auto& r : s.regions) EXPECT_FALSE(r.compile_id.empty());
    for (const auto& n : s.import_notes) {
      EXPECT_GT(n.count, 0);
      EXPECT_EQ(n.source, entry.path().string());
    }
    for (const auto& n : s.import_notes) EXPECT_NE(n.what, "corrupt JSON");  // every envelope parses
    EXPECT_EQ(note_count(s, "unknown line"), 0);
  }
  EXPECT_EQ(logs, 15);
}

TEST(TorchTrace, CorpusFactsFromOlderVersions) {
  auto failure = import_torch_trace(test::data("tlparse/comp_failure.log"));
  bool failed = false;
  for (const auto& e : failure.events)
    failed |= e.kind == capture::Event::Kind::EagerFallback &&
              e.message.find("BackendCompilerFailed: backend='broken_backend' raised") != std::string::npos;
  EXPECT_TRUE(failed);
  EXPECT_EQ(failure.regions[0].metrics.at("fail_type"), "BackendCompilerFailed");

  auto metrics = import_torch_trace(test::data("tlparse/comp_metrics.log"));
  ASSERT_EQ(metrics.breaks.size(), 2u);  // restart_reasons only (torch 2.3)
  EXPECT_EQ(metrics.breaks[0].info.reason,
            "skip function graph_break in file /data/users/jjwu/a/pytorch/torch/_dynamo/decorators.py");
  EXPECT_EQ(metrics.regions[0].guards.size(), 3u);  // from dynamo_guards (JSON)
  EXPECT_EQ(metrics.regions[0].guards[0], "hasattr(L['x'], '_dynamo_dynamic_indices') == False");

  auto cache = import_torch_trace(test::data("tlparse/cache_hit_miss.log"));
  int hits = 0;
  for (const auto& e : cache.events) hits += e.kind == capture::Event::Kind::CacheHit;
  EXPECT_GT(hits, 0);
  bool hit_metric = false;
  for (const auto& r : cache.regions) {
    auto it = r.metrics.find("fx_graph_cache");
    hit_metric |= it != r.metrics.end() && it->second == "hit";
  }
  EXPECT_TRUE(hit_metric);

  auto exported = import_torch_trace(test::data("tlparse/export.log"));
  ASSERT_EQ(exported.regions.size(), 1u);
  EXPECT_EQ(exported.regions[0].compile_id, "[unknown]");  // export records carry no compile id
  EXPECT_TRUE(graph(exported.regions[0], "exported_program"));
  EXPECT_EQ(note_count(exported, "payload MD5 mismatch"), 1);  // blank payload lines lost their tab
}

TEST(TorchTrace, CorruptedJsonIsReportedAndTheRestKept) {
  auto good = import_torch_trace(test::data("tlparse/simple.log"));
  auto bad = import_torch_trace(test::data("tlparse/simple_corrupted_json.log"));
  EXPECT_TRUE(good.import_notes.empty());
  ASSERT_FALSE(bad.import_notes.empty());
  EXPECT_EQ(note_count(bad, "payload MD5 mismatch"), 1);
  EXPECT_EQ(note_count(bad, "corrupt JSON payload (chromium_event)"), 1);
  for (const auto& n : bad.import_notes)
    if (n.what == "payload MD5 mismatch") EXPECT_NE(n.example.find("line 13"), std::string::npos) << n.example;
  EXPECT_EQ(bad.regions.size(), good.regions.size());
  EXPECT_EQ(bad.kernels.size(), good.kernels.size());
  EXPECT_EQ(bad.regions[0].graphs.size(), good.regions[0].graphs.size());
  EXPECT_EQ(bad.regions[0].guards, good.regions[0].guards);
  // The lost record was an end event: its span stays open (duration 0), and says so.
  EXPECT_EQ(bad.timeline.size(), good.timeline.size());
  EXPECT_EQ(note_count(bad, "unfinished compile span"), 1);
}

TEST(TorchTrace, MultiRankLogsGiveOneSessionPerRank) {
  for (int rank = 0; rank < 4; ++rank) {
    auto s = import_torch_trace(
        test::data("tlparse/multi_rank_logs/dedicated_log_torch_trace_rank_" + std::to_string(rank) + ".log"));
    EXPECT_EQ(s.rank, rank);
  }
  auto r1 = import_torch_trace(test::data("tlparse/multi_rank_logs/dedicated_log_torch_trace_rank_1.log"));
  EXPECT_EQ(r1.regions.size(), 15u);
  EXPECT_EQ(region(r1, "[0/1]")->recompile_reason, "0/0: tensor 'x' size mismatch at index 0. expected 2, actual 3");
}

TEST(TorchTrace, FactsAndErrors) {
  importers::TraceFacts facts;
  import_torch_trace(test::data("traces/breaky_dynamic.log"), {}, &facts);
  EXPECT_EQ(facts.pid, 822);
  EXPECT_EQ(facts.bytes, std::filesystem::file_size(test::data("traces/breaky_dynamic.log")));
  EXPECT_GT(facts.records, 1000);
  try {
    import_torch_trace("/nonexistent/trace.log");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/trace.log"), std::string::npos);
  }
  EXPECT_THROW(import_torch_trace(test::data("tlparse")), Error);
}

TEST(TorchTrace, CompileIdsFromEnvelopesAndMetadata) {
  test::TraceText log;
  log.record("\"dynamo_start\": {\"stack\": []}", test::TraceText::ctx(0, 0) + ", \"rank\": 5");
  log.record("\"dynamo_output_graph\": {}", test::TraceText::ctx(0, 0, 1) + ", \"rank\": 5", "graph of attempt 1");
  log.record("\"dynamo_output_graph\": {}",
             ", \"compiled_autograd_id\": 2, \"frame_id\": 1, \"frame_compile_id\": 0, \"attempt\": 0", "ca graph");
  log.record("\"dynamo_output_graph\": {}", ", \"compiled_autograd_id\": 3, \"frame_id\": null", "ca only");
  log.record("\"compilation_metrics_runtime\": {\"compile_id\": \"0/0\", \"guard_latency_us\": 7, \"co_name\": null}");
  log.record("\"bwd_compilation_metrics\": {\"compile_id\": \"0/0\", \"inductor_compile_time_s\": 0.5}");
  std::string path = test::temp_dir() + "/ids.log";
  log.write(path);
  auto s = import_torch_trace(path);
  EXPECT_EQ(s.rank, 5);
  ASSERT_EQ(s.regions.size(), 3u);
  EXPECT_EQ(s.regions[0].compile_id, "[0/0]");  // attempts of one compile share its region
  EXPECT_EQ(s.regions[0].graphs[0].text, "graph of attempt 1");
  EXPECT_EQ(s.regions[0].metrics.at("runtime guard_latency_us"), "7");
  EXPECT_EQ(s.regions[0].metrics.at("bwd inductor_compile_time_s"), "0.5");
  EXPECT_EQ(s.regions[0].metrics.count("runtime co_name"), 0u);  // nulls are left out
  EXPECT_EQ(s.regions[1].compile_id, "[!2/1/0]");
  EXPECT_EQ(s.regions[2].compile_id, "[!3]");
  EXPECT_TRUE(s.import_notes.empty());
}
