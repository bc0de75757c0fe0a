// The FX-style graph IR: placeholders, get_attr, call_function and output nodes,
// each carrying its meta (dtype, shape, stride, device, source location, module path).
//
// A Graph is a plain value: copyable, comparable through its printer, free of
// LibTorch and Qt. Control flow that capture has not yet removed (prim::If,
// prim::Loop) is kept as nested blocks so the whole model can be shown.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kiln::ir {

enum class DType { Unknown, Float32, Float64, Float16, BFloat16, Int64, Int32, Int16, Int8, UInt8, Bool };

const char* dtype_name(DType t);               // "float32", ...
std::optional<DType> parse_dtype(const std::string& name);  // accepts "float32", "float", "f32", ...
int dtype_size(DType t);                       // bytes per element, 0 if unknown

// One dimension: a concrete extent or a symbol (s0, s1, ...) for dynamic dims.
struct Dim {
  int64_t value = 0;   // meaningful when symbol is empty
  std::string symbol;  // non-empty for a symbolic dim

  static Dim concrete(int64_t v) { return Dim{v, {}}; }
  static Dim symbolic(std::string s) { return Dim{0, std::move(s)}; }
  bool is_symbolic() const { return !symbol.empty(); }
  std::string str() const;
  bool operator==(const Dim& o) const { return value == o.value && symbol == o.symbol; }
};

std::string shape_str(const std::vector<Dim>& shape);  // "[4, 64]" or "[s0, 64]"

// What is known about one value. `kind` tells tensors from scalars and containers.
struct ValueMeta {
  enum class Kind { Unknown, Tensor, Int, Float, Bool, Str, None, List, Tuple, Device, Other };
  Kind kind = Kind::Unknown;
  DType dtype = DType::Unknown;  // tensors
  std::vector<Dim> shape;        // tensors
  std::vector<int64_t> stride;   // tensors (empty if unknown)
  std::string device;            // tensors: "cpu", "cuda:0"
  bool requires_grad = false;
  std::string type_name;         // the TorchScript type as written ("Tensor", "int[]", ...)
  std::string scalar_value;      // for scalars seen at run time, printed (e.g. "0.25")

  bool is_tensor() const { return kind == Kind::Tensor; }
  int64_t numel() const;  // -1 if unknown or symbolic
  std::string str() const;  // "f32[4, 64]" / "int" / "f32[s0, 64]"
};

struct SourceLoc {
  std::string file;  // as recorded in the archive's debug info
  int line = 0;      // 1-based; 0 = unknown
  int col = 0;       // 1-based; 0 = unknown
  std::string text;  // the source line's text, trimmed; may be empty

  bool known() const { return line > 0; }
  std::string str() const;  // "sample_models.py:42:8" (basename)
};

// An argument: a reference to a value produced earlier, or a literal.
struct Arg {
  enum class Kind { Ref, None, Bool, Int, Float, Str, List, Other };
  Kind kind = Kind::None;
  std::string ref;  // value name for Ref
  bool b = false;
  int64_t i = 0;
  double f = 0.0;
  std::string s;  // Str payload, or the printed form for Other
  std::vector<Arg> items;  // List

  static Arg value(std::string name) { Arg a; a.kind = Kind::Ref; a.ref = std::move(name); return a; }
  static Arg none() { return Arg{}; }
  static Arg boolean(bool v) { Arg a; a.kind = Kind::Bool; a.b = v; return a; }
  static Arg integer(int64_t v) { Arg a; a.kind = Kind::Int; a.i = v; return a; }
  static Arg real(double v) { Arg a; a.kind = Kind::Float; a.f = v; return a; }
  static Arg string(std::string v) { Arg a; a.kind = Kind::Str; a.s = std::move(v); return a; }
  static Arg list(std::vector<Arg> v) { Arg a; a.kind = Kind::List; a.items = std::move(v); return a; }
  static Arg other(std::string printed) { Arg a; a.kind = Kind::Other; a.s = std::move(printed); return a; }
  std::string str() const;  // Python-like literal; strings quoted and escaped
};

struct Value {
  std::string name;
  ValueMeta meta;
};

struct Block;

enum class NodeOp { Placeholder, GetAttr, CallFunction, Output };
const char* node_op_name(NodeOp op);  // "placeholder", "get_attr", "call_function", "output"

struct Node {
  NodeOp op = NodeOp::CallFunction;
  std::string target;  // "aten::linear", "prim::Print"; attribute path for get_attr; input name for placeholder
  std::vector<Arg> args;
  std::vector<std::pair<std::string, Arg>> kwargs;
  std::vector<Value> outputs;  // usually one
  std::vector<Block> blocks;   // prim::If / prim::Loop bodies
  SourceLoc loc;               // the user's line (first frame outside torch's own library)
  SourceLoc op_loc;            // where the op itself was written (may be inside torch.nn)
  std::string module_path;     // "layer1.0.conv1"; empty at top level
  std::string note;            // free text a pass attaches (e.g. "fallback")

  const std::string& name() const;  // first output's name, or target for output nodes
};

struct Block {
  std::vector<Value> params;  // block inputs (loop counter, carried values)
  std::vector<Node> nodes;
  std::vector<Arg> returns;
};

struct Graph {
  std::string name;  // "forward", "region 0"
  std::vector<Node> nodes;  // placeholders first, one output node last

  // Lookup of the meta of a value defined anywhere in the graph (null if absent).
  const ValueMeta* meta_of(const std::string& value_name) const;
  // All call_function nodes, including those nested in blocks.
  std::vector<const Node*> call_nodes() const;
  std::map<std::string, int> op_histogram() const;  // target -> count, nested blocks included
};

// Checks the IR's invariants: unique value names, every Ref defined before use (in
// scope), placeholders first, exactly one output node and it is last. Returns the
// list of problems (empty when valid) so stages can verify between passes.
std::vector<std::string> verify(const Graph& g);

}  // namespace kiln::ir
