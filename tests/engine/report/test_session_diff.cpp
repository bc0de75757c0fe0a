// The comparison of two sessions (report::diff_sessions) and its renderers; device time by module
// and line (report::module_time) on imported torch.compile runs and hand-built sessions.
#include "engine/report/session_diff.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "engine/report/gpu_kernel_stats.h"
#include "engine/report/module_time.h"
#include "engine/report/render_diff.h"
#include "tests/engine/report/diff_fixtures.h"
#include "tests/support/session_builders.h"

using namespace kiln;  // NOLINT

namespace {

int64_t sum(const std::vector<report::StructureRow>& rows) {
  int64_t t = 0;
  for (const auto& r : rows) t += r.total_ns;
  return t;
}

const report::StructureRow* row(const std::vector<report::StructureRow>& rows, const std::string& key) {
  for (const auto& r : rows)
    if (r.key == key) return &r;
  return nullptr;
}

}  // namespace

TEST(ModuleTime, ImportedTritonKernelsReachModulesThroughTheirSourceNodes) {
  auto s = test::mlp_session(false);
  ASSERT_EQ(s.runs.size(), 1u);
  const int run = s.runs[0].id;
  auto t = report::module_time(s, run);
  auto k = report::kernel_stats(s, run);
  ASSERT_GT(k.records, 0);
  EXPECT_EQ(t.time_source, "device");
  EXPECT_EQ(t.total_ns, k.total_ns);
  EXPECT_EQ(t.records, k.records);
  EXPECT_EQ(sum(t.modules), t.total_ns);  // the unattributed row included: the rows add up
  EXPECT_EQ(sum(t.lines), t.total_ns);
  // Triton kernel 0 fuses linear (fc1's weight) and relu (no parameter): fc1; kernel 1: fc2.
  int64_t triton0 = 0, triton1 = 0;
  for (const auto& e : s.timeline) {
    if (e.run != run || e.category != "kernel") continue;
    if (e.name == "triton_poi_fused_addmm_relu_0") triton0 += e.dur_ns;
    if (e.name == "triton_poi_fused_add_addmm_mul_tanh_1") triton1 += e.dur_ns;
  }
  ASSERT_GT(triton0, 0);
  ASSERT_GT(triton1, 0);
  ASSERT_TRUE(row(t.modules, "fc1"));
  ASSERT_TRUE(row(t.modules, "fc2"));
  EXPECT_EQ(row(t.modules, "fc1")->total_ns, triton0);
  EXPECT_EQ(row(t.modules, "fc2")->total_ns, triton1);
  ASSERT_TRUE(row(t.lines, "mlp.py:14"));
  EXPECT_EQ(row(t.lines, "mlp.py:14")->total_ns, triton0);
  EXPECT_EQ(row(t.lines, "mlp.py:15")->total_ns, triton1);
  EXPECT_NE(row(t.lines, "mlp.py:14")->code.find("self.fc1(x)"), std::string::npos);
  // cuBLAS kernels launched by LibTorch ops have no graph node: the explicit unattributed row.
  const auto* none = row(t.modules, report::kUnattributed);
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->unattributed);
  EXPECT_EQ(none->total_ns, k.total_ns - triton0 - triton1);
}

// Inductor's extern calls (cuBLAS through extern_kernels.mm) reach their graph nodes by their place
// among the aten::mm host ops of each compiled call: fc1's and fc2's matrix products count for fc1 and
// fc2, and what stays unattributed is only what ran outside the compiled calls.
TEST(ModuleTime, ImportedExternCallsReachTheirNodesInCallOrder) {
  auto plain = test::mlp_session(false);
  auto s = test::mlp_session(false, true);
  ASSERT_EQ(s.runs.size(), 1u);
  const int run = s.runs[0].id;
  auto before = report::module_time(plain, plain.runs[0].id);
  auto t = report::module_time(s, run);
  EXPECT_EQ(t.total_ns, before.total_ns);
  EXPECT_EQ(sum(t.modules), t.total_ns);
  EXPECT_EQ(sum(t.lines), t.total_ns);
  std::vector<const session::TimelineEvent*> regions, mms;
  for (const auto& e : s.timeline) {
    if (e.run != run) continue;
    if (e.category == "region") regions.push_back(&e);
    if (e.category == "cpu_op" && e.name == "aten::mm") mms.push_back(&e);
  }
  ASSERT_FALSE(regions.empty());
  ASSERT_EQ(mms.size(), 2 * regions.size());
  ASSERT_TRUE(row(t.modules, "fc1"));
  ASSERT_TRUE(row(t.modules, "fc2"));
  EXPECT_GT(row(t.modules, "fc1")->total_ns, row(before.modules, "fc1")->total_ns);
  EXPECT_GT(row(t.modules, "fc2")->total_ns, row(before.modules, "fc2")->total_ns);
  const auto* none = row(t.modules, report::kUnattributed);
  const auto* none_before = row(before.modules, report::kUnattributed);
  ASSERT_TRUE(none_before);
  EXPECT_LT(none ? none->total_ns : 0, none_before->total_ns);
  EXPECT_GT(row(t.lines, "mlp.py:15")->total_ns, row(before.lines, "mlp.py:15")->total_ns);
  // What stays unattributed was launched outside the compiled calls.
}

TEST(ModuleTime, FusedKernelCountsForTheModuleHoldingAllItsNodesAndSplitsAmongLines) {
  session::Session s;
  s.origin = "kiln profile";
  session::Run r;
  r.id = 0;
  r.mode = "default";
  r.backend = "kiln";
  s.runs.push_back(r);
  session::CompiledRegion reg;
  reg.compile_id = "[0/0]";
  reg.graphs.push_back({"captured", "", R"J({"name":"g","nodes":[
    {"op":"call_function","name":"conv","target":"aten::conv2d","args":[],"module":"layer1.0.conv1",
     "source":{"file":"/m/net.py","line":10,"col":1,"text":"x = self.conv1(x)"}},
    {"op":"call_function","name":"bn","target":"aten::batch_norm","args":[],"module":"layer1.0.bn1",
     "source":{"file":"/m/net.py","line":11,"col":1,"text":"x = self.bn1(x)"}},
    {"op":"call_function","name":"top","target":"aten::relu","args":[],"module":"","source":null}]})J", ""});
  s.regions.push_back(reg);
  session::Kernel k1;
  k1.name = "k0_fused";
  k1.compile_id = "[0/0]";
  k1.nodes = {"conv", "bn"};
  session::Kernel k2 = k1;
  k2.name = "k1_relu";
  k2.nodes = {"top"};
  s.kernels = {k1, k2};
  s.timeline.push_back(test::timeline_event(0, "host:1", "iteration", "iteration 0", 0, 1000));
  s.timeline.push_back(test::kernel_event(0, "k0_fused", "[0/0]", 10, 301));
  s.timeline.push_back(test::kernel_event(0, "k1_relu", "[0/0]", 400, 100));
  s.timeline.push_back(test::timeline_event(0, "cuda:0/stream 7", "kernel", "cublas_gemm", 600, 50));
  auto t = report::module_time(s, 0);
  EXPECT_EQ(t.total_ns, 451);
  ASSERT_TRUE(row(t.modules, "layer1.0"));
  EXPECT_EQ(row(t.modules, "layer1.0")->total_ns, 301);
  ASSERT_TRUE(row(t.modules, ""));  // Kiln's graphs: "" is the model's own forward, not unknown
  EXPECT_EQ(row(t.modules, "")->total_ns, 100);
  EXPECT_EQ(row(t.modules, report::kUnattributed)->total_ns, 50);
  EXPECT_EQ(row(t.lines, "net.py:10")->total_ns, 151);  // 301 shared by two lines, remainder to the first
  EXPECT_EQ(row(t.lines, "net.py:11")->total_ns, 150);
  EXPECT_EQ(row(t.lines, report::kUnattributed)->total_ns, 150);
  EXPECT_EQ(sum(t.lines), t.total_ns);
  EXPECT_EQ(sum(t.modules), t.total_ns);
}

// Kiln's extern calls reach their nodes by their place among the calls of the same op in the region's
// schedule: a gather the runtime issues before the embeddings (listed last in the schedule, as in BERT's
// session) shifts no other call (counted over all externs, it left a third of BERT's kernel time unattributed).
TEST(ModuleTime, AnExternIssuedOutOfScheduleOrderShiftsNoOtherCall) {
  session::Session s;
  s.origin = "kiln profile";
  session::Run r;
  r.id = 0;
  r.mode = "default";
  r.backend = "kiln";
  s.runs.push_back(r);
  session::CompiledRegion reg;
  reg.compile_id = "[0/0]";
  reg.graphs.push_back({"captured", "", R"J({"name":"g","nodes":[
    {"op":"call_function","name":"emb","target":"aten::embedding","args":[],"module":"embed","source":null},
    {"op":"call_function","name":"fc1","target":"aten::linear","args":[],"module":"layer.fc1","source":null},
    {"op":"call_function","name":"fc2","target":"aten::linear","args":[],"module":"layer.fc2","source":null},
    {"op":"call_function","name":"pick","target":"aten::gather","args":[],"module":"head","source":null}]})J", ""});
  reg.graphs.push_back({"loops_after_fusion",
                        "extern aten::embedding -> emb\nextern aten::linear -> fc1\nkernel k0_relu computes x\n"
                        "extern aten::linear -> fc2\nextern aten::gather -> pick\n",
                        "", ""});
  s.regions.push_back(reg);
  s.timeline.push_back(test::timeline_event(0, "host:1", "iteration", "iteration 0", 0, 10000));
  s.timeline.push_back(test::timeline_event(0, "host:1", "region", "region 0", 10, 9000, "", "[0/0]"));
  // Issued: gather, embedding, linear, linear; each launches one kernel (its API call inside its span).
  const std::vector<std::pair<std::string, int64_t>> calls = {
      {"aten::gather", 7}, {"aten::embedding", 11}, {"aten::linear", 101}, {"aten::linear", 1009}};
  int64_t t = 100;
  int64_t correlation = 1;
  for (const auto& [op, ns] : calls) {
    s.timeline.push_back(test::timeline_event(0, "host:1", "extern", op, t, 1000, "", "[0/0]"));
    auto api = test::timeline_event(0, "cuda api", "cuda_runtime", "cudaLaunchKernel", t + 100, 50);
    api.correlation = correlation;
    auto dev = test::timeline_event(0, "cuda:0/stream 7", "kernel", "some_library_kernel", t + 500, ns);
    dev.correlation = correlation++;
    s.timeline.push_back(api);
    s.timeline.push_back(dev);
    t += 2000;
  }
  auto m = report::module_time(s, 0);
  EXPECT_EQ(m.total_ns, 7 + 11 + 101 + 1009);
  EXPECT_EQ(m.module_attributed_ns(), m.total_ns);
  ASSERT_TRUE(row(m.modules, "head") && row(m.modules, "embed") && row(m.modules, "layer.fc1") && row(m.modules, "layer.fc2"));
  EXPECT_EQ(row(m.modules, "head")->total_ns, 7);
  EXPECT_EQ(row(m.modules, "embed")->total_ns, 11);
  EXPECT_EQ(row(m.modules, "layer.fc1")->total_ns, 101);
  EXPECT_EQ(row(m.modules, "layer.fc2")->total_ns, 1009);
}

TEST(ModuleTime, ModuleTree) {
  EXPECT_EQ(report::parent_module("layer1.0.conv1"), "layer1.0");
  EXPECT_EQ(report::parent_module("fc"), "");
  EXPECT_TRUE(report::module_contains("layer1", "layer1.0"));
  EXPECT_FALSE(report::module_contains("layer1", "layer10"));
  EXPECT_TRUE(report::module_contains("", "fc"));
  EXPECT_TRUE(report::module_order("layer1", "layer1.0"));
  EXPECT_TRUE(report::module_order("layer2", "layer10"));
  EXPECT_TRUE(report::module_order("", "a"));
  EXPECT_FALSE(report::module_order("layer10", "layer2"));
}

TEST(SessionDiff, OpNamesOfKilnAndFxGraphsAgree) {
  EXPECT_EQ(report::group_op("aten::linear"), "linear");
  EXPECT_EQ(report::group_op("torch._C._nn.linear"), "linear");
  EXPECT_EQ(report::group_op("aten::add.Tensor"), "add");
  EXPECT_EQ(report::group_op("torch.ops.aten.add.Tensor"), "add");
  EXPECT_EQ(report::group_op("operator.add"), "add");
  EXPECT_EQ(report::group_op("torch.relu"), "relu");
  EXPECT_EQ(report::group_op("getitem"), "getitem");
}

TEST(SessionDiff, ImportedRunsBeforeAndAfter) {
  auto a = test::mlp_session(false), b = test::mlp_session(true);
  report::DiffOptions o;
  o.label_a = "before";
  o.label_b = "after";
  auto d = report::diff_sessions(a, b, o);
  ASSERT_EQ(d.runs.size(), 1u);
  EXPECT_TRUE(d.runs[0].a && d.runs[0].b);
  ASSERT_EQ(d.breaks.size(), 1u);
  EXPECT_EQ(d.breaks[0].change, report::Change::Added);
  EXPECT_EQ(d.breaks[0].where, "mlp.py:16");
  ASSERT_EQ(d.regions.size(), 1u);
  const auto& r = d.regions[0];
  EXPECT_EQ(r.compile_id, "[0/0]");
  EXPECT_EQ(r.guards_added, std::vector<std::string>{"L['x'].size()[0] == 16"});
  EXPECT_EQ(r.guards_removed, std::vector<std::string>{"L['x'].size()[0] == 8"});
  ASSERT_EQ(r.ops.size(), 2u);  // gelu 0 → 1, relu 1 → 0
  EXPECT_EQ(r.ops[0].op, "gelu");
  EXPECT_EQ(r.ops[1].op, "relu");
  ASSERT_EQ(r.inputs.size(), 1u);
  EXPECT_EQ(r.inputs[0].a, "float32[8, 64]");
  EXPECT_EQ(r.inputs[0].b, "float32[16, 64]");
  EXPECT_TRUE(d.structure.a.present);
  EXPECT_TRUE(d.structure.b.present);
  // Inclusive rows: the model's row is everything attributed, fc1 and fc2 below it.
  ASSERT_GE(d.structure.modules.size(), 4u);
  EXPECT_EQ(d.structure.modules[0].key, "");
  EXPECT_EQ(d.structure.modules[1].key, "fc1");
  EXPECT_EQ(d.structure.modules[2].key, "fc2");
  EXPECT_TRUE(d.structure.modules.back().unattributed);
  const auto& ta = d.structure.a.time;
  EXPECT_NEAR(d.structure.modules[0].a_ms + d.structure.modules.back().a_ms, ta.per_iter_ms(ta.total_ns), 1e-9);
  EXPECT_EQ(test::check_golden("diff/mlp_imported.md", report::render_diff_markdown(d)), "");
}

TEST(SessionDiff, HostileStringsAreEscaped) {
  session::Session a;
  a.origin = "kiln profile";
  session::Run r;
  r.id = 0;
  r.mode = "default";
  r.backend = "kiln";
  r.status = "failed: <img src=x onerror=alert(1)>";
  a.runs.push_back(r);
  session::CompiledRegion reg;
  reg.compile_id = "[0/0]<script>";
  reg.guards = {"x.size(0) == 2 </code><script>alert(1)</script>"};
  reg.graphs.push_back({"captured", "", R"J({"name":"g","nodes":[
    {"op":"call_function","name":"n","target":"aten::relu","args":[],"module":"evil.<script>alert(1)</script>",
     "source":{"file":"/m/<script>.py","line":3,"col":1,"text":"</code><script>alert(2)</script>"}}]})J", ""});
  a.regions.push_back(reg);
  session::Kernel k;
  k.name = "k0";
  k.compile_id = "[0/0]<script>";
  k.nodes = {"n"};
  a.kernels.push_back(k);
  a.timeline.push_back(test::timeline_event(0, "host:1", "iteration", "iteration 0", 0, 1000));
  a.timeline.push_back(test::kernel_event(0, "k0", "[0/0]<script>", 10, 300));
  session::Session b;
  b.origin = "TORCH_TRACE import";
  report::DiffOptions o;
  o.label_a = "<script>a</script>.kiln";
  o.label_b = "b|c.log";
  auto d = report::diff_sessions(a, b, o);
  ASSERT_TRUE(d.structure.a.present);
  ASSERT_TRUE(row(d.structure.a.time.modules, "evil.<script>alert(1)</script>"));
  std::string html = report::render_diff_html(d);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_NE(html.find("evil.&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("script-src 'none'"), std::string::npos);
  // Markdown: plain text escaped, session strings in code spans (shown literally by GitHub).
  std::string md = report::render_diff_markdown(d);
  EXPECT_EQ(md.find("<img"), std::string::npos);
  EXPECT_EQ(md.find("<script>a</script>"), std::string::npos);
  EXPECT_NE(md.find("&lt;script&gt;a&lt;/script&gt;.kiln"), std::string::npos);
  EXPECT_NE(md.find("`evil.<script>alert(1)</script>`"), std::string::npos);
  auto j = nlohmann::json::parse(report::render_diff_json(d));
  EXPECT_EQ(j["a"]["input"], "<script>a</script>.kiln");  // JSON keeps strings as they are, quoted
}
