#include "engine/ir/to_json.h"

#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "tests/engine/ir/sample_graph.h"
#include "tests/support/paths.h"

using namespace kiln;

TEST(ToJson, Golden) {
  auto text = ir::to_json(test::sample_graph());
  auto diff = test::check_golden("ir/sample_graph.json", text + "\n");
  EXPECT_TRUE(diff.empty()) << diff;
}

TEST(ToJson, ParsesAndCarriesMeta) {
  auto j = nlohmann::json::parse(ir::to_json(test::sample_graph()));
  ASSERT_EQ(j["nodes"].size(), 6u);
  const auto& lin = j["nodes"][2];
  EXPECT_EQ(lin["target"], "aten::linear");
  EXPECT_EQ(lin["module"], "l1");
  EXPECT_EQ(lin["source"]["line"], 41);
  EXPECT_EQ(lin["outputs"][0]["meta"]["shape"][0], "s0");
  EXPECT_EQ(lin["outputs"][0]["meta"]["shape"][1], 64);
  EXPECT_EQ(j["nodes"][4]["args"][0]["str"], "say \"hi\"\n */ \\");
}

namespace {

// The document to_json writes, built as an nlohmann::ordered_json and dumped by it: the reference
// the writer's text must equal.
using nlohmann::ordered_json;

ordered_json ref_arg(const ir::Arg& a) {
  switch (a.kind) {
    case ir::Arg::Kind::Ref: return ordered_json{{"ref", a.ref}};
    case ir::Arg::Kind::None: return nullptr;
    case ir::Arg::Kind::Bool: return a.b;
    case ir::Arg::Kind::Int: return a.i;
    case ir::Arg::Kind::Float: return a.f;
    case ir::Arg::Kind::Str: return ordered_json{{"str", a.s}};
    case ir::Arg::Kind::List: {
      ordered_json l = ordered_json::array();
      for (const auto& it : a.items) l.push_back(ref_arg(it));
      return l;
    }
    case ir::Arg::Kind::Other: return ordered_json{{"literal", a.s}};
  }
  return nullptr;
}

ordered_json ref_meta(const ir::ValueMeta& m) {
  ordered_json j;
  j["type"] = m.type_name;
  if (m.is_tensor()) {
    j["dtype"] = ir::dtype_name(m.dtype);
    ordered_json shape = ordered_json::array();
    for (const auto& d : m.shape) {
      if (d.is_symbolic()) shape.push_back(d.symbol);
      else shape.push_back(d.value);
    }
    j["shape"] = shape;
    j["stride"] = m.stride;
    j["device"] = m.device;
    j["requires_grad"] = m.requires_grad;
  } else if (!m.scalar_value.empty()) {
    j["value"] = m.scalar_value;
  }
  return j;
}

ordered_json ref_loc(const ir::SourceLoc& l) {
  if (!l.known()) return nullptr;
  return ordered_json{{"file", l.file}, {"line", l.line}, {"col", l.col}, {"text", l.text}};
}

ordered_json ref_values(const std::vector<ir::Value>& vs) {
  ordered_json a = ordered_json::array();
  for (const auto& v : vs) a.push_back(ordered_json{{"name", v.name}, {"meta", ref_meta(v.meta)}});
  return a;
}

ordered_json ref_nodes(const std::vector<ir::Node>& ns) {
  ordered_json arr = ordered_json::array();
  for (const auto& n : ns) {
    ordered_json j;
    j["op"] = ir::node_op_name(n.op);
    j["name"] = n.outputs.empty() ? "" : n.name();
    j["target"] = n.target;
    ordered_json args = ordered_json::array();
    for (const auto& a : n.args) args.push_back(ref_arg(a));
    j["args"] = args;
    ordered_json kwargs = ordered_json::object();
    for (const auto& kw : n.kwargs) kwargs[kw.first] = ref_arg(kw.second);
    j["kwargs"] = kwargs;
    j["outputs"] = ref_values(n.outputs);
    j["module"] = n.module_path;
    j["source"] = ref_loc(n.loc);
    j["op_source"] = ref_loc(n.op_loc);
    if (!n.note.empty()) j["note"] = n.note;
    if (!n.blocks.empty()) {
      ordered_json blocks = ordered_json::array();
      for (const auto& b : n.blocks) {
        ordered_json rets = ordered_json::array();
        for (const auto& r : b.returns) rets.push_back(ref_arg(r));
        blocks.push_back(ordered_json{{"params", ref_values(b.params)}, {"nodes", ref_nodes(b.nodes)}, {"returns", rets}});
      }
      j["blocks"] = blocks;
    }
    arr.push_back(std::move(j));
  }
  return arr;
}

std::string reference_json(const ir::Graph& g, int indent) {
  ordered_json j;
  j["name"] = g.name;
  j["nodes"] = ref_nodes(g.nodes);
  return j.dump(indent, ' ', false, ordered_json::error_handler_t::replace);
}

// Random graphs of everything a node holds, with the strings and numbers JSON makes hard.
struct RandomGraph {
  std::mt19937_64 rng;
  explicit RandomGraph(uint64_t seed) : rng(seed) {}

  size_t pick(size_t n) { return static_cast<size_t>(rng() % n); }
  std::string text() {
    static const std::vector<std::string> pool = {
        "", "a", "aten::linear", "x\"y", "back\\slash", std::string("nul\0in", 6), "ctl\x01\x1f", "tab\t\n\r\b\f",
        "utf8 \xc3\xa9 \xe2\x98\x83", "bad \xff\xfe", "cut \xc3", "\xe2\x98", "del\x7f", "</script>", std::string(300, 'w')};
    return pool[pick(pool.size())];
  }
  double real() {
    static const std::vector<double> pool = {0.0, -0.0, 1.5, 1e300, 1e-300, 0.1, 123456789.0, 1e15, 1e16, -2.5e-7,
                                             std::numeric_limits<double>::quiet_NaN(),
                                             std::numeric_limits<double>::infinity(),
                                             -std::numeric_limits<double>::infinity(), 5e-324};
    if (pick(3) == 0) return std::ldexp(static_cast<double>(rng() >> 11), static_cast<int>(pick(200)) - 100);
    return pool[pick(pool.size())];
  }
  int64_t integer() {
    static const std::vector<int64_t> pool = {0, -1, 1, INT64_MIN, INT64_MAX, 42};
    return pick(2) ? pool[pick(pool.size())] : static_cast<int64_t>(rng());
  }
  ir::Arg arg(int depth) {
    switch (pick(depth > 2 ? 7 : 8)) {
      case 0: return ir::Arg::value(text());
      case 1: return ir::Arg::none();
      case 2: return ir::Arg::boolean(pick(2));
      case 3: return ir::Arg::integer(integer());
      case 4: return ir::Arg::real(real());
      case 5: return ir::Arg::string(text());
      case 6: return ir::Arg::other(text());
      default: {
        std::vector<ir::Arg> items;
        for (size_t i = pick(4); i > 0; --i) items.push_back(arg(depth + 1));
        return ir::Arg::list(std::move(items));
      }
    }
  }
  ir::Value value() {
    ir::Value v;
    v.name = text();
    v.meta.type_name = text();
    if (pick(2)) {
      v.meta.kind = ir::ValueMeta::Kind::Tensor;
      v.meta.dtype = static_cast<ir::DType>(pick(11));
      for (size_t i = pick(4); i > 0; --i)
        v.meta.shape.push_back(pick(3) ? ir::Dim::concrete(integer()) : ir::Dim::symbolic("s" + text()));
      for (size_t i = pick(4); i > 0; --i) v.meta.stride.push_back(integer());
      v.meta.device = text();
      v.meta.requires_grad = pick(2);
    } else {
      v.meta.kind = ir::ValueMeta::Kind::Float;
      if (pick(2)) v.meta.scalar_value = text();
    }
    return v;
  }
  ir::SourceLoc loc() {
    ir::SourceLoc l;
    if (pick(3) == 0) return l;
    l.file = text();
    l.line = static_cast<int>(1 + pick(100000));
    l.col = static_cast<int>(pick(200));
    l.text = text();
    return l;
  }
  std::vector<ir::Node> nodes(int depth) {
    std::vector<ir::Node> ns;
    for (size_t i = pick(depth ? 3 : 6); i > 0; --i) {
      ir::Node n;
      n.op = static_cast<ir::NodeOp>(pick(4));
      n.target = text();
      for (size_t k = pick(4); k > 0; --k) n.args.push_back(arg(0));
      static const char* names[] = {"dim", "keepdim", "dim", "alpha", "\"q\""};
      for (size_t k = pick(4); k > 0; --k) n.kwargs.push_back({names[pick(5)], arg(0)});  // repeats too
      for (size_t k = pick(3); k > 0; --k) n.outputs.push_back(value());
      n.loc = loc();
      n.op_loc = loc();
      n.module_path = text();
      if (pick(2)) n.note = text();
      if (depth < 2 && pick(4) == 0)
        for (size_t b = 1 + pick(2); b > 0; --b) {
          ir::Block blk;
          for (size_t k = pick(3); k > 0; --k) blk.params.push_back(value());
          blk.nodes = nodes(depth + 1);
          for (size_t k = pick(3); k > 0; --k) blk.returns.push_back(arg(0));
          n.blocks.push_back(std::move(blk));
        }
      ns.push_back(std::move(n));
    }
    return ns;
  }
  ir::Graph graph() {
    ir::Graph g;
    g.name = text();
    g.nodes = nodes(0);
    return g;
  }
};

}  // namespace

// The text written directly equals nlohmann's dump of the same document, compact and indented, on
// fresh random graphs every run (the seed is printed on a failure).
TEST(ToJson, WritesWhatTheJsonLibraryDumpsForTheSameDocument) {
  const uint64_t seed = std::random_device{}();
  RandomGraph random(seed);
  for (int round = 0; round < 400; ++round) {
    ir::Graph g = random.graph();
    for (int indent : {-1, 0, 2, 4}) {
      const std::string want = reference_json(g, indent);
      const std::string got = ir::to_json(g, indent);
      ASSERT_EQ(got, want) << "seed " << seed << " round " << round << " indent " << indent;
    }
  }
  const ir::Graph sample = test::sample_graph();
  EXPECT_EQ(ir::to_json(sample, -1), reference_json(sample, -1));
  EXPECT_EQ(ir::to_json(sample), reference_json(sample, 2));
}
