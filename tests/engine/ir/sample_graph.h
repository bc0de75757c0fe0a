// A small hand-built graph used by the IR printer tests: x -> linear(l1) -> relu -> print -> output.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "engine/ir/graph.h"
#include "tests/support/paths.h"

namespace kiln::test {

inline ir::ValueMeta tensor_meta(std::vector<ir::Dim> shape) {
  ir::ValueMeta m;
  m.kind = ir::ValueMeta::Kind::Tensor;
  m.dtype = ir::DType::Float32;
  m.shape = std::move(shape);
  m.device = "cpu";
  m.type_name = "Tensor";
  return m;
}

inline ir::Graph sample_graph() {
  using namespace ir;
  Graph g;
  g.name = "forward";
  Node x;
  x.op = NodeOp::Placeholder;
  x.target = "x";
  x.outputs.push_back({"x", tensor_meta({Dim::symbolic("s0"), Dim::concrete(64)})});
  Node w;
  w.op = NodeOp::GetAttr;
  w.target = "l1.weight";
  w.outputs.push_back({"l1_weight", tensor_meta({Dim::concrete(64), Dim::concrete(64)})});
  Node lin;
  lin.target = "aten::linear";
  lin.args = {Arg::value("x"), Arg::value("l1_weight"), Arg::none()};
  lin.outputs.push_back({"linear", tensor_meta({Dim::symbolic("s0"), Dim::concrete(64)})});
  lin.module_path = "l1";
  lin.loc = SourceLoc{"/home/u/model.py", 41, 24, "y = torch.relu(self.l1(x))"};
  Node relu;
  relu.target = "aten::relu";
  relu.args = {Arg::value("linear")};
  relu.outputs.push_back({"y", tensor_meta({Dim::symbolic("s0"), Dim::concrete(64)})});
  relu.loc = SourceLoc{"/home/u/model.py", 41, 13, "y = torch.relu(self.l1(x))"};
  Node pr;
  pr.target = "prim::Print";
  pr.args = {Arg::string("say \"hi\"\n */ \\")};
  pr.loc = SourceLoc{"/home/u/model.py", 42, 9, "print(\"say \\\"hi\\\"\")"};
  Node out;
  out.op = NodeOp::Output;
  out.target = "output";
  out.args = {Arg::value("y")};
  g.nodes = {x, w, lin, relu, pr, out};
  return g;
}

// A printing of the sample graph matches its golden file; the diff and the text are shown when not.
inline void expect_golden(const std::string& golden, const std::string& text) {
  auto diff = check_golden(golden, text);
  EXPECT_TRUE(diff.empty()) << diff << "\n" << text;
}

}  // namespace kiln::test
