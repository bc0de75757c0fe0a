// An extern step called straight from its computations' buffers, its literal arguments read once.
//
// Through the interpreter, an extern's call binds each argument into the region's environment (a hash insert
// per tensor; a list such as a convolution's stride built anew from its elements on every call), looks them up
// again, converts lists to vectors, calls the op, and erases the bindings. A region with fifty convolutions
// pays that fifty times per call. For the common externs whose non-tensor arguments are literals in the graph
// (convolutions' strides, paddings, dilations and groups; products with no scalar arguments), the call is
// prepared once and made with the same ATen function the interpreter's op calls: the results are the same.
// Without gradients (Kiln runs models under no-grad), a convolution calls convolution's own kernel and a
// product on the GPU mm's CUDA kernel, as AOTInductor's C shim does: no dispatch and no autograd wrapper for
// the op itself (the ops they call dispatch as usual). A linear without its bias, on a matrix, is its own
// body: mm with the weight transposed.
//
// prepare_direct_extern(comp, node)
//   returns the prepared call when comp is an Extern whose target is aten::conv2d (padding as integers),
//   aten::linear, aten::mm, aten::bmm or aten::matmul, aten::addmm with drop_bias, aten::embedding or
//   aten::gather (a literal dim, no sparse gradient), and every argument it uses is either a computation
//   (comp.operands) or a literal; nothing otherwise (the interpreter runs it). An embedding is its own forward
//   body (index_select of the weight's rows; on the GPU without gradients the CUDA kernel directly, as a
//   gather is): the lookups that open every transformer, called through the interpreter, held the first
//   product back by 30-40 us of host time each.
//   Honors drop_bias (linear_bias.h): such a call leaves the bias out.
// call_direct_extern(call, bufs, lt)
//   the op's result, or an undefined tensor when a tensor argument's buffer is not there (the caller then
//   goes through the interpreter). With `lt`, a product of matrices on the GPU (mm, matmul of two matrices,
//   a linear without its bias, its input's leading dimensions flattened when contiguous) goes to cuBLASLt
//   directly (lt_gemm.h) where it takes the product; LibTorch's call otherwise. A product whose call has `own`
//   goes there first (with or without `lt`). A matmul of two tensors of
//   three or more dimensions with the same batch sizes (attention's) is matmul's own batched product, its batch
//   folded by a view or a copy as matmul folds it, without matmul's broadcasting steps: bit for bit its result.
//
// KILN_DIRECT_EXTERNS=0 sends every extern through the interpreter (read on each region run).
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <optional>
#include <vector>

#include "engine/lowering/loop_ir.h"
#include "engine/runtime/lt_gemm.h"

namespace torch::jit {
struct Node;
}

namespace kiln::runtime {

// A matrix product Kiln computes with a kernel of its own (runtime/cuda/half_gemm.h: 16-bit products, one launch
// where cuBLAS's call costs tens of microseconds of host time): its result, or undefined where it does not take
// the problem (then cuBLASLt's or LibTorch's call runs).
class OwnProduct {
 public:
  virtual ~OwnProduct() = default;
  virtual at::Tensor mm(const at::Tensor& a, const at::Tensor& b) = 0;
};

struct DirectExtern {
  enum class Op { Conv2d, Linear, Mm, Bmm, Matmul, Embedding, Gather };
  Op op = Op::Mm;
  std::vector<int> tensors;  // computations of the tensor arguments, in the call's order (bias last, when any)
  bool bias = false;         // a convolution's or linear's bias is among them (not left to its readers)
  std::vector<int64_t> stride, padding, dilation;
  int64_t groups = 1;        // a convolution's groups
  int64_t dim = 0;           // a gather's dim
  std::shared_ptr<LtGemm> lt;  // products (Mm, Matmul, Linear): cuBLASLt's plans per problem (lt_gemm.h)
  std::shared_ptr<OwnProduct> own;  // products: tried first when set (LoweredRegionFn::use_own_products)
};

// A product's `lt` takes cuBLASLt's heuristic's first algorithm; max-autotune swaps in a timing one
// (LoweredRegionFn::tune_products).
std::optional<DirectExtern> prepare_direct_extern(const lowering::Comp& comp, const torch::jit::Node* node);
// prepare_direct_extern for a region's computation comps[c], whose operands the region knows: a matmul whose
// second operand is not a matrix is a batched product (bmm's path), so never cuBLASLt's (no `lt`). The calls
// with `lt` are the products of matrices that cuBLASLt, or Kiln's own kernel (OwnProduct), may take.
std::optional<DirectExtern> prepare_region_extern(const std::vector<lowering::Comp>& comps, size_t c,
                                                  const torch::jit::Node* node);

at::Tensor call_direct_extern(const DirectExtern& call, const std::vector<at::Tensor>& bufs, bool lt = false);

// The attention extern (lowering/attention.h): q, k and v from their buffers (an operand of heads H > 0 is
// [B, T, H·E], viewed [B, T, H, E] and transposed to [B, H, T, E]: strides, no copy; one with a width W is the W
// columns from its offset of a wider [B, T, ·] or [B·T, ·] operand, also a view), the mask broadcast as
// eager's add broadcasts it. On the GPU, scaled_dot_product_attention with the chain's scale (LibTorch 2; its
// fused kernels compute in float32 inside); elsewhere the steps eager runs, in its order: matmul(q, kᵀ), the
// scale, the mask, softmax over the last dim, matmul with v. Error when an operand's buffer is missing.
at::Tensor call_attention(const lowering::Comp& comp, const std::vector<at::Tensor>& bufs);

// How many attention calls this process ran on the memory-efficient kernel called directly (KILN_ATTENTION_EFFICIENT=1,
// where PyTorch would pick cuDNN's attention and the kernel takes the problem).
uint64_t efficient_attention_calls();

// How many calls this process made through call_direct_extern (each one that returned a result).
uint64_t direct_extern_calls();

// Whether regions call prepared externs directly (KILN_DIRECT_EXTERNS, on unless "0").
bool direct_externs_enabled();

}  // namespace kiln::runtime
