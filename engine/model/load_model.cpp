#include <filesystem>
#include <functional>
#include <map>
#include <fstream>
#include <optional>
#include <regex>
#include <set>

#include "engine/base/error.h"
#include "engine/model/load_exported.h"
#include "engine/model/zip_directory.h"
#include "engine/model/model_impl.h"

#include <torch/cuda.h>
#include <torch/csrc/jit/passes/freeze_module.h>
#include <torch/csrc/jit/passes/frozen_concat_linear.h>
#include <torch/csrc/jit/passes/remove_dropout.h>

namespace kiln::model {

namespace fs = std::filesystem;

const std::string& Model::path() const { return impl->path; }
const std::string& Model::device() const { return impl->device; }
bool Model::exported_program() const { return impl->exported_program; }
int64_t Model::parameter_count() const { return impl->parameter_count; }
int64_t Model::buffer_count() const { return impl->buffer_count; }

std::vector<std::string> Model::forward_arg_names() const {
  std::vector<std::string> names;
  const auto& schema = impl->frozen.get_method("forward").function().getSchema();
  for (size_t i = 1; i < schema.arguments().size(); ++i) names.push_back(schema.arguments()[i].name());
  return names;
}

std::string libtorch_version() { return compat::torch_version(); }

namespace {

std::string first_line(const std::string& s) {
  size_t start = s.find_first_not_of(" \n\t");
  if (start == std::string::npos) return "";
  size_t end = s.find('\n', start);
  return s.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

// Reads the first bytes of the file; throws the right message for files that cannot be archives.
void check_file(const std::string& path) {
  std::error_code ec;
  auto status = fs::status(path, ec);
  if (ec == std::errc::too_many_symbolic_link_levels)
    throw Error(path + ": a loop of symbolic links (it names itself), not a TorchScript archive");
  if (ec || !fs::exists(status)) throw Error(path + ": file not found");
  if (fs::is_directory(status)) throw Error(path + ": is a directory, not a TorchScript archive");
  // A FIFO or a device would block or never end: only regular files are read.
  if (!fs::is_regular_file(status)) throw Error(path + ": not a regular file (a pipe, socket or device), not a TorchScript archive");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot be read (permission denied or I/O error)");
  char magic[4] = {0, 0, 0, 0};
  in.read(magic, 4);
  auto got = in.gcount();
  if (got == 0) throw Error(path + ": file is empty, not a TorchScript archive");
  if (got < 4 || magic[0] != 'P' || magic[1] != 'K' || magic[2] != 3 || magic[3] != 4)
    throw Error(path + ": not a TorchScript archive (not a zip file; save the model with torch.jit.save)");
  // CRCs and declared sizes, which LibTorch's reader does not check.
  std::string problem = verify_zip_archive(path);
  if (!problem.empty()) throw Error(path + ": " + problem);
}

// A zip whose central directory lists no version record is refused here: LibTorch's reader
// would throw from its constructor and leak the zip reader it had allocated (LibTorch 1.13).
void check_torchscript_records(const std::string& path) {
  auto names = zip_entry_names(path);
  if (!names) return;
  const std::string record = "/version";  // "<archive>/version" or "<archive>/.data/version"
  for (const auto& n : *names)
    if (n.size() > record.size() && n.compare(n.size() - record.size(), record.size(), record) == 0) return;
  throw Error(path + ": a zip file but not a TorchScript archive (no version/code records; a state_dict saved with "
                     "torch.save? Save with torch.jit.save(torch.jit.script(model), path))");
}

[[noreturn]] void explain_load_failure(const std::string& path, const std::string& what) {
  static const std::regex unknown_op(R"(Unknown (?:builtin op|type|function|attribute)[^:]*: ([A-Za-z0-9_:.]+?)\.?\s*$)",
                                     std::regex::multiline);
  std::smatch m;
  if (std::regex_search(what, m, unknown_op)) {
    throw Error(path + ": uses operator " + m[1].str() + ", which LibTorch " + compat::torch_version() +
                " does not know (the model was saved by a newer PyTorch; re-export it without that op)");
  }
  if (what.find("failed finding central directory") != std::string::npos)
    throw Error(path + ": truncated or corrupt zip archive (its central directory is missing)");
  if (what.find("PytorchStreamReader failed") != std::string::npos) {
    auto colon = what.find("archive:");
    std::string detail = colon == std::string::npos ? first_line(what) : first_line(what.substr(colon + 8));
    throw Error(path + ": corrupt zip archive (" + detail + ")");
  }
  if (what.find("hasRecord(\"version\")") != std::string::npos || what.find("constants.pkl") != std::string::npos ||
      what.find("data.pkl") != std::string::npos)
    throw Error(path + ": a zip file but not a TorchScript archive (no version/code records; a state_dict saved with "
                       "torch.save? Save with torch.jit.save(torch.jit.script(model), path))");
  throw Error(path + ": LibTorch " + compat::torch_version() + " could not load it: " + first_line(what));
}

int64_t count_elements(const torch::jit::parameter_list& params) {
  int64_t n = 0;
  for (const auto& p : params) n += p.numel();
  return n;
}

int64_t count_elements(const torch::jit::buffer_list& bufs) {
  int64_t n = 0;
  for (const auto& b : bufs) n += b.numel();
  return n;
}

// A model traced on the CPU has the CPU baked into its graph (`device("cpu")` arguments of
// aten::to / arange / zeros, CPU tensor constants). Loaded onto a GPU, those would run on the CPU
// and mix devices; they are moved to the device the model was loaded onto, as a model traced there
// would read. Returns how many constants moved.
int retarget_device_constants(torch::jit::Graph& graph, const c10::Device& device) {
  int moved = 0;
  std::vector<torch::jit::Node*> constants;
  std::function<void(torch::jit::Block*)> walk = [&](torch::jit::Block* b) {
    for (auto* n : b->nodes()) {
      if (n->kind() == c10::prim::Constant) constants.push_back(n);
      for (auto* sub : n->blocks()) walk(sub);
    }
  };
  walk(graph.block());
  for (auto* n : constants) {
    auto iv = torch::jit::toIValue(n->output());
    if (!iv) continue;
    c10::IValue replacement;
    if (iv->isDevice() && iv->toDevice().is_cpu()) {
      replacement = c10::IValue(device);
    } else if (iv->isTensor() && iv->toTensor().defined() && iv->toTensor().dim() == 0 &&
               at::isIntegralType(iv->toTensor().scalar_type(), true) && !iv->toTensor().device().is_cpu()) {
      // A traced Python int (size arithmetic) stays a CPU scalar, as it was when traced: on the
      // GPU, reading it back (int()) would synchronize, and CUDA graph capture forbids that.
      replacement = c10::IValue(iv->toTensor().cpu());
    } else if (iv->isTensor() && iv->toTensor().defined() && iv->toTensor().device().is_cpu() &&
               iv->toTensor().dim() > 0) {
      replacement = c10::IValue(iv->toTensor().to(device));
    } else {
      continue;
    }
    torch::jit::WithInsertPoint guard(n);
    auto* v = graph.insertConstant(replacement);
    v->copyMetadata(n->output());
    n->output()->replaceAllUsesWith(v);
    ++moved;
  }
  for (auto* n : constants)
    if (!n->output()->hasUses()) n->destroy();
  return moved;
}

}  // namespace

std::string cuda_unavailable_reason() {
  if (!torch::cuda::is_available())
    return "no CUDA device available to LibTorch " + compat::torch_version() +
           (compat::kTorch2 ? "" : " (a CPU-only build)");
  return "";
}

namespace {

// torch::jit::freeze without the numerics-changing folds, step by step (the steps both LibTorch versions
// run): the module frozen, dropout removed, linears that share their input merged into one
// (FrozenConcatLinear). The merged linear is a new node with no call stack, so it would belong to no
// module and no line: it takes those of the first linear it replaces (q of q/k/v).
torch::jit::Module freeze_keeping_origins(const torch::jit::Module& m) {
  torch::jit::Module out = torch::jit::freeze_module(m);
  auto graph = out.get_method("forward").graph();
  torch::jit::removeDropout(graph);
  struct Origin {
    c10::optional<torch::jit::InlinedCallStackPtr> callstack;
    torch::jit::SourceRange range;
  };
  const auto linear = c10::Symbol::fromQualString("aten::linear");
  std::map<torch::jit::Value*, Origin> first_linear;  // by the input the linears share
  for (auto* n : graph->nodes())
    if (n->kind() == linear && !first_linear.count(n->input(0)))
      first_linear[n->input(0)] = Origin{n->callstack(), n->sourceRange()};
  torch::jit::FrozenConcatLinear(graph);
  for (auto* n : graph->nodes()) {
    if (n->kind() != linear || n->callstack()) continue;
    auto it = first_linear.find(n->input(0));
    if (it == first_linear.end() || !it->second.callstack) continue;
    n->setCallStack(*it->second.callstack);
    n->setSourceRange(it->second.range);
  }
  return out;
}

}  // namespace

Model load_model(const std::string& path, const std::string& device) {
  check_file(path);
  const bool exported = is_exported_program(path);
  if (!exported) check_torchscript_records(path);
  if (device.rfind("cuda", 0) == 0) {
    auto why = cuda_unavailable_reason();
    if (!why.empty()) throw Error(path + ": cannot load onto " + device + ": " + why);
  } else if (device != "cpu") {
    throw Error("device '" + device + "': use cpu or cuda");
  }
  auto impl = std::make_shared<LoadedModel>();
  impl->path = path;
  impl->device = device;
  impl->exported_program = exported;
  try {
    if (exported) {
      impl->module = load_exported_program(path, &impl->exported_inputs);
      impl->module.to(torch::Device(device));
    } else {
      impl->module = torch::jit::load(path, torch::Device(device));
    }
  } catch (const Error&) {
    throw;
  } catch (const c10::Error& e) {
    explain_load_failure(path, e.what_without_backtrace());
  } catch (const std::exception& e) {
    explain_load_failure(path, e.what());
  }
  bool has_forward = false;
  try {
    has_forward = impl->module.find_method("forward").has_value();
    if (has_forward) {
      impl->module.eval();
      impl->parameter_count = count_elements(impl->module.parameters(/*recurse=*/true));
      impl->buffer_count = count_elements(impl->module.buffers(/*recurse=*/true));
    }
  } catch (const c10::Error& e) {
    throw Error(path + ": LibTorch could not read the module: " + first_line(e.what_without_backtrace()));
  } catch (const std::exception& e) {
    throw Error(path + ": LibTorch could not read the module: " + first_line(e.what()));
  }
  if (!has_forward)
    throw Error(path + ": the module has no forward method (Kiln runs forward; export the model with one)");
  // A traced model's CPU constants follow it onto the GPU, in every method of every submodule, so
  // LibTorch's own eager run (the reference) and Kiln's capture read the same program.
  if (device != "cpu") {
    try {
      std::set<const torch::jit::Graph*> seen;
      for (const auto& sub : impl->module.modules())
        for (const auto& method : sub.get_methods()) {
          auto g = method.graph();
          if (seen.insert(g.get()).second) impl->retargeted_constants += retarget_device_constants(*g, torch::Device(device));
        }
    } catch (const std::exception& e) {
      throw Error(path + ": could not move the graph's CPU constants onto " + device + ": " + first_line(e.what()));
    }
  }
  try {
    impl->frozen = freeze_keeping_origins(impl->module);
    impl->graph = impl->frozen.get_method("forward").graph();
    if (device != "cpu") impl->retargeted_constants += retarget_device_constants(*impl->graph, torch::Device(device));
  } catch (const c10::Error& e) {
    throw Error(path + ": LibTorch could not freeze the module: " + first_line(e.what_without_backtrace()));
  } catch (const std::exception& e) {
    throw Error(path + ": LibTorch could not freeze the module: " + first_line(e.what()));
  }
  Model m;
  m.impl = std::move(impl);
  return m;
}

}  // namespace kiln::model
