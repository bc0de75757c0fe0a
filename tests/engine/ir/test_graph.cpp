#include "engine/ir/graph.h"

#include <gtest/gtest.h>

#include "tests/engine/ir/sample_graph.h"

using namespace kiln;

TEST(Graph, SampleGraphVerifies) { EXPECT_TRUE(ir::verify(test::sample_graph()).empty()); }

TEST(Graph, VerifyReportsUseBeforeDefinition) {
  auto g = test::sample_graph();
  std::swap(g.nodes[2], g.nodes[3]);  // relu before linear
  auto problems = ir::verify(g);
  ASSERT_FALSE(problems.empty());
  EXPECT_NE(problems[0].find("uses %linear before it is defined"), std::string::npos) << problems[0];
}

TEST(Graph, VerifyReportsMisplacedOutputAndDuplicates) {
  auto g = test::sample_graph();
  g.nodes.push_back(g.nodes[3]);  // a second relu after the output, redefining %y
  auto problems = ir::verify(g);
  bool not_last = false, redefined = false;
  for (const auto& p : problems) {
    not_last |= p.find("output node is not last") != std::string::npos;
    redefined |= p.find("redefines %y") != std::string::npos;
  }
  EXPECT_TRUE(not_last);
  EXPECT_TRUE(redefined);
}

TEST(Graph, HistogramAndMetaLookup) {
  auto g = test::sample_graph();
  auto h = g.op_histogram();
  EXPECT_EQ(h["aten::linear"], 1);
  EXPECT_EQ(h["prim::Print"], 1);
  EXPECT_EQ(h.size(), 3u);
  const auto* m = g.meta_of("y");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->str(), "f32[s0, 64]");
  EXPECT_EQ(m->numel(), -1);
  EXPECT_EQ(g.meta_of("nope"), nullptr);
}

TEST(Graph, ArgLiteralsArePythonLike) {
  EXPECT_EQ(ir::Arg::real(0.1).str(), "0.1");
  EXPECT_EQ(ir::Arg::real(2).str(), "2.0");
  EXPECT_EQ(ir::Arg::real(1e-5).str(), "1e-05");
  EXPECT_EQ(ir::Arg::boolean(true).str(), "True");
  EXPECT_EQ(ir::Arg::none().str(), "None");
  EXPECT_EQ(ir::Arg::list({ir::Arg::integer(1), ir::Arg::integer(2)}).str(), "[1, 2]");
  EXPECT_EQ(ir::Arg::string("a\"b\\c\nd").str(), "\"a\\\"b\\\\c\\nd\"");
}

TEST(Graph, DTypes) {
  EXPECT_EQ(ir::parse_dtype("float"), ir::DType::Float32);
  EXPECT_EQ(ir::parse_dtype("torch.bfloat16"), ir::DType::BFloat16);
  EXPECT_EQ(ir::parse_dtype("Int64"), ir::DType::Int64);
  EXPECT_FALSE(ir::parse_dtype("complex32").has_value());
  EXPECT_EQ(ir::dtype_size(ir::DType::Float16), 2);
}
