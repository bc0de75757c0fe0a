#include "engine/runtime/conv_warmup.h"

#include <ATen/ATen.h>
#include <ATen/Context.h>

#include <algorithm>
#include <optional>

#include "engine/base/error.h"
#include "engine/capture/sym.h"
#include "engine/capture/torch_meta.h"
#include "engine/lowering/attention.h"
#include "engine/runtime/direct_extern.h"
#include "engine/runtime/lowered_region.h"

namespace kiln::runtime {

namespace {

std::optional<std::vector<int64_t>> int_list(const ir::Arg& a) {
  if (a.kind == ir::Arg::Kind::Int) return std::vector<int64_t>{a.i};
  if (a.kind != ir::Arg::Kind::List) return std::nullopt;
  std::vector<int64_t> out;
  for (const auto& item : a.items) {
    if (item.kind != ir::Arg::Kind::Int) return std::nullopt;
    out.push_back(item.i);
  }
  return out;
}

// An uninitialised tensor shaped and laid out as computation c, or nothing when its sizes are symbolic; throws
// kiln::Error when their element count overflows.
std::optional<at::Tensor> placeholder(const lowering::Comp& c, const at::Device& device) {
  std::vector<int64_t> sizes;
  for (const auto& s : c.sizes) {
    if (!capture::sym_is_const(s)) return std::nullopt;
    sizes.push_back(*capture::sym_eval(s, {}));
  }
  if (c.dtype == ir::DType::Unknown) return std::nullopt;
  return at::empty_strided(sizes, layout_strides(sizes, c.layout),  // sizes that overflow: kiln::Error
                           at::TensorOptions().dtype(capture::to_scalar_type(c.dtype)).device(device));
}

}  // namespace

ConvWarmup warm_convolutions(const ir::Graph& graph, const lowering::LoopProgram& program, const std::string& device,
                             bool benchmark) {
  ConvWarmup w;
  const at::Device dev(device);
  const CudnnBenchmarkScope scope(benchmark);
  for (const auto& c : program.comps) {
    if (c.kind != lowering::Comp::Kind::Extern || c.target != "aten::conv2d") continue;
    if (c.ir_node < 0 || static_cast<size_t>(c.ir_node) >= graph.nodes.size() || c.operands.size() < 2) {
      ++w.skipped;
      continue;
    }
    const ir::Node& n = graph.nodes[static_cast<size_t>(c.ir_node)];
    if (n.target != c.target || n.args.size() != 7) {
      ++w.skipped;
      continue;
    }
    auto stride = int_list(n.args[3]), dilation = int_list(n.args[5]);
    auto padding = int_list(n.args[4]);
    const bool padding_named = n.args[4].kind == ir::Arg::Kind::Str;
    auto operand = [&](size_t i) -> std::optional<at::Tensor> {
      const int k = c.operands[i];
      if (k < 0 || static_cast<size_t>(k) >= program.comps.size()) return std::nullopt;
      return placeholder(program.comps[static_cast<size_t>(k)], dev);
    };
    const bool with_bias = !c.drop_bias && c.operands.size() > 2 && c.operands[2] >= 0;
    if (!stride || !dilation || !(padding || padding_named) || n.args[6].kind != ir::Arg::Kind::Int) {
      ++w.skipped;
      continue;
    }
    try {  // the placeholders too: an allocation LibTorch refuses is this convolution's failure, not the compile's
      auto x = operand(0), weight = operand(1);
      std::optional<at::Tensor> bias;
      if (with_bias) bias = operand(2);
      if (!x || !weight || (with_bias && !bias)) {
        ++w.skipped;
        continue;
      }
      const c10::optional<at::Tensor> b = with_bias ? c10::optional<at::Tensor>(*bias) : c10::nullopt;
      if (padding_named)
        at::conv2d(*x, *weight, b, *stride, n.args[4].s, *dilation, n.args[6].i);
      else
        at::conv2d(*x, *weight, b, *stride, *padding, *dilation, n.args[6].i);
      ++w.warmed;
    } catch (const std::exception&) {
      ++w.failed;
    }
  }
  return w;
}

CudnnBenchmarkScope::CudnnBenchmarkScope(bool on) : before_(at::globalContext().benchmarkCuDNN()) {
  at::globalContext().setBenchmarkCuDNN(on);
}

CudnnBenchmarkScope::~CudnnBenchmarkScope() { at::globalContext().setBenchmarkCuDNN(before_); }

ConvWarmup warm_attention(const lowering::LoopProgram& program, const std::string& device) {
  ConvWarmup w;
  const at::Device dev(device);
  for (const auto& c : program.comps) {
    if (c.kind != lowering::Comp::Kind::Extern || c.target != lowering::kAttentionTarget) continue;
    try {
      std::vector<at::Tensor> bufs(program.comps.size());
      bool known = c.operands.size() >= 3;
      for (int k : c.operands) {
        if (k < 0) continue;  // no mask
        auto t = static_cast<size_t>(k) < bufs.size() ? placeholder(program.comps[static_cast<size_t>(k)], dev) : std::nullopt;
        known = known && t;
        if (t) bufs[static_cast<size_t>(k)] = *t;
      }
      if (!known) {
        ++w.skipped;
        continue;
      }
      call_attention(c, bufs);
      ++w.warmed;
    } catch (const std::exception&) {
      ++w.failed;
    }
  }
  return w;
}

}  // namespace kiln::runtime
