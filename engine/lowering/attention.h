// Attention written out as two products around a softmax, found in a region's graph so that it runs as one
// aten::scaled_dot_product_attention call.
//
// Transformers in their eager form (BERT's and GPT-2's attention in transformers, most hand-written blocks)
// compute softmax(q kᵀ · scale + mask) v step by step: the B·H·L·S scores are written by one product, scaled
// and masked, normalized by a row kernel and read back by a second product, and the heads of q, k and v are
// first copied out of their projections so the batched products can read them. One fused attention kernel
// (PyTorch's flash or memory-efficient attention, chosen by scaled_dot_product_attention) reads the heads
// where the projections wrote them and never writes the scores (BERT bfloat16 on an H200: 61 → 53 launches
// and 0.279 → 0.252 ms of device time per call). Inductor's own attention patterns aim at the same call;
// this finds the chains that traced and scripted transformers leave in TorchScript.
//
// find_attention(graph)
//   pre:  graph is a region graph (capture's output: no control flow), metas carry dtypes and shapes.
//   returns one match per chain, keyed by the node index of its last product:
//     t = transpose(k, -2, -1)                (either order, negative or not)
//     s = matmul(q, t)                        q [B, H, L, E], k [B, H, S, E]: rank 4, one dtype
//     s = mul(s, c) | mul(c, s) | div(s, c)   optional; c a number, literal or a scalar value (the scale is c,
//                                             or 1/c; lowering reads a value's number: scale_value)
//     s = add(s, mask[, 1]) | add(mask, s)    optional; mask a tensor of q's dtype, rank ≤ 4 (broadcast)
//     p = softmax(s, -1 or 3[, None])         or _softmax(s, -1 or 3, False)
//     p = dropout(p, _, False) | to(p, same dtype)   optional, any number (inference; GPT-2's cast to v's dtype)
//     o = matmul(p, v)                        v [B, H, S, Ev]; o of q's dtype: float16 or bfloat16, and float32
//                                             with `float32`
//   where every value before o has exactly one reader, the next step, and is not a region output, and none of
//   q, k, v and the mask is one of those values.
//   An operand that is cat([e..., y, e...], d) whose other operands are empty (GPT-2's key/value cache starting
//   from a [0] tensor), of y's dtype and shape, is read as y. An operand q, k or v that is transpose(view(x,
//   [B, T, H, E]), 1, 2) (or permute(·, [0, 2, 1, 3]), reshape for view) of a 3-d x [B, T, H·E] is read from x
//   with heads = H: at run time its heads are a strided view of x, not a copy. An x that is a piece of
//   split(y, n, -1) (GPT-2's fused q/k/v projection), y [B, T, W] or a view of a [B·T, W] product, is read from
//   y at its offset (offsets, widths): the pieces are not copied out either. `dead` holds the chain's nodes
//   and those cats, splits, their lists and head-splitting views whose every output's every reader is dead or a
//   call reading through them (and that no call reads as an operand): lowering skips them (nothing else reads
//   their values).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "engine/ir/graph.h"

namespace kiln::lowering {

// The extern target an attention chain becomes: Kiln's own name, so that a program calling
// aten::scaled_dot_product_attention itself (torch.export of torchvision's ViT) keeps that node's own
// arguments (its scale, its dropout) and runs through the interpreter.
inline constexpr const char* kAttentionTarget = "kiln::scaled_dot_product_attention";

struct AttentionMatch {
  std::array<std::string, 3> qkv;  // the values read for q, k and v (x for a head-split operand)
  std::array<int64_t, 3> heads{};  // per q, k, v: H when read from x [B, T, H·E]; 0 when already [B, H, ·, E]
  // Per q, k, v read from a split's piece: its start along the last dim of the split projection y ([B, T, W], or
  // [B·T, W] under a view) and its width H·E; widths 0: x is read whole.
  std::array<int64_t, 3> offsets{}, widths{};
  std::string mask;                // the added mask's value; empty without one
  double scale = 1.0;               // a literal's (times its reciprocal when divided)
  std::string scale_value;          // a scalar value the scale comes from (empty: a literal or none)
  bool divide = false;              // the scores are divided by it
  std::vector<std::string> chain;  // the values the call replaces, in graph order (its last is o)
};

struct AttentionPlan {
  std::map<int, AttentionMatch> at;  // by the node index of o
  std::set<int> dead;                // node indices lowering skips
};

// `excluded`: last products whose chains are not to be matched (lowering found a scale_value it cannot read).
AttentionPlan find_attention(const ir::Graph& graph, const std::set<int>& excluded = {}, bool float32 = true);

// One line saying what a match replaced, for the lowered IR's dump.
std::string attention_note(const AttentionMatch& m);

}  // namespace kiln::lowering
