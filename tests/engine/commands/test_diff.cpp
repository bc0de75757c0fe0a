// `kiln diff` through the engine: two sessions profiled here on the CPU, two imported logs, a Kiln
// session against an imported torch.compile run of the same model, and inputs that cannot be read.
#include "engine/commands/diff.h"

#include <gtest/gtest.h>

#include <fstream>

#include "engine/api/kiln.h"
#include "engine/api/options.h"
#include "engine/report/module_time.h"
#include "engine/report/render_diff.h"
#include "tests/support/paths.h"

using namespace kiln;  // NOLINT

namespace {

std::string profiled_block(const std::string& shape) {
  static std::map<std::string, std::string> made;
  auto it = made.find(shape);
  if (it != made.end()) return it->second;
  std::string path = test::temp_dir() + "/block_" + shape + ".kiln";
  api::ProfileOptions o;
  o.modes = {"eager", "default"};
  o.iters = 5;
  o.device = "cpu";
  api::profile(test::example("block.pt"), api::parse_inputs({shape}, "float32"), o, path);
  return made[shape] = path;
}

int64_t sum(const std::vector<report::StructureRow>& rows) {
  int64_t t = 0;
  for (const auto& r : rows) t += r.total_ns;
  return t;
}

void expect_rows_add_up(const report::StructureSide& side) {
  ASSERT_TRUE(side.present);
  const auto& t = side.time;
  EXPECT_GT(t.total_ns, 0);
  EXPECT_EQ(sum(t.modules), t.total_ns);
  EXPECT_EQ(sum(t.lines), t.total_ns);
  double ms = 0;
  for (const auto& r : t.modules) ms += t.per_iter_ms(r.total_ns);
  EXPECT_NEAR(ms, side.total_ms, 1e-9);
}

}  // namespace

TEST(Diff, TwoProfiledSessions) {
  auto d = commands::diff_inputs(profiled_block("2x16x64"), profiled_block("4x16x64"));
  ASSERT_EQ(d.runs.size(), 2u);
  for (const auto& p : d.runs) {
    ASSERT_TRUE(p.a && p.b);
    EXPECT_EQ(p.a->mode, p.b->mode);
    EXPECT_EQ(p.a->backend, p.b->backend);
  }
  // Both sides read their default run on the host (no GPU): Kiln's kernel and extern spans.
  const auto& s = d.structure;
  EXPECT_EQ(s.a.run_label, "default / kiln");
  EXPECT_EQ(s.b.run_label, "default / kiln");
  EXPECT_EQ(s.a.time.time_source, "host");
  expect_rows_add_up(s.a);
  expect_rows_add_up(s.b);
  // Every kernel and extern call of the block reaches a node with a module and a line.
  EXPECT_DOUBLE_EQ(s.a.module_coverage, 1.0);
  EXPECT_DOUBLE_EQ(s.a.line_coverage, 1.0);
  bool qkv = false;
  for (const auto& l : s.modules) qkv |= l.key == "qkv" && l.a_ms > 0 && l.b_ms > 0;
  EXPECT_TRUE(qkv);
  ASSERT_FALSE(s.modules.empty());
  EXPECT_EQ(s.modules[0].key, "");
  EXPECT_NEAR(s.modules[0].a_ms, s.a.total_ms, 1e-9);  // nothing unattributed: the model row is all of it
  // The batch changed: the region's size guard and its input shape differ.
  ASSERT_EQ(d.regions.size(), 1u);
  EXPECT_EQ(d.regions[0].guards_added, std::vector<std::string>{"x.size(0) == 4"});
  EXPECT_EQ(d.regions[0].guards_removed, std::vector<std::string>{"x.size(0) == 2"});
  ASSERT_EQ(d.regions[0].inputs.size(), 1u);
  EXPECT_EQ(d.regions[0].inputs[0].b, "float32[4, 16, 64]");
  EXPECT_TRUE(d.regions[0].ops.empty());
  std::string md = report::render_diff_markdown(d);
  EXPECT_NE(md.find("| `qkv` |"), std::string::npos) << md;
}

TEST(Diff, TwoImportedLogs) {
  auto d = commands::diff_inputs(test::data("traces/block_default.log"), test::data("traces/breaky_dynamic.log"));
  EXPECT_EQ(d.a.origin, "TORCH_TRACE import");
  int added = 0;
  for (const auto& b : d.breaks) added += b.change == report::Change::Added;
  EXPECT_GT(added, 0);  // breaky breaks, the block does not
  ASSERT_FALSE(d.regions.empty());
  EXPECT_FALSE(d.structure.a.present);  // logs alone: no kernel time, said so
  std::string md = report::render_diff_markdown(d);
  EXPECT_NE(md.find("no kernel time recorded"), std::string::npos);
  auto j = report::render_diff_json(d);
  EXPECT_NE(j.find("\"change\": \"added\""), std::string::npos);
}

TEST(Diff, KilnSessionAgainstImportedRunOfTheSameModel) {
  auto d = commands::diff_inputs(profiled_block("2x16x64"), test::data("traces/block_default.log"));
  const report::RegionChange* r0 = nullptr;
  for (const auto& r : d.regions)
    if (r.compile_id == "[0/0]") r0 = &r;
  ASSERT_TRUE(r0);
  EXPECT_TRUE(r0->in_a && r0->in_b);
  EXPECT_EQ(r0->graph_a, "captured");
  EXPECT_EQ(r0->graph_b, "dynamo_output_graph");
  // Kiln's aten::linear and Dynamo's torch._C._nn.linear are one op: the block has four on both sides.
  for (const auto& o : r0->ops) {
    EXPECT_NE(o.op, "linear") << o.a << " vs " << o.b;
    EXPECT_NE(o.op, "layer_norm") << o.a << " vs " << o.b;
  }
  EXPECT_TRUE(d.structure.a.present);
  expect_rows_add_up(d.structure.a);
}

TEST(Diff, BadInputsNameTheInputAndTheProblem) {
  const std::string dir = test::temp_dir();
  std::string good = profiled_block("2x16x64");
  std::string e = test::error_of([&] { commands::diff_inputs(dir + "/missing.kiln", good); });
  EXPECT_NE(e.find("missing.kiln: file not found"), std::string::npos) << e;
  std::ofstream(dir + "/corrupt.kiln") << "not a database at all";
  e = test::error_of([&] { commands::diff_inputs(good, dir + "/corrupt.kiln"); });
  EXPECT_NE(e.find("corrupt.kiln: not a Kiln session"), std::string::npos) << e;
  std::ofstream(dir + "/notes.txt") << "hello, this is neither a log nor a trace\n";
  e = test::error_of([&] { commands::diff_inputs(good, dir + "/notes.txt"); });
  EXPECT_NE(e.find("notes.txt"), std::string::npos) << e;
  e = test::error_of([&] {
    report::DiffOptions o;
    o.run_b = "max-autotune";
    commands::diff_inputs(good, good, o);
  });
  EXPECT_NE(e.find("no run 'max-autotune'"), std::string::npos) << e;
}

TEST(Diff, GpuSessionDeviceKernelsOfExternCallsReachTheirNodes) {
  // The H100 session: cuBLAS kernels launched inside Kiln's extern calls count for the call's node.
  const std::string h100 = test::example("sessions/block_h100.kiln");
  report::DiffOptions o;
  o.run_a = o.run_b = "default";
  auto d = commands::diff_inputs(h100, h100, o);
  EXPECT_EQ(d.structure.a.time.time_source, "device");
  expect_rows_add_up(d.structure.a);
  EXPECT_DOUBLE_EQ(d.structure.a.module_coverage, 1.0);
  EXPECT_TRUE(d.regions.empty());
  EXPECT_EQ(d.runs.size(), 6u);
}

// The recorded pairs shipped as examples (scripts/record-compare on the H100: Kiln's default mode and a
// real torch.compile default run with its TORCH_TRACE log and profiler trace, of the same seeded model):
// each side's kernel time per iteration is attributed to modules and lines to within 5%, Inductor's
// extern cuBLAS/cuDNN calls included, and the two sides line up module by module.
TEST(Diff, ShippedH100PairsLineUpModuleByModuleOnBothSides) {
  for (const std::string model : {"resnet18", "bert"}) {
    report::DiffOptions o;
    o.run_a = "default";
    auto d = commands::diff_inputs(test::example("sessions/" + model + "_kiln_h100.kiln"),
                                   test::example("sessions/" + model + "_inductor_h100.kiln"), o);
    for (const auto* side : {&d.structure.a, &d.structure.b}) {
      ASSERT_TRUE(side->present) << model;
      EXPECT_EQ(side->time.time_source, "device") << model;
      expect_rows_add_up(*side);
      EXPECT_GE(side->module_coverage, 0.95) << model << " " << side->run_label;
      EXPECT_GT(side->time.total_ns, 0) << model;
    }
    // Modules both sides timed: the encoder layers, the residual stages.
    int both = 0;
    for (const auto& r : d.structure.a.time.modules)
      for (const auto& q : d.structure.b.time.modules)
        if (!r.unattributed && r.key == q.key && !r.key.empty()) ++both;
    EXPECT_GE(both, 5) << model;
  }
}
