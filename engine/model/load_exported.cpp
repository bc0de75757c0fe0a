// The .pt2 reader; see load_exported.h.
#include "engine/model/load_exported.h"

#include <zip.h>

#include <cstring>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/runtime/operator.h>

#include "engine/base/error.h"
#include "engine/model/model_impl.h"
#include "engine/model/torch_compat.h"
#include "engine/model/zip_directory.h"

namespace kiln::model {

namespace {

using nlohmann::json;
using torch::jit::Value;

struct ZipCloser {
  void operator()(zip_t* z) const { zip_discard(z); }
};
using Zip = std::unique_ptr<zip_t, ZipCloser>;

Zip open_zip(const std::string& path) {
  int error = 0;
  return Zip(zip_open(path.c_str(), ZIP_RDONLY, &error));
}

// The bytes of one entry (sizes were bounded by verify_zip_archive before).
std::string read_entry(zip_t* z, const std::string& path, const std::string& name) {
  zip_stat_t st;
  zip_stat_init(&st);
  if (zip_stat(z, name.c_str(), 0, &st) != 0 || !(st.valid & ZIP_STAT_SIZE))
    throw Error(path + ": the exported program has no entry " + name);
  std::string out(static_cast<size_t>(st.size), '\0');
  zip_file_t* f = zip_fopen(z, name.c_str(), 0);
  if (!f) throw Error(path + ": cannot open entry " + name);
  const zip_int64_t got = out.empty() ? 0 : zip_fread(f, out.data(), out.size());
  zip_fclose(f);
  if (got != static_cast<zip_int64_t>(out.size())) throw Error(path + ": cannot read entry " + name);
  return out;
}

// "<archive>/models/<name>.json" → "<archive>/" ("" when the program sits at the root).
std::optional<std::string> program_prefix(const std::vector<std::string>& names) {
  for (const auto& n : names) {
    auto at = n.find("models/");
    if (at == std::string::npos || n.size() < 5 || n.compare(n.size() - 5, 5, ".json") != 0) continue;
    if (n.find('/', at + 7) != std::string::npos) continue;
    if (at != 0 && n[at - 1] != '/') continue;
    return n.substr(0, at);
  }
  return std::nullopt;
}

// torch/_export/serde/schema.py's ScalarType numbering → LibTorch's.
c10::ScalarType scalar_type(int code, const std::string& path) {
  switch (code) {
    case 1: return at::kByte;
    case 2: return at::kChar;
    case 3: return at::kShort;
    case 4: return at::kInt;
    case 5: return at::kLong;
    case 6: return at::kHalf;
    case 7: return at::kFloat;
    case 8: return at::kDouble;
    case 12: return at::kBool;
    case 13: return at::kBFloat16;
    default: throw Error(path + ": tensor dtype code " + std::to_string(code) + " of the export schema is not read by Kiln");
  }
}

int64_t as_int(const json& v, const std::string& path, const std::string& what) {
  if (v.is_object() && v.contains("as_int") && v["as_int"].is_number_integer()) return v["as_int"].get<int64_t>();
  if (v.is_object() && v.contains("as_expr") && v["as_expr"].contains("hint") && v["as_expr"]["hint"].contains("as_int"))
    return v["as_expr"]["hint"]["as_int"].get<int64_t>();
  throw Error(path + ": " + what + " is not an integer");
}

// The tensors of one weights/constants config: state name → tensor.
// The one member of a tagged union ({"as_tensor": {...}}): its key, and its value (a reference into `j`).
std::pair<std::string, const json&> tagged(const json& j, const std::string& path) {
  if (!j.is_object() || j.size() != 1) throw Error(path + ": expected an object with one member, found " + j.dump().substr(0, 80));
  auto it = j.begin();
  return {it.key(), it.value()};
}

void load_tensors(zip_t* z, const std::string& path, const std::string& dir, std::map<std::string, at::Tensor>& out) {
  const std::string config_name = dir + (dir.find("constants") != std::string::npos ? "model_constants_config.json"
                                                                                  : "model_weights_config.json");
  zip_stat_t st;
  if (zip_stat(z, config_name.c_str(), 0, &st) != 0) return;  // no weights of this kind
  json config = json::parse(read_entry(z, path, config_name));
  if (!config.contains("config") || !config["config"].is_object()) return;
  for (const auto& [name, entry] : config["config"].items()) {
    if (entry.value("use_pickle", false))
      throw Error(path + ": weight " + name + " is stored pickled; Kiln reads raw tensor bytes only");
    const auto& meta = entry.at("tensor_meta");
    std::vector<int64_t> sizes, strides;
    for (const auto& s : meta.at("sizes")) sizes.push_back(as_int(s, path, "a size of " + name));
    for (const auto& s : meta.at("strides")) strides.push_back(as_int(s, path, "a stride of " + name));
    const auto dtype = scalar_type(meta.at("dtype").get<int>(), path);
    std::string bytes = read_entry(z, path, dir + entry.at("path_name").get<std::string>());
    // The stored bytes cover the tensor's storage from its offset: the largest reachable element.
    int64_t extent = 1;
    bool empty = false;
    for (size_t d = 0; d < sizes.size(); ++d) {
      if (sizes[d] == 0) empty = true;
      extent += (sizes[d] - 1) * (d < strides.size() ? strides[d] : 0);
    }
    const int64_t elem = static_cast<int64_t>(c10::elementSize(dtype));
    const int64_t offset = meta.contains("storage_offset") ? as_int(meta["storage_offset"], path, "offset") : 0;
    at::Tensor t;
    if (empty) {
      t = at::empty(sizes, at::TensorOptions().dtype(dtype));
    } else {
      if (static_cast<int64_t>(bytes.size()) < (offset + extent) * elem)
        throw Error(path + ": weight " + name + " has " + std::to_string(bytes.size()) + " bytes, its shape needs " +
                    std::to_string((offset + extent) * elem));
      at::Tensor storage = at::empty({static_cast<int64_t>(bytes.size()) / elem}, at::TensorOptions().dtype(dtype));
      std::memcpy(storage.data_ptr(), bytes.data(), static_cast<size_t>(storage.numel() * elem));
      t = storage.as_strided(sizes, strides, offset).clone(at::MemoryFormat::Contiguous);
    }
    out[name] = t;
  }
}

// A name TorchScript accepts as an attribute or a value name.
std::string identifier(const std::string& s) {
  std::string out;
  for (char c : s) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "v_" + out;
  return out;
}

struct GraphBuilder {
  const std::string& path;
  torch::jit::Graph& g;
  std::map<std::string, Value*> values;

  Value* named(const std::string& name) {
    auto it = values.find(name);
    if (it == values.end()) throw Error(path + ": the exported graph uses %" + name + " before it is made");
    return it->second;
  }

  Value* constant(const c10::IValue& v) { return g.insertConstant(v); }

  Value* list_of(const std::vector<Value*>& items, const c10::TypePtr& element) {
    return g.insertNode(g.createList(element, items))->output();
  }

  // One argument of the serialized form ({"as_tensor": {...}}, {"as_int": 3}, ...) as a graph value.
  Value* argument(const json& arg, const c10::Argument& formal, const std::string& op) {
    if (!arg.is_object() || arg.size() != 1) throw Error(path + ": " + op + ": an argument is not one tagged value");
    const auto& [kind, v] = tagged(arg, path);
    if (kind == "as_tensor") return named(v.at("name").get<std::string>());
    if (kind == "as_none") return constant(c10::IValue());
    if (kind == "as_int") return constant(v.get<int64_t>());
    if (kind == "as_float") return constant(v.get<double>());
    if (kind == "as_bool") return constant(v.get<bool>());
    if (kind == "as_string") return constant(v.get<std::string>());
    if (kind == "as_ints") return constant(v.get<std::vector<int64_t>>());
    if (kind == "as_floats") return constant(v.get<std::vector<double>>());
    if (kind == "as_bools") {
      c10::List<bool> b;
      for (const auto& x : v) b.push_back(x.get<bool>());
      return constant(b);
    }
    if (kind == "as_scalar_type") return constant(static_cast<int64_t>(scalar_type(v.get<int>(), path)));
    if (kind == "as_device") {
      std::string type = v.at("type").get<std::string>();
      if (v.contains("index") && v["index"].is_number_integer()) type += ":" + std::to_string(v["index"].get<int>());
      return constant(c10::Device(type));
    }
    if (kind == "as_layout") return constant(static_cast<int64_t>(c10::kStrided));
    if (kind == "as_memory_format") {
      // The export schema: 1 contiguous, 2 channels-last, 3 channels-last-3d, 4 preserve.
      const int code = v.get<int>();
      auto f = code == 2 ? c10::MemoryFormat::ChannelsLast : code == 3 ? c10::MemoryFormat::ChannelsLast3d
               : code == 4 ? c10::MemoryFormat::Preserve : c10::MemoryFormat::Contiguous;
      return constant(static_cast<int64_t>(f));
    }
    if (kind == "as_tensors" || kind == "as_optional_tensors") {
      std::vector<Value*> items;
      for (const auto& t : v) {
        if (t.contains("as_none")) items.push_back(constant(c10::IValue()));
        else items.push_back(named((t.contains("as_tensor") ? t["as_tensor"] : t).at("name").get<std::string>()));
      }
      return list_of(items, kind == "as_tensors" ? c10::TensorType::get()
                                                 : c10::TypePtr(c10::OptionalType::create(c10::TensorType::get())));
    }
    if (kind == "as_sym_int") {
      if (v.contains("as_int")) return constant(v["as_int"].get<int64_t>());
      if (v.contains("as_name")) return named(v["as_name"].get<std::string>());
    }
    if (kind == "as_sym_ints") {
      std::vector<Value*> items;
      for (const auto& s : v) items.push_back(s.contains("as_int") ? constant(s["as_int"].get<int64_t>())
                                                                   : named(s.at("as_name").get<std::string>()));
      return list_of(items, c10::IntType::get());
    }
    if (kind == "as_scalar_type" || kind == "as_sym_float" || kind == "as_sym_bool")
      throw Error(path + ": " + op + ": argument kind " + kind + " is not read by Kiln");
    (void)formal;
    throw Error(path + ": " + op + ": argument kind " + kind + " is not read by Kiln");
  }

  // "torch.ops.aten.softmax.int" → the JIT operator aten::softmax with overload "int".
  std::shared_ptr<torch::jit::Operator> op_for(const std::string& target) {
    std::string t = target;
    const std::string prefix = "torch.ops.";
    if (t.rfind(prefix, 0) == 0) t = t.substr(prefix.size());
    auto dot1 = t.find('.');
    auto dot2 = dot1 == std::string::npos ? std::string::npos : t.find('.', dot1 + 1);
    if (dot1 == std::string::npos) throw Error(path + ": operator " + target + " is not an ATen operator");
    const std::string ns = t.substr(0, dot1);
    const std::string name = t.substr(dot1 + 1, dot2 == std::string::npos ? std::string::npos : dot2 - dot1 - 1);
    std::string overload = dot2 == std::string::npos ? "" : t.substr(dot2 + 1);
    if (overload == "default") overload = "";
    for (const auto& op : torch::jit::getAllOperatorsFor(c10::Symbol::fromQualString(ns + "::" + name)))
      if (op->schema().overload_name() == overload) return op;
    throw Error(path + ": operator " + ns + "::" + name + (overload.empty() ? "" : "." + overload) +
                " is not known to this LibTorch (" + compat::torch_version() +
                "): the program was exported by a newer PyTorch");
  }

  // The node's Python stack (metadata.stack_trace, outermost first, "File \"p\", line N, in f")
  // as TorchScript records a traced stack (innermost first, "p(N): f"), and its module path
  // (metadata.nn_module_stack, "key,path,type;..." outermost first) as a scope named
  // "kiln_export.<path>": capture reads both as it does for TorchScript models.
  void annotate(torch::jit::Node* call, const json& n) {
    if (!n.contains("metadata") || !n["metadata"].is_object()) return;
    const auto& meta = n["metadata"];
    if (meta.contains("stack_trace") && meta["stack_trace"].is_string()) {
      static const std::regex frame(R"re(^\s*File "(.*)", line (\d+), in (\S+)\s*$)re");
      std::vector<std::string> frames;
      std::istringstream in(meta["stack_trace"].get<std::string>());
      for (std::string line; std::getline(in, line);) {
        std::smatch m;
        if (std::regex_match(line, m, frame)) frames.push_back(m[1].str() + "(" + m[2].str() + "): " + m[3].str());
      }
      std::string text;
      for (auto it = frames.rbegin(); it != frames.rend(); ++it) text += (text.empty() ? "" : "\n") + *it;
      if (!text.empty()) {
        auto source = std::make_shared<torch::jit::Source>(text);
        call->setSourceRange(torch::jit::SourceRange(source, 0, text.size()));
      }
    }
    if (meta.contains("nn_module_stack") && meta["nn_module_stack"].is_string()) {
      std::string innermost;
      std::istringstream in(meta["nn_module_stack"].get<std::string>());
      for (std::string entry; std::getline(in, entry, ';');) {
        auto a = entry.find(',');
        auto b = a == std::string::npos ? std::string::npos : entry.find(',', a + 1);
        if (b != std::string::npos && b > a + 1) innermost = entry.substr(a + 1, b - a - 1);
      }
      if (!innermost.empty()) {
        auto root = c10::make_intrusive<torch::jit::Scope>();
        call->setScope(root->push(c10::Symbol::scope("kiln_export." + innermost)));
      }
    }
  }

  void node(const json& n) {
    std::string target = n.at("target").get<std::string>();
    // An exported program is functional, so no one observes whether a view aliases its input: aten.view (and
    // _unsafe_view) are read as aten.reshape. The exporter chose view where its own trace's strides allowed it;
    // the kernels of another device need not give the same strides (CUDA's attention returns other strides than
    // the CPU trace's, and a view after it fails there).
    const bool view_as_reshape = target == "torch.ops.aten.view.default" || target == "torch.ops.aten._unsafe_view.default";
    if (view_as_reshape) target = "torch.ops.aten.reshape.default";
    auto op = op_for(target);
    const auto& schema = op->schema();
    std::map<std::string, const json*> given;
    for (const auto& in : n.at("inputs"))
      given[view_as_reshape && in.at("name") == "size" ? std::string("shape") : in.at("name").get<std::string>()] = &in.at("arg");
    std::vector<Value*> inputs;
    for (const auto& formal : schema.arguments()) {
      auto it = given.find(formal.name());
      if (it != given.end()) inputs.push_back(argument(*it->second, formal, schema.name()));
      else if (formal.default_value()) inputs.push_back(constant(*formal.default_value()));
      else throw Error(path + ": " + schema.name() + " is called without its argument '" + formal.name() + "'");
    }
    const auto& returns = schema.returns();
    torch::jit::Node* call = g.insertNode(g.create(c10::Symbol::fromQualString(schema.name()), inputs, returns.size()));
    for (size_t i = 0; i < returns.size(); ++i) call->output(i)->setType(returns[i].type());
    annotate(call, n);
    const auto& outs = n.at("outputs");
    for (size_t i = 0; i < outs.size() && i < returns.size(); ++i) {
      const auto& [kind, v] = tagged(outs[i], path);
      if (kind == "as_tensor" || kind == "as_sym_int") {
        const std::string name = (kind == "as_tensor" ? v.at("name") : v.at("as_name")).get<std::string>();
        call->output(i)->setDebugName(identifier(name));
        values[name] = call->output(i);
      } else if (kind == "as_tensors") {
        // A list result (split): unpacked into its named tensors.
        auto* unpack = g.insertNode(g.create(c10::prim::ListUnpack, {call->output(i)}, v.size()));
        for (size_t k = 0; k < v.size(); ++k) {
          unpack->output(k)->setType(c10::TensorType::get());
          const std::string name = v[k].at("name").get<std::string>();
          unpack->output(k)->setDebugName(identifier(name));
          values[name] = unpack->output(k);
        }
      } else if (kind != "as_none") {
        throw Error(path + ": " + schema.name() + ": result kind " + kind + " is not read by Kiln");
      }
    }
  }
};

}  // namespace

bool is_exported_program(const std::string& path) {
  auto names = zip_entry_names(path);
  return names && program_prefix(*names).has_value();
}

// The dims of a user input, from the graph's tensor_values: {"as_int": N} or {"as_expr": {"expr_str":
// "Symbol('s77', positive=True, integer=True)", ...}}; a symbol's range from range_constraints.
std::vector<ExportedDim> input_dims(const json& program, const json& tensor_meta, int input) {
  static const std::regex symbol(R"re(^Symbol\('(\w+)'.*\)$)re");
  std::vector<ExportedDim> out;
  if (!tensor_meta.is_object() || !tensor_meta.contains("sizes") || !tensor_meta["sizes"].is_array()) return out;
  const json* ranges = program.contains("range_constraints") && program["range_constraints"].is_object()
                           ? &program["range_constraints"] : nullptr;
  int d = 0;
  for (const auto& size : tensor_meta["sizes"]) {
    ExportedDim e;
    e.input = input;
    e.dim = d++;
    if (size.contains("as_int") && size["as_int"].is_number_integer()) {
      e.size = size["as_int"].get<int64_t>();
    } else if (size.contains("as_expr") && size["as_expr"].is_object()) {
      const std::string expr = size["as_expr"].value("expr_str", "");
      std::smatch m;
      e.symbol = std::regex_match(expr, m, symbol) ? m[1].str() : expr;
      if (ranges && ranges->contains(e.symbol) && (*ranges)[e.symbol].is_object()) {
        const auto& r = (*ranges)[e.symbol];
        if (r.contains("min_val") && r["min_val"].is_number_integer()) e.min = r["min_val"].get<int64_t>();
        if (r.contains("max_val") && r["max_val"].is_number_integer()) e.max = r["max_val"].get<int64_t>();
      }
    }
    out.push_back(e);
  }
  return out;
}

torch::jit::Module load_exported_program(const std::string& path, std::vector<std::vector<ExportedDim>>* inputs) {
  auto problem = verify_zip_archive(path);
  if (!problem.empty()) throw Error(path + ": " + problem);
  auto names = zip_entry_names(path);
  auto prefix = names ? program_prefix(*names) : std::nullopt;
  if (!prefix) throw Error(path + ": not an exported program (no models/*.json in the archive)");
  Zip z = open_zip(path);
  if (!z) throw Error(path + ": cannot open the archive");
  std::string model_json;
  for (const auto& n : *names)
    if (n.rfind(*prefix + "models/", 0) == 0 && n.size() > 5 && n.compare(n.size() - 5, 5, ".json") == 0) model_json = n;
  json program;
  try {
    program = json::parse(read_entry(z.get(), path, model_json));
  } catch (const json::exception& e) {
    throw Error(path + ": " + model_json + " is not valid JSON (" + e.what() + ")");
  }
  try {
    const int major = program.at("schema_version").at("major").get<int>();
    if (major != 8)
      throw Error(path + ": export schema version " + std::to_string(major) + "." +
                  std::to_string(program["schema_version"].value("minor", 0)) +
                  " is not read by Kiln (it reads version 8, torch 2.5 to 2.11)");
    std::map<std::string, at::Tensor> state;
    load_tensors(z.get(), path, *prefix + "data/weights/", state);
    load_tensors(z.get(), path, *prefix + "data/constants/", state);

    torch::jit::Module module(c10::QualifiedName("__torch__.kiln.ExportedProgram"));
    auto g = std::make_shared<torch::jit::Graph>();
    Value* self = g->addInput("self");
    self->setType(module.type());
    GraphBuilder b{path, *g, {}};
    std::set<std::string> attrs;
    const auto& gm = program.at("graph_module");
    for (const auto& spec : gm.at("signature").at("input_specs")) {
      const auto& [kind, v] = tagged(spec, path);
      if (kind == "user_input") {
        const auto& arg = v.at("arg");
        if (!arg.contains("as_tensor")) throw Error(path + ": a user input that is not a tensor is not read by Kiln");
        const std::string name = arg["as_tensor"].at("name").get<std::string>();
        if (inputs) {
          const auto& values = gm.at("graph").value("tensor_values", json::object());
          inputs->push_back(input_dims(program, values.contains(name) ? values[name] : json(), static_cast<int>(inputs->size())));
        }
        Value* in = g->addInput(identifier(name));
        in->setType(c10::TensorType::get());
        b.values[name] = in;
        continue;
      }
      const std::string arg_name = v.at("arg").at("name").get<std::string>();
      const std::string state_name = kind == "parameter" ? v.at("parameter_name").get<std::string>()
                                     : kind == "buffer" ? v.at("buffer_name").get<std::string>()
                                     : kind == "tensor_constant" ? v.at("tensor_constant_name").get<std::string>()
                                                                 : "";
      if (state_name.empty()) throw Error(path + ": input kind " + kind + " is not read by Kiln");
      auto t = state.find(state_name);
      if (t == state.end()) throw Error(path + ": the archive holds no tensor for " + state_name);
      std::string attr = identifier(state_name);
      while (!attrs.insert(attr).second) attr += "_";
      if (kind == "parameter") module.register_parameter(attr, t->second, /*is_buffer=*/false);
      else module.register_buffer(attr, t->second);
      b.values[arg_name] = g->insertGetAttr(self, attr);
      b.values[arg_name]->setType(c10::TensorType::get());
    }
    for (const auto& n : gm.at("graph").at("nodes")) b.node(n);
    std::vector<Value*> outputs;
    for (const auto& spec : gm.at("signature").at("output_specs")) {
      const auto& [kind, v] = tagged(spec, path);
      if (kind != "user_output") throw Error(path + ": output kind " + kind + " (a mutation) is not read by Kiln");
      const auto& arg = v.at("arg");
      if (!arg.contains("as_tensor")) throw Error(path + ": an output that is not a tensor is not read by Kiln");
      outputs.push_back(b.named(arg["as_tensor"].at("name").get<std::string>()));
    }
    if (outputs.size() == 1) g->registerOutput(outputs[0]);
    else g->registerOutput(g->insertNode(g->createTuple(outputs))->output());
    auto* fn = module._ivalue()->compilation_unit()->create_function(
        c10::QualifiedName(*module.type()->name(), "forward"), g);
    module.type()->addMethod(fn);
    return module;
  } catch (const json::exception& e) {
    throw Error(path + ": " + model_json + " does not have the layout of an exported program (" + e.what() + ")");
  } catch (const c10::Error& e) {
    throw Error(path + ": LibTorch refused the exported program: " + std::string(e.what_without_backtrace()).substr(0, 300));
  }
}

}  // namespace kiln::model
