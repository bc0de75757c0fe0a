#include "engine/runtime/lowered_region.h"

#include <ATen/EmptyTensor.h>
#if KILN_TORCH_CUDA
#include <ATen/cuda/EmptyTensor.h>
#endif

#include <functional>
#include <optional>

#include <algorithm>
#include <cmath>

#include "engine/base/error.h"
#include "engine/capture/sym.h"
#include "engine/capture/torch_meta.h"
#include "engine/profile/host_trace.h"
#include "engine/lowering/attention.h"
#include "engine/lowering/channels_last.h"
#include "engine/runtime/conv_warmup.h"
#include "engine/runtime/direct_extern.h"
#include "engine/runtime/memory_tracker.h"

namespace kiln::runtime {

using lowering::Comp;

std::vector<int64_t> layout_strides(const std::vector<int64_t>& sizes, const std::vector<int>& layout) {
  std::vector<int64_t> strides(sizes.size(), 1);
  int64_t step = 1;
  for (size_t j = sizes.size(); j-- > 0;) {
    const size_t d = layout.empty() ? j : static_cast<size_t>(layout[j]);
    strides[d] = step;
    // Sizes come from a model file and its inputs: a negative one, or a count that overflows, is refused
    // before it reaches the multiply (or an allocation).
    if (sizes[d] < 0 || __builtin_mul_overflow(step, std::max<int64_t>(sizes[d], 1), &step))
      throw Error("sizes " + c10::str(at::IntArrayRef(sizes)) +
                  (sizes[d] < 0 ? " include a negative size" : " hold more elements than a tensor can"));
  }
  return strides;
}

namespace {

// t itself when it is stored densely along `layout` (strides of size-1 dims do not matter),
// else a copy that is.
at::Tensor to_layout(const at::Tensor& t, const std::vector<int>& layout) {
  // is_contiguous() reads a flag; contiguous() is a dispatched op even when it returns t.
  if (layout.empty() || static_cast<size_t>(t.dim()) != layout.size()) return t.is_contiguous() ? t : t.contiguous();
  auto strides = layout_strides(t.sizes().vec(), layout);
  bool dense = true;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.size(d) > 1 && t.stride(d) != strides[d]) dense = false;
  if (dense) return t;
  auto out = at::empty_strided(t.sizes(), strides, t.options());
  out.copy_(t);
  return out;
}

// A buffer from the device's allocator without a dispatched op (at::empty_strided's own body, minus the
// dispatch): one per kernel-written computation per call.
at::Tensor empty_buffer(at::IntArrayRef sizes, at::IntArrayRef strides, at::ScalarType st, const c10::Device& device) {
  if (device.is_cpu()) return at::detail::empty_strided_cpu(sizes, strides, st);
#if KILN_TORCH_CUDA
  if (device.is_cuda()) return at::detail::empty_strided_cuda(sizes, strides, st, device);
#endif
  return at::empty_strided(sizes, strides, at::TensorOptions().dtype(st).device(device));
}

// aten::conv2d's node called with no bias (its readers add it: lowering/linear_bias.h); padding as
// sizes or as "same"/"valid" (conv2d.padding).
at::Tensor conv2d_without_bias(const torch::jit::Node* n, capture::Interpreter::Env& env) {
  auto arg = [&](size_t i) { return capture::lookup(env, n->input(i)); };
  const at::Tensor x = arg(0).toTensor(), w = arg(1).toTensor();
  const auto stride = arg(3).toIntVector(), dilation = arg(5).toIntVector();
  const int64_t groups = arg(6).toInt();
  const c10::IValue padding = arg(4);
  if (padding.isString()) return at::conv2d(x, w, c10::nullopt, stride, padding.toStringRef(), dilation, groups);
  return at::conv2d(x, w, c10::nullopt, stride, padding.toIntVector(), dilation, groups);
}

}  // namespace

at::Tensor LoweredRegionFn::constant_in_layout(size_t comp, const at::Tensor& value) {
  const auto& layout = fused_.program.comps[comp].layout;
  if (layout.empty()) return value.is_contiguous() ? value : value.contiguous();
  // Parameters rarely change: convert once, again only when the tensor or its version does. An inference tensor
  // (made by an op under InferenceMode, inference_guard.h) has no version to tell an in-place change by: it is
  // converted on every call.
  const bool versioned = !value.is_inference();
  auto& slot = layout_cache_[comp];
  if (versioned && slot.source.defined() && slot.source.is_same(value) && slot.version == value._version())
    return slot.converted;
  MemoryOwner owner("layout copy of", &fused_.program.comps[comp].name);  // kept with the region
  if (!versioned) return to_layout(value, layout);
  slot.source = value;
  slot.version = value._version();
  slot.converted = to_layout(value, layout);
  return slot.converted;
}

LoweredRegionFn::LoweredRegionFn(const capture::SpecializedRegion& entry, const capture::RegionStatic& region,
                                 lowering::LoweredRegion lowered, fusion::FusedProgram fused,
                                 std::vector<KernelCall> kernels, std::shared_ptr<void> keep_alive,
                                 std::optional<fusion::MemoryPlan> plan)
    : graph_nodes_(entry.graph_nodes),
      name_of_(entry.name_of),
      inputs_(entry.inputs),
      region_inputs_(region.inputs),
      region_outputs_(region.outputs),
      lowered_(std::move(lowered)),
      fused_(std::move(fused)),
      plan_(plan ? std::move(*plan) : fusion::plan_memory(fused_)),
      kernels_(std::move(kernels)),
      keep_alive_(std::move(keep_alive)),
      compile_id_(entry.info.compile_id) {
  std::map<std::string, const torch::jit::Value*> value_of;
  for (const auto& [v, n] : name_of_) {
    value_of.emplace(n, v);
    auto t = lowered_.tensor_of.find(n);
    if (t != lowered_.tensor_of.end()) comp_of_.emplace(v, static_cast<size_t>(t->second));
  }
  const auto& comps = fused_.program.comps;
  constant_value_.assign(comps.size(), nullptr);
  // Views that are another computation's buffer permuted (fusion::FusedProgram::buffer_views), by that computation.
  views_of_.assign(comps.size(), {});
  for (const auto& [v, view] : fused_.buffer_views) views_of_[static_cast<size_t>(view.source)].push_back(v);
  planned_.assign(comps.size(), -1);
  fixed_.resize(comps.size());
  for (size_t c = 0; c < comps.size(); ++c) {
    if (comps[c].kind == Comp::Kind::Constant) {
      auto it = value_of.find(comps[c].name);
      if (it != value_of.end()) constant_value_[c] = it->second;
    }
    std::vector<int64_t> sizes;
    for (const auto& d : comps[c].sizes) {
      if (!capture::sym_is_const(d)) break;
      sizes.push_back(*capture::sym_eval(d, {}));
    }
    if (sizes.size() != comps[c].sizes.size()) continue;
    try {
      auto strides = layout_strides(sizes, comps[c].layout);
      fixed_[c] = FixedShape{std::move(sizes), std::move(strides)};
    } catch (const Error&) {
      // Sizes no tensor can have: left to the call, which reports them for the computation that needs them.
    }
  }
  // A host op whose every output lowering knew (its HostValue): bound from that.
  host_known_.resize(lowered_.host_ops.size());
  for (size_t h = 0; h < lowered_.host_ops.size(); ++h) {
    const torch::jit::Node* n = graph_nodes_[static_cast<size_t>(lowered_.host_ops[h])];
    if (!n) continue;
    std::vector<const lowering::LoweredRegion::HostValue*> known;
    for (const auto* o : n->outputs()) {
      auto name = name_of_.find(o);
      auto hv = name == name_of_.end() ? lowered_.host_values.end() : lowered_.host_values.find(name->second);
      if (hv == lowered_.host_values.end()) break;
      known.push_back(&hv->second);
    }
    if (known.size() == n->outputs().size()) host_known_[h] = std::move(known);
  }
  layout_cache_.resize(comps.size());
  direct_.resize(comps.size());
  for (size_t c = 0; c < comps.size(); ++c)
    if (comps[c].kind == Comp::Kind::Extern && comps[c].ir_node >= 0 &&
        static_cast<size_t>(comps[c].ir_node) < graph_nodes_.size())
      direct_[c] = prepare_region_extern(comps, c, graph_nodes_[static_cast<size_t>(comps[c].ir_node)]);
  for (size_t b = 0; b < plan_.buffers.size(); ++b) {
    const int c = plan_.buffers[b].comp;
    if (c >= 0 && static_cast<size_t>(c) < planned_.size() && planned_[static_cast<size_t>(c)] < 0)
      planned_[static_cast<size_t>(c)] = static_cast<int>(b);
  }
}

void LoweredRegionFn::run(capture::Interpreter& interp, capture::Interpreter::Env& env) { run_steps(interp, env, nullptr); }

void LoweredRegionFn::run_probed(capture::Interpreter& interp, capture::Interpreter::Env& env, StepProbe& probe) {
  run_steps(interp, env, &probe);
}

void LoweredRegionFn::bind_value(const torch::jit::Value* v, const std::vector<at::Tensor>& bufs,
                                 capture::Interpreter& interp, capture::Interpreter::Env& env,
                                 std::vector<const torch::jit::Value*>* bound) const {
  auto t = comp_of_.find(v);
  if (t != comp_of_.end() && bufs[t->second].defined()) {
    env[v] = bufs[t->second];
    const auto kind = fused_.program.comps[t->second].kind;
    if (bound && kind != Comp::Kind::Input && kind != Comp::Kind::Constant) bound->push_back(v);
    return;
  }
  const auto* producer = v->node();
  if (producer->kind() == c10::prim::ListConstruct || producer->kind() == c10::prim::TupleConstruct) {
    for (const auto* in : producer->inputs()) bind_value(in, bufs, interp, env, bound);
    env[v] = interp.exec_node(producer, env).at(0);
    if (bound) bound->push_back(v);
  }
}

std::vector<bool> LoweredRegionFn::use_own_products(
    const std::function<std::shared_ptr<OwnProduct>(const lowering::Comp&)>& own_for) {
  std::vector<bool> given(direct_.size(), false);
  for (size_t c = 0; c < direct_.size(); ++c)
    if (auto& d = direct_[c]; d && d->lt)
      if (auto own = own_for(fused_.program.comps[c])) {
        d->own = std::move(own);
        given[c] = true;
      }
  return given;
}

std::vector<std::pair<size_t, std::shared_ptr<LtGemm>>> LoweredRegionFn::tune_products() {
  std::vector<std::pair<size_t, std::shared_ptr<LtGemm>>> out;
  for (size_t c = 0; c < direct_.size(); ++c)
    if (auto& d = direct_[c]; d && d->lt) {
      d->lt = std::make_shared<LtGemm>(true);
      out.emplace_back(c, d->lt);
    }
  return out;
}

void LoweredRegionFn::run_steps(capture::Interpreter& interp, capture::Interpreter::Env& env, StepProbe* probe) {
  const auto& prog = fused_.program;
  // Size symbols from the inputs.
  std::map<std::string, int64_t> bindings;
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (!inputs_[i].tensor) continue;
    const auto& t = capture::lookup(env, region_inputs_[i]).toTensor();
    for (size_t d = 0; d < inputs_[i].symbols.size(); ++d)
      if (!inputs_[i].symbols[d].empty()) bindings[inputs_[i].symbols[d]] = t.size(static_cast<int64_t>(d));
  }
  std::vector<int64_t> syms;
  for (const auto& s : prog.symbols) syms.push_back(bindings.count(s) ? bindings[s] : 0);
  auto eval_sizes = [&](const std::vector<lowering::Sym>& sizes) {
    std::vector<int64_t> out;
    for (const auto& s : sizes) {
      auto v = capture::sym_eval(s, bindings);
      if (!v) throw Error("kiln backend: size " + capture::sym_str(s) + " cannot be evaluated");
      out.push_back(*v);
    }
    return out;
  };
  std::vector<double> scalars;
  for (int pos : prog.scalar_input_positions) {
    const auto& iv = capture::lookup(env, region_inputs_[pos]);
    scalars.push_back(iv.isDouble() ? iv.toDouble() : iv.isInt() ? static_cast<double>(iv.toInt()) : iv.toBool());
  }
  // Buffers for inputs and constants.
  std::vector<at::Tensor> bufs(prog.comps.size());
  for (size_t c = 0; c < prog.comps.size(); ++c) {
    const Comp& comp = prog.comps[c];
    if (comp.kind == Comp::Kind::Input) {
      bufs[c] = to_layout(capture::lookup(env, region_inputs_[comp.input]).toTensor(), comp.layout);
    } else if (comp.kind == Comp::Kind::Constant) {
      if (!constant_value_[c]) throw Error("kiln backend: constant " + comp.name + " has no value");
      bufs[c] = constant_in_layout(c, capture::lookup(env, constant_value_[c]).toTensor());
    }
  }
  // Host ops: what lowering knew at compile time (ranks, dtypes, sizes and their arithmetic) bound
  // from it, sizes of computed tensors from their (symbolic) sizes, the device of a computed tensor
  // is the region's, the rest through the interpreter.
  c10::optional<c10::Device> region_device;
  for (size_t c = 0; c < prog.comps.size() && !region_device; ++c)
    if (bufs[c].defined()) region_device = bufs[c].device();
  for (size_t h = 0; h < lowered_.host_ops.size(); ++h) {
    const torch::jit::Node* n = graph_nodes_[static_cast<size_t>(lowered_.host_ops[h])];
    if (!n) continue;
    const auto& known = host_known_[h];
    if (!known.empty()) {
      for (size_t i = 0; i < known.size(); ++i) {
        const torch::jit::Value* o = n->output(i);
        const auto& hv = *known[i];
        auto v = capture::sym_eval(hv.value, bindings);
        if (!v) throw Error("kiln backend: host value " + capture::sym_str(hv.value) + " cannot be evaluated");
        env[o] = hv.is_bool ? c10::IValue(*v != 0) : c10::IValue(*v);
      }
      continue;
    }
    if (n->kind() == c10::prim::device && n->inputs().size() == 1 && region_device) {
      auto comp = comp_of_.find(n->input(0));
      if (comp != comp_of_.end() && !bufs[comp->second].defined()) {
        env[n->output()] = c10::IValue(*region_device);
        continue;
      }
    }
    if (n->kind() == c10::aten::size && n->inputs().size() >= 1) {
      auto comp = comp_of_.find(n->input(0));
      if (comp != comp_of_.end() && !bufs[comp->second].defined()) {
        auto sizes = eval_sizes(prog.comps[comp->second].sizes);
        if (n->inputs().size() == 1) {
          env[n->output()] = c10::IValue(sizes);
        } else {
          int64_t d = capture::lookup(env, n->input(1)).toInt();
          if (d < 0) d += static_cast<int64_t>(sizes.size());
          env[n->output()] = c10::IValue(sizes.at(d));
        }
        continue;
      }
    }
    // A host value lowering could not know whose input does not exist here (an output of a branch
    // capture decided, like nn.MultiheadAttention's why_not_fast_path, or a tensor not computed
    // yet): only conditions capture already decided read it. It stays unset; a step that needs it
    // anyway fails there, naming the value.
    bool inputs_exist = true;
    for (const auto* in : n->inputs())
      inputs_exist = inputs_exist && (env.count(in) || in->node()->kind() == c10::prim::Constant);
    if (!inputs_exist) continue;
    auto outs = interp.exec_node(n, env);
    for (size_t i = 0; i < n->outputs().size() && i < outs.size(); ++i) env[n->output(i)] = outs[i];
  }
  // Buffers the kernels write, on the device the inputs live on.
  c10::Device device(c10::kCPU);
  for (size_t c = 0; c < prog.comps.size(); ++c)
    if (bufs[c].defined()) {
      device = bufs[c].device();
      break;
    }
  // The memory plan: a kernel's buffers are made just before the step that first writes them and
  // given back after their last reader, into their slot, whose next buffer takes the memory over
  // (a region output outlives the region). A reused buffer is poisoned like a fresh one, so a wrong
  // reuse shows up as NaN in kiln check.
  std::vector<void*> ptrs(prog.comps.size(), nullptr);
  auto refresh = [&](size_t c) { ptrs[c] = bufs[c].defined() ? bufs[c].data_ptr() : nullptr; };
  for (size_t c = 0; c < prog.comps.size(); ++c) refresh(c);
  std::vector<at::Tensor> free_slot(static_cast<size_t>(plan_.slots));
  // A view extern calls read as another computation's buffer permuted (fusion::FusedProgram::buffer_views): made with
  // that buffer, dropped with it.
  auto make_views = [&](int c) {
    for (int v : views_of_[static_cast<size_t>(c)]) {
      const Comp& view = prog.comps[static_cast<size_t>(v)];
      at::Tensor t = bufs[static_cast<size_t>(c)].permute(fused_.buffer_views.at(v).dims);
      const auto& fixed = fixed_[static_cast<size_t>(v)];
      const std::vector<int64_t> sizes = fixed ? fixed->sizes : eval_sizes(view.sizes);
      const std::vector<int64_t> strides = fixed ? fixed->strides : layout_strides(sizes, view.layout);
      if (t.sizes() != at::IntArrayRef(sizes) || t.strides() != at::IntArrayRef(strides))
        throw Error("kiln backend: view " + view.name + " of " + prog.comps[static_cast<size_t>(c)].name + "'s buffer has sizes " +
                    c10::str(t.sizes()) + " and strides " + c10::str(t.strides()) + ", its layout needs " +
                    c10::str(at::IntArrayRef(sizes)) + " and " + c10::str(at::IntArrayRef(strides)));
      bufs[static_cast<size_t>(v)] = std::move(t);
      refresh(static_cast<size_t>(v));
    }
  };
  auto make_own_buffer = [&](int c) {
    const Comp& comp = prog.comps[static_cast<size_t>(c)];
    if (!fused_.realized[static_cast<size_t>(c)] || (comp.kind != Comp::Kind::Pointwise && comp.kind != Comp::Kind::Reduction) ||
        fusion::view_source(fused_, c) >= 0)
      return;  // an extern's result comes from the extern; a view of a buffer comes with that buffer
    auto st = comp.dtype == ir::DType::Unknown ? at::kFloat : capture::to_scalar_type(comp.dtype);
    const auto& fixed = fixed_[static_cast<size_t>(c)];
    FixedShape evaluated;
    if (!fixed) {
      evaluated.sizes = eval_sizes(comp.sizes);
      evaluated.strides = layout_strides(evaluated.sizes, comp.layout);
    }
    const std::vector<int64_t>& sizes = fixed ? fixed->sizes : evaluated.sizes;
    const std::vector<int64_t>& strides = fixed ? fixed->strides : evaluated.strides;
    const auto* planned = this->planned(c);
    at::Tensor t;
    if (planned && planned->in_place_of >= 0) {
      // Written over the buffer it reads, which dies in this kernel: only when nothing else holds it.
      // A row kernel's stage that folds the rows (fusion::row_stage) takes it viewed in its own sizes.
      const at::Tensor& r = bufs[static_cast<size_t>(planned->in_place_of)];
      const bool same = r.defined() && r.sizes() == at::IntArrayRef(sizes) && r.strides() == at::IntArrayRef(strides);
      bool viewed = r.defined() && !same && r.is_contiguous();
      int64_t elements = 1;
      for (size_t d = sizes.size(); d-- > 0;) {  // row-major strides, and as many elements as r
        viewed = viewed && (sizes[d] == 1 || strides[d] == elements);
        elements *= sizes[d];
      }
      viewed = viewed && elements == r.numel();
      if ((same || viewed) && r.scalar_type() == st && r.storage().use_count() == 1 && r.use_count() == 1) {
        bufs[static_cast<size_t>(c)] = same ? r : r.view(sizes);
        refresh(static_cast<size_t>(c));
        relabel_memory(r.storage().data(), "buffer", &comp.name);
        return;
      }
    }
    if (planned && planned->slot >= 0) {
      at::Tensor& spare = free_slot[static_cast<size_t>(planned->slot)];
      if (spare.defined() && spare.scalar_type() == st && spare.sizes() == at::IntArrayRef(sizes) &&
          spare.strides() == at::IntArrayRef(strides)) {
        t = std::move(spare);
        relabel_memory(t.storage().data(), "buffer", &comp.name);
      }
      spare = at::Tensor();
    }
    if (!t.defined()) {
      MemoryOwner owner("buffer", &comp.name);  // the graph node whose value it holds
      t = empty_buffer(sizes, strides, st, device);
    }
    if (poison_ || probe) {
      if (st == at::kBool) t.fill_(true);
      else if (at::isIntegralType(st, false)) t.fill_(int64_t(0x5a5a5a5a));
      else t.fill_(NAN);
    }
    bufs[static_cast<size_t>(c)] = std::move(t);
    refresh(static_cast<size_t>(c));
  };
  auto make_buffer = [&](int c) {
    make_own_buffer(c);
    if (bufs[static_cast<size_t>(c)].defined()) make_views(c);
  };
  auto give_back = [&](int c) {
    for (int v : views_of_[static_cast<size_t>(c)]) {
      bufs[static_cast<size_t>(v)] = at::Tensor();
      refresh(static_cast<size_t>(v));
    }
    at::Tensor t = std::move(bufs[static_cast<size_t>(c)]);
    bufs[static_cast<size_t>(c)] = at::Tensor();
    refresh(static_cast<size_t>(c));
    const auto* planned = this->planned(c);
    // Only memory nothing else holds (no view of it, no env entry, not an input) is handed on.
    if (planned && planned->handed_on && t.defined() && t.use_count() == 1 && t.storage().use_count() == 1)
      free_slot[static_cast<size_t>(planned->slot)] = std::move(t);
  };
  for (size_t c = 0; c < prog.comps.size(); ++c) {
    // Without a plan entry (never written by a step, as in a region of one extern): made up front.
    if (!planned(static_cast<int>(c))) make_buffer(static_cast<int>(c));
  }
  std::vector<bool> made(prog.comps.size(), false);
  auto make_for_step = [&](size_t s) {
    if (s >= plan_.alloc_before.size()) return;
    for (int c : plan_.alloc_before[s])
      if (!made[static_cast<size_t>(c)]) {
        made[static_cast<size_t>(c)] = true;
        make_buffer(c);
      }
  };
  const bool direct_on = direct_externs_enabled();
  const bool lt_on = direct_on && lt_gemms_enabled();
  size_t skip = SIZE_MAX;  // a kernel step an extern's call already computed (a fused GEMM epilogue)
  for (size_t s = 0; s < fused_.steps.size(); ++s) {
    const auto& step = fused_.steps[s];
    make_for_step(s);
    if (s == skip) {
      for (int c : plan_.free_after[s]) give_back(c);
      continue;
    }
    if (probe) probe->before_step(s, bufs);
    if (step.kind == fusion::Step::Kind::Kernel) {
      const auto& name = fused_.kernels[step.index].name;
      profile::Span span("kernel", name, compile_id_, name);
      kernels_[step.index](ptrs.data(), scalars.data(), syms.data());
      if (probe) probe->after_step(s, bufs);
      for (int c : plan_.free_after[s]) give_back(c);
      continue;
    }
    const Comp& comp = prog.comps[step.index];
    const torch::jit::Node* n = graph_nodes_.at(comp.ir_node);
    if (!n) throw Error("kiln backend: extern " + comp.name + " has no TorchScript node");
    // A prepared call reads its buffers itself (direct_extern.h); unless a tuner's hook may take the step.
    const auto& direct = direct_[step.index];
    const bool by_direct = direct && direct_on && (comp.drop_bias || !extern_hook_ || probe);
    // Otherwise the extern's arguments: computed tensors from their buffers; lists of tensors (cat, stack)
    // built from their elements' buffers, as the list node itself never ran.
    std::vector<const torch::jit::Value*> bound;
    at::Tensor out;
    {
      profile::Span span("extern", comp.target, compile_id_);
      MemoryOwner owner("extern", &comp.name);  // its result and workspace belong to its node
      std::optional<CudnnBenchmarkScope> benchmark;
      if (cudnn_benchmark_ && lowering::is_conv2d_target(comp.target)) benchmark.emplace(true);
      // An attention chain has no TorchScript node of its own to interpret (its node is the chain's last product).
      if (comp.target == lowering::kAttentionTarget) out = call_attention(comp, bufs);
      else if (by_direct) out = call_direct_extern(*direct, bufs, lt_on);
      if (!out.defined()) {
        for (const auto* v : n->inputs()) bind_value(v, bufs, interp, env, &bound);
        if (comp.drop_bias && comp.bias_operand == 0) {  // addmm(bias, a, b): its readers add the bias (lowering/linear_bias.h)
          out = at::mm(capture::lookup(env, n->input(1)).toTensor(), capture::lookup(env, n->input(2)).toTensor());
        } else if (comp.drop_bias && comp.target == "aten::conv2d") {  // conv2d(x, w, bias, ...): likewise
          out = conv2d_without_bias(n, env);
        } else if (comp.drop_bias) {  // linear(x, w, bias): likewise
          out = at::linear(capture::lookup(env, n->input(0)).toTensor(), capture::lookup(env, n->input(1)).toTensor());
        } else {
          bool hooked = false;
          if (extern_hook_ && !probe) {
            ExternContext cx;
            cx.ptrs = ptrs.data();
            cx.scalars = scalars.data();
            cx.syms = syms.data();
            cx.bufs = &bufs;
            if (s + 1 < fused_.steps.size() && fused_.steps[s + 1].kind == fusion::Step::Kind::Kernel) {
              cx.next_kernel = fused_.steps[s + 1].index;
              make_for_step(s + 1);  // the hook may launch it (a GEMM epilogue): its buffers must exist
              cx.launch_next = [&, k = cx.next_kernel] {
                profile::Span kspan("kernel", fused_.kernels[k].name, compile_id_, fused_.kernels[k].name);
                kernels_[k](ptrs.data(), scalars.data(), syms.data());
              };
            }
            hooked = extern_hook_(step.index, n, env, interp, out, cx);
            if (cx.next_kernel_done) skip = s + 1;
          }
          // Declined by the hook (not one of its GEMMs): the prepared call when there is one.
          if (!hooked && direct && direct_on && !by_direct) out = call_direct_extern(*direct, bufs, lt_on);
          if (!hooked && !out.defined()) out = interp.exec_node(n, env).at(0).toTensor();
        }
      }
      // Into the region's layout inside the call's span: the copy's kernel is this node's work
      // (profiles attribute it to the node and its module, not to nothing).
      out = to_layout(out, comp.layout);
    }
    const auto& fixed = fixed_[step.index];
    std::vector<int64_t> evaluated;
    if (!fixed) evaluated = eval_sizes(comp.sizes);
    const std::vector<int64_t>& expect = fixed ? fixed->sizes : evaluated;
    if (out.sizes() != at::IntArrayRef(expect))
      throw Error("kiln backend: " + comp.target + " returned sizes " + c10::str(out.sizes()) + ", lowering expected " +
                  c10::str(at::IntArrayRef(expect)));
    bufs[step.index] = out;
    refresh(step.index);
    // env outlives the region: the arguments bound for this extern would keep their buffers alive.
    for (const auto* v : bound) env.erase(v);
    if (probe) probe->after_step(s, bufs);
    for (int c : plan_.free_after[s]) give_back(c);
  }
  for (const auto* v : region_outputs_) {
    auto name = name_of_.find(v);
    if (name == name_of_.end()) throw Error("kiln backend: region output has no name");
    auto t = comp_of_.find(v);
    if (t != comp_of_.end() && bufs[t->second].defined()) {
      env[v] = bufs[t->second];
      continue;
    }
    const auto k = v->node()->kind();
    if (k != c10::prim::TupleConstruct && k != c10::prim::ListConstruct)
      throw Error("kiln backend: region output " + name->second + " was not computed");
    bind_value(v, bufs, interp, env);  // a tuple or list of computed tensors
  }
}

}  // namespace kiln::runtime
