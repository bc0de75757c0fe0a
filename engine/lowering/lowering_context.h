// Internal to engine/lowering: the state the decomposition table works on.
#pragma once

#include <algorithm>
#include <array>

#include <map>
#include <string>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/lowering/lower_graph.h"

namespace kiln::lowering {

// The lowered form of one IR value.
struct Val {
  enum class Kind { None, Tensor, Int, IntList, Float, Bool, TensorList, Str, ScalarInput, Other };
  Kind kind = Kind::None;
  int comp = -1;             // Tensor
  Sym i;                     // Int
  std::vector<Sym> ints;     // IntList
  double f = 0;              // Float
  bool b = false;            // Bool
  std::vector<int> tensors;  // TensorList
  std::string s;             // Str
  int scalar = -1;           // ScalarInput
  std::string unknown;       // Other: why a host value is unknown at compile time (names the op)
  bool scalar_is_int = false;
};

inline Val tensor_val(int comp) {
  Val v;
  v.kind = Val::Kind::Tensor;
  v.comp = comp;
  return v;
}

struct LoweringContext {
  const ir::Graph& graph;
  LoweredRegion out;
  std::map<std::string, Val> vals;
  int node_index = -1;       // the IR node being lowered
  const ir::Node* node = nullptr;
  bool pool_windows = false;  // LowerOptions::pool_windows

  LoopProgram& prog() { return out.program; }
  const Comp& comp(int c) const { return out.program.comps[c]; }

  // Arguments.
  Val arg(size_t i) const;
  Val value(const ir::Arg& a) const;
  int tensor(size_t i) const;                 // the comp of a tensor argument (LoweringError otherwise)
  int64_t int_const(size_t i) const;          // a static int argument
  double number(size_t i) const;              // a static int/float argument
  std::vector<Sym> int_list(size_t i) const;  // an int-list argument (symbolic entries allowed)
  bool is_none(size_t i) const;

  // Building computations (each returns the comp index; deps and provenance filled in).
  int add(Comp c);
  int pointwise(const std::vector<Sym>& sizes, VExpr body, bool is_view = false, const std::string& target = "");
  int reduction(const std::vector<Sym>& out_sizes, const std::vector<Sym>& reduce_sizes, const std::string& op,
                VExpr body, bool mean = false);

  // Loads t broadcast to out_sizes (numpy rules, trailing alignment), using vars 0..rank-1.
  VExpr load_broadcast(int t, const std::vector<Sym>& out_sizes) const;
  // Loads t at exactly the loop vars 0..rank-1.
  VExpr load_all(int t) const;
  // An operand: a tensor (broadcast), a number or a scalar input.
  VExpr operand(const Val& v, const std::vector<Sym>& out_sizes) const;
  std::vector<Sym> broadcast(const std::vector<Sym>& a, const std::vector<Sym>& b) const;
  std::vector<Sym> sizes_of(const Val& v) const;  // [] for non-tensors
  // Argument i as a static index into a list of `size` elements (negative counts from the end).
  size_t list_index(size_t i, size_t size) const;
  int64_t dim_arg(int64_t d, size_t rank) const;  // normalizes a (possibly negative) dim
  void set_output(const Val& v);                  // binds the node's first output
};

// The lengths split(x, piece) / chunk cut `size` into: consecutive pieces of `piece`, the last one shorter
// (none when piece is not positive).
inline std::vector<int64_t> split_lengths(int64_t size, int64_t piece) {
  std::vector<int64_t> out;
  for (int64_t start = 0; piece > 0 && start < size; start += piece) out.push_back(std::min(piece, size - start));
  return out;
}
bool same_size(const Sym& a, const Sym& b);
Sym sym_mul(const Sym& a, const Sym& b);
Sym numel(const std::vector<Sym>& sizes, size_t from = 0, size_t to = SIZE_MAX);

// The decomposition table, split by kind. Each returns false when it does not handle the target.
bool lower_view_op(LoweringContext& cx, const std::string& target);
bool lower_pointwise_op(LoweringContext& cx, const std::string& target);
bool lower_reduction_op(LoweringContext& cx, const std::string& target);
// A depthwise conv2d (weight [C, 1, KH, KW], groups C, literal stride/padding/dilation, constant spatial sizes,
// at most 49 taps) as one pointwise computation (decompose_conv.cpp); false, adding nothing, for any other.
bool lower_depthwise_conv(LoweringContext& cx);

// A window's tap along one dim at index `at`, over [lowest, highest] for the outputs, of an input `size` long: `at`
// itself when always inside; else its index clamped into the input on the sides it crosses (every load in bounds,
// so it may run unconditionally) and `inside`, the condition under which its value counts (padding counts nothing,
// or -inf for a max). Shared by the depthwise convolution and max_pool2d.
struct WindowTap {
  IExpr index;
  VExpr inside;  // null when always inside
};
WindowTap window_tap(const IExpr& at, int64_t lowest, int64_t highest, int64_t size);
// Tap `tap` (kh, kw) of a 2-d window over an input of sizes `in` [N, C, H, W] for outputs of sizes `out` [N, C, OH,
// OW] (H, W, OH and OW constants; vars 0..3 the output's position): its index into the input (N and C the output's,
// H and W through window_tap) and the condition under which it counts (null when it never falls in the padding).
// Shared by the depthwise convolution and max_pool2d's window of taps.
struct WindowPosition {
  std::vector<IExpr> index;
  VExpr inside;  // null when always inside
};
WindowPosition window_position(const std::array<int64_t, 2>& tap, const std::array<int64_t, 2>& stride,
                               const std::array<int64_t, 2>& pad, const std::array<int64_t, 2>& dil,
                               const std::vector<Sym>& out, const std::vector<Sym>& in);
// Whether a kh x kw window is written out as taps (a depthwise convolution, max_pool2d's window): at most 49 of them
// (7x7); a larger one would make each output load every tap itself. Each size is tested before the product, which
// a hostile graph's sizes could overflow.
inline bool window_written_out(int64_t kh, int64_t kw) {
  constexpr int64_t kMostTaps = 49;
  return kh >= 1 && kw >= 1 && kh <= kMostTaps && kw <= kMostTaps && kh * kw <= kMostTaps;
}

// An attention chain (attention.h) lowered at its last product's node (attention.cpp).
struct AttentionMatch;
// Thrown by lower_attention when the chain's scale is not a number known at compile time: lower_graph then
// lowers the region again without that chain.
struct AttentionDeclined {
  int node;
};
void lower_attention(LoweringContext& cx, const AttentionMatch& m);

}  // namespace kiln::lowering
