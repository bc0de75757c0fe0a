#include "viewers/selection/selection_context.h"

#include <QSignalSpy>
#include <gtest/gtest.h>

using namespace kiln;
using kiln::viewers::SelectionContext;

namespace {
std::shared_ptr<session::Session> two_region_session() {
  auto s = std::make_shared<session::Session>();
  session::CompiledRegion r0;
  r0.compile_id = "[0/0]";
  r0.graphs.push_back({"captured", "graph", "", ""});
  r0.graphs.push_back({"fused", "graph", "", ""});
  session::CompiledRegion r1;
  r1.compile_id = "[1/0]";
  r1.graphs.push_back({"captured", "graph", "", ""});
  s->regions = {r0, r1};
  session::Kernel k0;
  k0.name = "k0_fused_add_relu";
  k0.compile_id = "[0/0]";
  k0.nodes = {"add", "relu"};
  session::Kernel k1;
  k1.name = "k1_linear";
  k1.compile_id = "[1/0]";
  k1.nodes = {"linear"};
  s->kernels = {k0, k1};
  session::Run skipped;
  skipped.id = 1;
  skipped.status = "skipped: no GPU";
  session::Run ok;
  ok.id = 2;
  s->runs = {skipped, ok};
  return s;
}
}  // namespace

TEST(SelectionContext, NewSessionPicksFirstRegionStageAndOkRun) {
  SelectionContext ctx;
  QSignalSpy spy(&ctx, &SelectionContext::selectionChanged);
  ctx.setSession(two_region_session(), "x.kiln");
  ASSERT_EQ(spy.count(), 1);
  EXPECT_EQ(ctx.current().compile_id, "[0/0]");
  EXPECT_EQ(ctx.current().stage, "captured");
  EXPECT_EQ(ctx.current().run, 2);
  EXPECT_EQ(ctx.current().session_path, "x.kiln");
}

TEST(SelectionContext, NodeSelectsItsKernelAndKernelSelectsItsRegion) {
  SelectionContext ctx;
  ctx.setSession(two_region_session());
  QSignalSpy spy(&ctx, &SelectionContext::selectionChanged);
  ctx.selectNode("[0/0]", "relu");
  ASSERT_EQ(spy.count(), 1);
  EXPECT_EQ(spy.at(0).at(1).toUInt(), unsigned(viewers::kNodePart | viewers::kKernelPart));
  EXPECT_EQ(ctx.current().kernel, "k0_fused_add_relu");

  ctx.selectKernel("k1_linear");
  EXPECT_EQ(ctx.current().compile_id, "[1/0]");
  EXPECT_TRUE(ctx.current().node.empty());  // relu did not come from k1_linear
  unsigned parts = spy.at(1).at(1).toUInt();
  EXPECT_TRUE(parts & viewers::kRegionPart);
  EXPECT_TRUE(parts & viewers::kKernelPart);
}

TEST(SelectionContext, UnchangedValuesDoNotNotify) {
  SelectionContext ctx;
  ctx.setSession(two_region_session());
  QSignalSpy spy(&ctx, &SelectionContext::selectionChanged);
  ctx.setRun(2);
  ctx.setRegion("[0/0]");
  ctx.setTimeRange({});
  EXPECT_EQ(spy.count(), 0);
  ctx.setRegion("[1/0]");
  EXPECT_EQ(spy.count(), 1);
  EXPECT_EQ(ctx.current().stage, "captured");
}

TEST(SelectionContext, NodeWithoutKernelClearsKernel) {
  SelectionContext ctx;
  ctx.setSession(two_region_session());
  ctx.selectKernel("k0_fused_add_relu");
  ctx.selectNode("[0/0]", "placeholder_x");
  EXPECT_TRUE(ctx.current().kernel.empty());
}

TEST(SelectionContext, KernelNamesRepeatingAcrossRegionsAreTellApartByCompileId) {
  auto s = two_region_session();
  session::Kernel again;
  again.name = "k0_fused_add_relu";  // the same name in the second region
  again.compile_id = "[1/0]";
  again.nodes = {"add_1"};
  s->kernels.push_back(again);
  SelectionContext ctx;
  ctx.setSession(s);
  QSignalSpy spy(&ctx, &SelectionContext::selectionChanged);
  ctx.selectKernel("k0_fused_add_relu", "[1/0]");
  ASSERT_EQ(spy.count(), 1);  // one notification for kernel and region together
  EXPECT_EQ(ctx.current().compile_id, "[1/0]");
  ctx.selectNode("[1/0]", "add_1");
  EXPECT_EQ(ctx.current().kernel, "k0_fused_add_relu");
  // Without a compile id the kernel of the current region wins.
  ctx.selectKernel("k0_fused_add_relu");
  EXPECT_EQ(ctx.current().compile_id, "[1/0]");
  EXPECT_EQ(ctx.current().node, "add_1");
  EXPECT_EQ(viewers::find_kernel(*s, "k0_fused_add_relu", "[0/0]")->nodes, (std::vector<std::string>{"add", "relu"}));
}
