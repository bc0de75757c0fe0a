#include "engine/capture/specialize.h"

#include <sstream>
#include <unordered_map>

#include "engine/base/error.h"
#include "engine/capture/torch_meta.h"

namespace kiln::capture {

using torch::jit::Block;
using torch::jit::Node;
using torch::jit::Value;
using Env = Interpreter::Env;

namespace {

std::string dtype_text(c10::ScalarType t) { return ir::dtype_name(to_ir_dtype(t)); }

std::string join_ints(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s;
}

struct Specializer {
  const RegionStatic& region;
  Interpreter& interp;
  Env& env;
  SourceFiles& sources;
  int unroll_limit;
  SpecializedRegion out;
  std::unordered_map<const Value*, Sym> int_sym;
  std::unordered_map<const Value*, std::vector<Sym>> list_sym;
  std::unordered_map<const Value*, std::vector<Sym>> tensor_dims;
  std::map<std::string, int64_t> sym_values;
  std::set<int64_t> static_input_sizes;
  int executed = 0;

  // ---- symbolic tracking -------------------------------------------------
  std::vector<Sym> dims_of(const Value* v) {
    auto it = tensor_dims.find(v);
    if (it != tensor_dims.end()) return it->second;
    std::vector<Sym> dims;
    const auto& iv = lookup(env, v);
    if (!iv.isTensor() || !iv.toTensor().defined()) return dims;
    for (auto s : iv.toTensor().sizes()) {
      Sym d = sym_const(s);
      // Display and size queries on intermediates: a size equal to exactly one symbol's value,
      // and to no static input size, is taken to be that symbol.
      if (!static_input_sizes.count(s)) {
        int matches = 0;
        std::string name;
        for (const auto& [sym, val] : sym_values)
          if (val == s) {
            ++matches;
            name = sym;
          }
        if (matches == 1) d = sym_var(name);
      }
      dims.push_back(d);
    }
    return dims;
  }

  Sym int_of(const Value* v) {
    auto it = int_sym.find(v);
    if (it != int_sym.end()) return it->second;
    const auto& iv = lookup(env, v);
    if (iv.isInt()) return sym_const(iv.toInt());
    if (iv.isBool()) return sym_const(iv.toBool() ? 1 : 0);
    // A 0-d integer constant tensor (traced `n + 1`) takes part in size arithmetic as its number.
    if (iv.isTensor() && v->node()->kind() == c10::prim::Constant) {
      const auto& t = iv.toTensor();
      if (t.dim() == 0 && at::isIntegralType(t.scalar_type(), true)) return sym_const(t.item<int64_t>());
    }
    return nullptr;
  }

  void propagate(const Node* n) {
    const std::string k = n->kind().toQualString();
    auto symbolic = [](const Sym& s) { return s && !sym_is_const(s); };
    if (k == "aten::size" && n->inputs().size() == 1) {
      auto d = dims_of(n->input(0));
      bool any = false;
      for (auto& s : d) any |= symbolic(s);
      if (any) list_sym[n->output()] = d;
    } else if (k == "aten::size" && n->inputs().size() == 2) {
      auto d = dims_of(n->input(0));
      auto idx = lookup(env, n->input(1)).toInt();
      if (idx < 0) idx += static_cast<int64_t>(d.size());
      if (idx >= 0 && idx < static_cast<int64_t>(d.size()) && symbolic(d[idx])) int_sym[n->output()] = d[idx];
    } else if (k == "prim::ListUnpack") {
      auto it = list_sym.find(n->input(0));
      if (it != list_sym.end())
        for (size_t i = 0; i < n->outputs().size() && i < it->second.size(); ++i)
          if (symbolic(it->second[i])) int_sym[n->output(i)] = it->second[i];
    } else if (k == "aten::__getitem__" && list_sym.count(n->input(0))) {
      auto& l = list_sym[n->input(0)];
      auto idx = lookup(env, n->input(1)).toInt();
      if (idx < 0) idx += static_cast<int64_t>(l.size());
      if (idx >= 0 && idx < static_cast<int64_t>(l.size()) && symbolic(l[idx])) int_sym[n->output()] = l[idx];
    } else if (k == "prim::NumToTensor" || k == "aten::Int" || k == "aten::ScalarImplicit" || k == "aten::IntImplicit") {
      // Traced size arithmetic: a size becomes a 0-d tensor and back; it stays the same symbol.
      auto a = int_of(n->input(0));
      if (symbolic(a)) int_sym[n->output()] = a;
    } else if (n->inputs().size() >= 2 && n->outputs().size() == 1 && n->output()->type()->kind() == c10::TypeKind::TensorType &&
               (int_sym.count(n->input(0)) || int_sym.count(n->input(1)))) {
      // Arithmetic on 0-d size tensors (traced `seq_len + past`): symbolic as on ints.
      static const std::map<std::string, SymNode::Op> tops = {
          {"aten::add", SymNode::Op::Add}, {"aten::sub", SymNode::Op::Sub}, {"aten::mul", SymNode::Op::Mul},
          {"aten::floor_divide", SymNode::Op::FloorDiv}, {"aten::remainder", SymNode::Op::Mod}};
      auto op = tops.find(k);
      const auto& out_iv = lookup(env, n->output());
      bool alpha_one = n->inputs().size() < 3 || (int_of(n->input(2)) && sym_is_const(int_of(n->input(2))) &&
                                                  int_of(n->input(2))->value == 1);
      if (op != tops.end() && alpha_one && out_iv.isTensor() && out_iv.toTensor().dim() == 0) {
        auto a = int_of(n->input(0)), b = int_of(n->input(1));
        if (a && b && (symbolic(a) || symbolic(b))) int_sym[n->output()] = sym_binary(op->second, a, b);
      }
    } else if (k == "aten::__not__") {
      auto a = int_of(n->input(0));
      if (symbolic(a)) int_sym[n->output()] = sym_not(a);
    } else if (n->inputs().size() == 2 && n->outputs().size() == 1 &&
               n->input(0)->type()->kind() == c10::TypeKind::IntType &&
               n->input(1)->type()->kind() == c10::TypeKind::IntType) {
      static const std::map<std::string, SymNode::Op> ops = {
          {"aten::add", SymNode::Op::Add},       {"aten::sub", SymNode::Op::Sub}, {"aten::mul", SymNode::Op::Mul},
          {"aten::floordiv", SymNode::Op::FloorDiv}, {"aten::remainder", SymNode::Op::Mod},
          {"aten::gt", SymNode::Op::Gt},         {"aten::ge", SymNode::Op::Ge},   {"aten::lt", SymNode::Op::Lt},
          {"aten::le", SymNode::Op::Le},         {"aten::eq", SymNode::Op::Eq},   {"aten::ne", SymNode::Op::Ne}};
      auto op = ops.find(k);
      if (op != ops.end()) {
        auto a = int_of(n->input(0)), b = int_of(n->input(1));
        if (a && b && (symbolic(a) || symbolic(b))) int_sym[n->output()] = sym_binary(op->second, a, b);
      }
    }
  }

  // ---- execution ---------------------------------------------------------
  void bind(const Value* dst, const Value* src) {
    env[dst] = lookup(env, src);
    if (int_sym.count(src)) int_sym[dst] = int_sym[src];
    if (tensor_dims.count(src)) tensor_dims[dst] = tensor_dims[src];
    Instr i;
    i.kind = Instr::Kind::Bind;
    i.dst = dst;
    i.src = src;
    out.trace.push_back(i);
  }

  void decide(const Node* n, const Value* cond_value, bool taken) {
    Sym c = int_of(cond_value);
    auto o = node_origin(n, sources);
    DecisionGuard g;
    g.expected = taken;
    std::string where = o.loc.known() ? o.loc.str() : std::string(n->kind().toQualString());
    if (c && !sym_is_const(c)) {
      g.expr = c;
      g.text = taken ? sym_str(c) : "not (" + sym_str(c) + ")";
    } else {
      // A branch inside TorchScript's own builtins (a "<string>" frame) has no line of the user's.
      const bool internal = o.loc.known() && is_library_file(o.loc.file);
      g.text = (internal ? "branch inside a TorchScript builtin" : "branch at " + where) +
               (o.loc.text.empty() ? "" : " (" + o.loc.text + ")") + " took the " + (taken ? "true" : "false") +
               " side; implied by the size guards";
    }
    out.decisions.push_back(g);
  }

  void run_nodes(const Block* b) {
    for (const Node* n : b->nodes()) run_node(n);
  }

  void run_node(const Node* n) {
    if (n->kind() == c10::prim::Constant) return;
    if (++executed > unroll_limit * 8)
      throw UnrollLimitError("unroll limit reached: region " + std::to_string(region.index) + " grew past " +
                             std::to_string(unroll_limit * 8) + " nodes while unrolling a loop");
    if (n->kind() == c10::prim::If) {
      bool cond = lookup(env, n->input(0)).toBool();
      decide(n, n->input(0), cond);
      const Block* blk = n->blocks()[cond ? 0 : 1];
      run_nodes(blk);
      for (size_t i = 0; i < n->outputs().size(); ++i) bind(n->output(i), blk->outputs()[i]);
      return;
    }
    if (n->kind() == c10::prim::Loop) {
      int64_t trip = lookup(env, n->input(0)).toInt();
      bool cond = lookup(env, n->input(1)).toBool();
      const Block* body = n->blocks()[0];
      size_t carried = n->inputs().size() - 2;
      std::vector<const Value*> cur;
      for (size_t i = 0; i < carried; ++i) cur.push_back(n->input(i + 2));
      for (int64_t it = 0; it < trip && cond; ++it) {
        env[body->inputs()[0]] = c10::IValue(it);
        Instr bi;
        bi.kind = Instr::Kind::BindInt;
        bi.dst = body->inputs()[0];
        bi.value = it;
        out.trace.push_back(bi);
        for (size_t i = 0; i < carried; ++i) bind(body->inputs()[i + 1], cur[i]);
        run_nodes(body);
        cond = lookup(env, body->outputs()[0]).toBool();
        for (size_t i = 0; i < carried; ++i) cur[i] = body->outputs()[i + 1];
        // Re-bind through fresh copies so the next iteration's block params read the right values.
        std::vector<c10::IValue> vals;
        for (size_t i = 0; i < carried; ++i) vals.push_back(lookup(env, cur[i]));
      }
      for (size_t i = 0; i < carried; ++i) bind(n->output(i), cur[i]);
      return;
    }
    auto outs = interp.exec_node(n, env);
    for (size_t i = 0; i < n->outputs().size() && i < outs.size(); ++i) env[n->output(i)] = outs[i];
    Instr e;
    e.kind = Instr::Kind::Exec;
    e.node = n;
    out.trace.push_back(e);
    propagate(n);
  }

  // ---- guards --------------------------------------------------------------
  void build_input_guards(const DynamicDims& dynamic, const std::set<const Value*>& data_values) {
    int next_sym = 0;
    std::set<std::string> used_names;
    for (size_t i = 0; i < region.inputs.size(); ++i) {
      const Value* v = region.inputs[i];
      const auto& iv = lookup(env, v);
      InputGuardSpec g;
      g.name = user_name(v);
      if (!used_names.insert(g.name).second) g.name += "_" + std::to_string(i);
      if (iv.isTensor() && !iv.toTensor().defined()) {
        g.undefined_tensor = true;
      } else if (iv.isTensor()) {
        const auto& t = iv.toTensor();
        g.tensor = true;
        g.dtype = t.scalar_type();
        g.device = t.device();
        g.requires_grad = t.requires_grad();
        std::vector<Sym> dims;
        bool any_sym = false;
        for (int64_t d = 0; d < t.dim(); ++d) {
          int64_t size = t.size(d);
          if (dynamic.count({static_cast<int>(i), static_cast<int>(d)}) && size >= 2) {
            std::string s = "s" + std::to_string(next_sym++);
            g.sizes.push_back(std::nullopt);
            g.symbols.push_back(s);
            sym_values[s] = size;
            dims.push_back(sym_var(s));
            out.info.guards.symbols.push_back(s + " = " + g.name + ".size(" + std::to_string(d) + ")");
            any_sym = true;
          } else {
            g.sizes.push_back(size);
            g.symbols.push_back("");
            static_input_sizes.insert(size);
            dims.push_back(sym_const(size));
          }
        }
        if (any_sym) {
          g.contiguous = t.is_contiguous();
          tensor_dims[v] = dims;
        } else {
          g.strides = t.strides().vec();
        }
      } else if (!data_values.count(v) && (iv.isInt() || iv.isDouble() || iv.isBool())) {
        g.value = iv;
      }
      out.inputs.push_back(std::move(g));
    }
  }

  void describe_guards() {
    auto& gs = out.info.guards.guards;
    using K = Guard::Kind;
    for (const auto& g : out.inputs) {
      if (g.undefined_tensor) {
        gs.push_back(Guard{K::ScalarValue, g.name, -1, "None", g.name + " is None (an undefined tensor)"});
        continue;
      }
      if (!g.tensor) {
        if (g.value) {
          std::ostringstream os;
          os << *g.value;
          gs.push_back(Guard{K::ScalarValue, g.name, -1, os.str(), g.name + " == " + os.str()});
        }
        continue;
      }
      gs.push_back(Guard{K::Dtype, g.name, -1, dtype_text(g.dtype), g.name + ".dtype == " + dtype_text(g.dtype)});
      gs.push_back(Guard{K::Device, g.name, -1, g.device.str(), g.name + ".device == " + g.device.str()});
      gs.push_back(Guard{K::Rank, g.name, -1, std::to_string(g.sizes.size()),
                         g.name + ".dim() == " + std::to_string(g.sizes.size())});
      for (size_t d = 0; d < g.sizes.size(); ++d) {
        std::string at = g.name + ".size(" + std::to_string(d) + ")";
        if (g.sizes[d]) gs.push_back(Guard{K::Size, g.name, static_cast<int>(d), std::to_string(*g.sizes[d]),
                                           at + " == " + std::to_string(*g.sizes[d])});
        else gs.push_back(Guard{K::SymbolicSize, g.name, static_cast<int>(d), g.symbols[d],
                                at + " == " + g.symbols[d] + " (" + g.symbols[d] + " >= 2)"});
      }
      if (g.strides.empty()) gs.push_back(Guard{K::Contiguous, g.name, -1, g.contiguous ? "True" : "False",
                                                g.name + ".is_contiguous() == " + (g.contiguous ? "True" : "False")});
      else gs.push_back(Guard{K::Stride, g.name, -1, join_ints(g.strides), g.name + ".stride() == (" + join_ints(g.strides) + ")"});
      gs.push_back(Guard{K::RequiresGrad, g.name, -1, g.requires_grad ? "True" : "False",
                         g.name + ".requires_grad == " + (g.requires_grad ? "True" : "False")});
    }
    for (const auto& d : out.decisions) gs.push_back(Guard{K::Decision, "", -1, d.expected ? "True" : "False", d.text});
    gs.push_back(Guard{K::GradMode, "", -1, out.grad_mode ? "True" : "False",
                       std::string("torch.is_grad_enabled() == ") + (out.grad_mode ? "True" : "False")});
  }

  // ---- the region's graph -----------------------------------------------------
  ir::Graph build_graph() {
    ir::Graph g;
    g.name = "region " + std::to_string(region.index);
    std::unordered_map<const Value*, std::string> names;
    std::set<std::string> used;
    auto unique = [&](std::string base) {
      for (auto& c : base)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) c = '_';
      if (base.empty() || std::isdigit(static_cast<unsigned char>(base[0]))) base = "v" + base;
      if (used.insert(base).second) return base;
      for (int i = 1;; ++i)
        if (used.insert(base + "_" + std::to_string(i)).second) return base + "_" + std::to_string(i);
    };
    auto meta = [&](const Value* v) {
      ir::ValueMeta m = meta_of(lookup(env, v));
      if (m.is_tensor()) {
        auto d = dims_of(v);
        for (size_t i = 0; i < d.size() && i < m.shape.size(); ++i)
          if (d[i] && d[i]->op == SymNode::Op::Var) m.shape[i] = ir::Dim::symbolic(d[i]->name);
      }
      return m;
    };
    for (size_t i = 0; i < region.inputs.size(); ++i) {
      ir::Node p;
      p.op = ir::NodeOp::Placeholder;
      std::string n = unique(out.inputs[i].name);
      names[region.inputs[i]] = n;
      p.target = n;
      p.outputs.push_back({n, meta(region.inputs[i])});
      g.nodes.push_back(std::move(p));
    }
    std::vector<ir::Node> attrs, body;
    std::vector<const Node*> body_nodes;
    // An If output bound to a constant its taken branch returns (nn.MultiheadAttention's
    // why_not_fast_path = ""): it reads as that constant.
    std::map<const Value*, const Value*> bound_to;
    auto arg = [&](const Value* v) -> ir::Arg {
      int hops = 0;
      for (auto b = bound_to.find(v); b != bound_to.end() && hops < 64; b = bound_to.find(v), ++hops) v = b->second;
      auto it = names.find(v);
      if (it != names.end()) return ir::Arg::value(it->second);
      if (v->node()->kind() == c10::prim::Constant) {
        auto iv = torch::jit::toIValue(v);
        // A 0-d constant tensor (a traced Python number: `x + 1`, `torch.tensor(0.0)`) reads as the number
        // itself, as Dynamo's graphs show it; the op's result dtype is the same either way.
        if (iv && iv->isTensor() && iv->toTensor().defined() && iv->toTensor().dim() == 0) {
          const auto& t = iv->toTensor();
          if (t.scalar_type() == at::kBool) return ir::Arg::boolean(t.item<bool>());
          if (at::isIntegralType(t.scalar_type(), false)) return ir::Arg::integer(t.item<int64_t>());
          if (at::isFloatingType(t.scalar_type())) return ir::Arg::real(t.item<double>());
        }
        if (iv && iv->isTensor()) {
          std::string dbg = v->debugName();
          if (dbg.rfind("self.", 0) == 0) dbg = dbg.substr(5);
          ir::Node a;
          a.op = ir::NodeOp::GetAttr;
          a.target = dbg;
          std::string n = unique(dbg);
          a.outputs.push_back({n, meta_of(*iv)});
          attrs.push_back(std::move(a));
          names[v] = n;
          return ir::Arg::value(n);
        }
        if (iv) {
          if (auto lit = literal_arg(*iv)) return *lit;
          std::ostringstream os;
          os << *iv;
          return ir::Arg::other(os.str());
        }
      }
      return ir::Arg::value(v->debugName());
    };
    for (const auto& ins : out.trace) {
      if (ins.kind == Instr::Kind::Bind) {
        auto it = names.find(ins.src);
        if (it != names.end()) names[ins.dst] = it->second;
        else if (ins.dst != ins.src) bound_to[ins.dst] = ins.src;
        continue;
      }
      if (ins.kind == Instr::Kind::BindInt) continue;
      const Node* n = ins.node;
      ir::Node node;
      node.target = n->kind().toQualString();
      for (const Value* v : n->inputs()) node.args.push_back(arg(v));
      auto o = node_origin(n, sources);
      node.loc = o.loc;
      node.op_loc = o.op_loc;
      node.module_path = o.module_path;
      for (const Value* v : n->outputs()) {
        std::string nm = unique(v->hasDebugName() && !std::isdigit(static_cast<unsigned char>(v->debugName()[0]))
                                    ? user_name(v)
                                    : std::string(n->kind().toUnqualString()));
        names[v] = nm;
        node.outputs.push_back({nm, meta(v)});
      }
      body.push_back(std::move(node));
      body_nodes.push_back(n);
    }
    out.graph_nodes.assign(g.nodes.size() + attrs.size(), nullptr);
    for (auto& a : attrs) g.nodes.push_back(std::move(a));
    for (auto& b : body) g.nodes.push_back(std::move(b));
    out.graph_nodes.insert(out.graph_nodes.end(), body_nodes.begin(), body_nodes.end());
    out.graph_nodes.push_back(nullptr);  // output
    ir::Node outn;
    outn.op = ir::NodeOp::Output;
    outn.target = "output";
    for (const Value* v : region.outputs) outn.args.push_back(arg(v));
    g.nodes.push_back(std::move(outn));
    out.name_of = names;
    return g;
  }
};

}  // namespace

SpecializedRegion specialize_region(const RegionStatic& region, const DynamicDims& dynamic, Interpreter& interp, Env& env,
                                 int unroll_limit, SourceFiles& sources, const std::set<const Value*>& data_values) {
  Specializer s{region, interp, env, sources, unroll_limit, {}, {}, {}, {}, {}, {}, 0};
  s.out.grad_mode = at::GradMode::is_enabled();
  s.build_input_guards(dynamic, data_values);
  for (const Node* n : region.nodes) s.run_node(n);
  s.describe_guards();
  s.out.info.graph = s.build_graph();
  return std::move(s.out);
}

void run_trace(const SpecializedRegion& entry, Interpreter& interp, Env& env) {
  for (const auto& ins : entry.trace) {
    switch (ins.kind) {
      case Instr::Kind::Exec: {
        auto outs = interp.exec_node(ins.node, env);
        for (size_t i = 0; i < ins.node->outputs().size() && i < outs.size(); ++i) env[ins.node->output(i)] = outs[i];
        break;
      }
      case Instr::Kind::Bind: env[ins.dst] = lookup(env, ins.src); break;
      case Instr::Kind::BindInt: env[ins.dst] = c10::IValue(ins.value); break;
    }
  }
}

}  // namespace kiln::capture
