// Reading Dynamo's texts: graph-break artifacts (new and old wording), restart reasons, the C++
// guard tree, tracebacks and the break categories.
#include <gtest/gtest.h>

#include "engine/importers/torch_trace/dynamo_text.h"

using namespace kiln;  // NOLINT
using namespace kiln::importers;  // NOLINT

TEST(DynamoText, GraphBreakArtifactTorch211) {
  const char* text =
      "Graph break in user code at /src/model.py:43\n"
      "Graph Break Reason: Encountered graph break when attempting to trace CALL: a function call, e.g. f(x, y):\n"
      "\n"
      "Data-dependent branching\n"
      "  Explanation: Detected data-dependent branching (e.g. `if my_tensor.sum() > 0:`).\n"
      "  Hint: Use `torch.cond` to express dynamic control flow.\n"
      "\n"
      "  Developer debug context: attempted to jump with TensorVariable()\n"
      "\n"
      " For more details about this graph break, please visit: https://example.org/gb/gb0170.html\n"
      "\n"
      "User code traceback:\n"
      "  File \"run.py\", line 10, in <module>\n"
      "    m(x)\n"
      "  File \"/src/model.py\", line 43, in forward\n"
      "    if y.sum() > 0:\n"
      "        ^^^^^^^^^^^\n"
      "\n"
      "Traceback (most recent call last):\n"
      "  File \"/torch/_dynamo/symbolic_convert.py\", line 1001, in wrapper\n"
      "    return inner_fn(self, inst)\n";
  auto b = parse_graph_break_artifact(text);
  EXPECT_EQ(b.title, "Data-dependent branching");
  EXPECT_EQ(b.explanation, "Detected data-dependent branching (e.g. `if my_tensor.sum() > 0:`).");
  EXPECT_EQ(b.reason(), "Data-dependent branching: Detected data-dependent branching (e.g. `if my_tensor.sum() > 0:`).");
  EXPECT_EQ(b.hint(), "Use `torch.cond` to express dynamic control flow.\nSee https://example.org/gb/gb0170.html");
  EXPECT_EQ(b.loc.file, "/src/model.py");
  EXPECT_EQ(b.loc.line, 43);
  EXPECT_EQ(b.loc.text, "if y.sum() > 0:");
  EXPECT_EQ(b.user_stack, (std::vector<std::string>{"run.py:10 in <module>", "/src/model.py:43 in forward"}));
  EXPECT_EQ(classify_break(b), capture::BreakCategory::DataDependentBranch);
}

TEST(DynamoText, GraphBreakArtifactOlderWording) {
  auto b = parse_graph_break_artifact(
      "Graph break in user code at /a/m.py:7\n"
      "Reason: Unsupported: call_function BuiltinVariable(print) [ConstantVariable()] {}\n"
      "User code traceback:\n"
      "  File \"/a/m.py\", line 7, in f\n"
      "    print('hi')\n");
  EXPECT_EQ(b.title, "Unsupported: call_function BuiltinVariable(print) [ConstantVariable()] {}");
  EXPECT_EQ(b.loc.line, 7);
  EXPECT_EQ(b.loc.text, "print('hi')");
  EXPECT_EQ(classify_break(b), capture::BreakCategory::SideEffect);
}

TEST(DynamoText, ArtifactWithoutLocationTakesTheInnermostFrame) {
  auto b = parse_graph_break_artifact("Graph Break Reason: something opaque\nUser code traceback:\n"
                                      "  File \"/x/y.py\", line 3, in g\n    h()\n");
  EXPECT_EQ(b.loc.file, "/x/y.py");
  EXPECT_EQ(b.loc.line, 3);
  EXPECT_EQ(classify_break(b), capture::BreakCategory::OpaqueCall);
  EXPECT_EQ(parse_graph_break_artifact("just one line").title, "just one line");
}

TEST(DynamoText, RestartReasons) {
  auto item = parse_restart_reason(
      "Unsupported Tensor.item() call with capture_scalar_outputs=False\n"
      "  Explanation: Dynamo does not support tracing `Tensor.item()` with config.capture_scalar_outputs=False.\n"
      "  Hint: Set `torch._dynamo.config.capture_scalar_outputs = True`.\n\n"
      "  Developer debug context: call_method TensorVariable() item () {}\n");
  EXPECT_EQ(item.title, "Unsupported Tensor.item() call with capture_scalar_outputs=False");
  EXPECT_EQ(item.hints.size(), 1u);
  EXPECT_EQ(classify_break(item), capture::BreakCategory::ScalarExtraction);
  auto old = parse_restart_reason("'skip function graph_break in file /t/_dynamo/decorators.py'");
  EXPECT_EQ(old.reason(), "skip function graph_break in file /t/_dynamo/decorators.py");
  EXPECT_EQ(classify_break(old), capture::BreakCategory::OpaqueCall);
}

TEST(DynamoText, CppGuardTreeLeaves) {
  const char* tree =
      "\n"
      "TREE_GUARD_MANAGER:\n"
      "+- RootGuardManager\n"
      "| +- DEFAULT_DEVICE: utils_device.CURRENT_DEVICE == None                           # _dynamo/output_graph.py:951\n"
      "| +- GuardManager: source=L['x'], accessed_by=FrameLocalsGuardAccessor(key='x', framelocals_idx=1)\n"
      "| | +- TENSOR_MATCH: check_tensor(L['x'], Tensor, torch.float32, size=[4, 64], stride=[64, 1])  # y = f(x)  # m.py:4\n"
      "| | +- NO_HASATTR: hasattr(L['x'], '_dynamo_dynamic_indices') == False\n"
      "| +- DictGuardManager: source=G\n"
      "Guard latency = 1.2 us\n";
  EXPECT_EQ(guards_from_cpp_tree(tree),
            (std::vector<std::string>{"DEFAULT_DEVICE: utils_device.CURRENT_DEVICE == None",
                                      "TENSOR_MATCH: check_tensor(L['x'], Tensor, torch.float32, size=[4, 64], stride=[64, 1])",
                                      "NO_HASATTR: hasattr(L['x'], '_dynamo_dynamic_indices') == False"}));
}

TEST(DynamoText, TracebackFrames) {
  std::string code;
  auto frames = frames_from_traceback("  File \"a.py\", line 1, in <module>\n    f()\n  File \"b.py\", line 22, in f\n"
                                      "    return g()\n           ^^^\n",
                                      &code);
  EXPECT_EQ(frames, (std::vector<std::string>{"a.py:1 in <module>", "b.py:22 in f"}));
  EXPECT_EQ(code, "return g()");
}
