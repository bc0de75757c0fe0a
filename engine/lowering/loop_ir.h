// The loop-level IR: what a captured region becomes after lowering. Each computation is a
// pointwise function over an index space, a reduction, or an extern/fallback call into LibTorch.
// Pointwise bodies load from other computations through index expressions, so views (permute,
// reshape, expand, slice, ...) are pure index arithmetic and fusion is substitution.
//
// Sizes are capture::Sym expressions: constants, or size symbols (s0) when dimensions are dynamic.
#pragma once

#include <array>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "engine/capture/sym.h"
#include "engine/ir/graph.h"

namespace kiln::lowering {

using capture::Sym;

// Integer index expressions over loop variables and size symbols.
struct IExprNode;
using IExpr = std::shared_ptr<const IExprNode>;
struct IExprNode {
  enum class Op { Const, Var, Size, Add, Mul, FloorDiv, Mod, Min, Max };
  Op op = Op::Const;
  int64_t value = 0;  // Const
  int var = 0;        // Var: loop variable number
  Sym size;           // Size: a size expression
  IExpr a, b;
};
IExpr ie_const(int64_t v);
IExpr ie_var(int v);
IExpr ie_size(const Sym& s);  // folds constant sizes to Const
IExpr ie_add(IExpr a, IExpr b);
IExpr ie_mul(IExpr a, IExpr b);
IExpr ie_floordiv(IExpr a, IExpr b);
IExpr ie_mod(IExpr a, IExpr b);
IExpr ie_min(IExpr a, IExpr b);
IExpr ie_max(IExpr a, IExpr b);
IExpr ie_clamp(IExpr a, int64_t lo, int64_t hi);  // max(lo, min(a, hi)), lo <= hi
std::string ie_str(const IExpr& e);

// Value expressions (float32 math; comparisons yield bool).
struct VExprNode;
using VExpr = std::shared_ptr<const VExprNode>;
struct VExprNode {
  enum class Op { Const, Load, Scalar, Unary, Binary, Where };
  Op op = Op::Const;
  double value = 0;            // Const
  int comp = -1;               // Load: the computation read
  std::vector<IExpr> index;    // Load: one index per dim of the computation
  int scalar = -1;             // Scalar: index of a scalar input of the region
  std::string fn;              // Unary/Binary function name ("exp", "add", "gt", ...)
  VExpr a, b, c;               // operands (Where: c ? a : b)
  bool is_bool = false;        // result is a boolean
};
VExpr ve_const(double v);
VExpr ve_load(int comp, std::vector<IExpr> index);
VExpr ve_scalar(int k);
VExpr ve_unary(const std::string& fn, VExpr a);
VExpr ve_binary(const std::string& fn, VExpr a, VExpr b);
VExpr ve_where(VExpr cond, VExpr a, VExpr b);
// An index expression as a value (arange): Binary "idx_value" with index = {i}, like "idx_lt"
// (index = {a, b}) compares two index expressions.
VExpr ve_index_value(IExpr i);
VExpr ve_index_less(IExpr a, IExpr b);  // a < b, a boolean
bool ve_is_index_fn(const VExprNode& e);  // idx_lt or idx_value
int ve_size(const VExpr& e);  // node count (fusion's size limit)
std::string ve_str(const VExpr& e, const std::vector<std::string>& comp_names);

// Replaces loop variable k by index[k] everywhere in e.
IExpr ie_subst(const IExpr& e, const std::vector<IExpr>& index);
VExpr ve_subst(const VExpr& e, const std::vector<IExpr>& index);

struct Comp {
  enum class Kind { Input, Constant, Pointwise, Reduction, Extern, Fallback };
  Kind kind = Kind::Pointwise;
  std::string name;              // the IR value it computes ("linear", "x")
  std::vector<Sym> sizes;        // output sizes
  // Storage order of the dims, outermost first: channels-last 4-d is {0, 2, 3, 1} (N, H, W, C).
  // Empty: row-major. Loads stay logical (one index per dim); only offsets and loop order change.
  std::vector<int> layout;
  ir::DType dtype = ir::DType::Float32;
  bool is_view = false;          // pointwise that only moves indices (never worth a kernel of its own)
  // Pointwise: body over vars 0..rank-1. Reduction: body over vars 0..rank-1 (output) then
  // rank..rank+reduce_rank-1 (reduced dims).
  VExpr body;
  std::string reduce_op;         // "sum", "max", "min"
  std::vector<Sym> reduce_sizes;
  double post_scale_div = 0;     // reduction: divide the result by this size product (mean) when > 0
  std::vector<Sym> post_div_sizes;
  // Input: region input position. Constant: the get_attr target. Extern/Fallback: the IR node index.
  int input = -1;
  std::string attr;
  int ir_node = -1;
  std::string target;            // the aten op for Extern/Fallback; the op lowered for others
  std::string why_fallback;      // Fallback: why it has no lowering
  std::vector<int> deps;         // computations this one reads (Load targets or extern inputs)
  std::vector<int> operands;     // Extern/Fallback: tensor arguments in argument order (-1: not a tensor)
  // Extern aten::linear, or aten::addmm with beta = alpha = 1: a product plus a bias (operand
  // bias_operand) that its readers may add instead (linear_bias.h).
  int bias_operand = -1;
  bool drop_bias = false;        // called without its bias, which its readers add (linear_bias.h)
  // Extern kiln::scaled_dot_product_attention (attention.h): operands q, k, v and the added mask (-1: none),
  // softmax(q kᵀ · attn_scale + mask) v; per q, k, v the heads H its operand [B, T, H·E] splits into (0: the
  // operand is already [B, H, T, E]); with a width W > 0 the operand is a wider [B, T, ·] (or [B·T, ·]) and its
  // heads are the W columns from attn_offsets.
  double attn_scale = 1.0;
  std::array<int64_t, 3> attn_heads{}, attn_offsets{}, attn_widths{};
  // The call is made on every region call without a CUDA graph (default mode on the GPU), where each one's host cost
  // counts: where PyTorch picks cuDNN's attention for a small problem, the memory-efficient kernel is called instead
  // (runtime/direct_extern.h).
  bool attn_host_bound = false;
  std::vector<std::string> provenance;  // IR nodes this computation comes from
};

const char* comp_kind_name(Comp::Kind k);

// Whether e is exact in 64-bit integer arithmetic: loads of integer or bool computations, whole
// constants, index values, and + - * max min neg abs not, comparisons, and/or, where of such.
// Kernels compute such expressions in integers; anything else is float32 math.
bool ve_exact_int(const VExpr& e, const std::vector<Comp>& comps);
bool integral_dtype(ir::DType t);  // integers and bool
// The computations e loads from (its Load nodes' targets), added to `into`.
void collect_loads(const VExpr& e, std::set<int>& into);

// The storage order of c's dims, outermost first (its layout, or 0..rank-1).
std::vector<int> storage_order(const Comp& c);
// Layout names for dumps: "" for row-major, "channels-last" for {0, 2, 3, 1}, else "dims(0,2,1)".
std::string layout_name(const std::vector<int>& layout);

struct LoopProgram {
  std::vector<Comp> comps;       // topological order
  std::vector<int> outputs;      // computations that are region outputs (in output order)
  std::vector<std::string> scalar_inputs;  // names of scalar region inputs, by Scalar index
  std::vector<int> scalar_input_positions; // their region input positions
  std::vector<std::string> symbols;        // size symbols used ("s0")
};

std::string loop_program_text(const LoopProgram& p);
// Invariants: deps point backwards; loads index every dim of their target; outputs exist; a
// layout is a permutation of the dims.
std::vector<std::string> verify(const LoopProgram& p);

}  // namespace kiln::lowering
