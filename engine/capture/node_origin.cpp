#include "engine/capture/node_origin.h"

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <torch/csrc/jit/ir/scope.h>

namespace kiln::capture {

namespace fs = std::filesystem;

static std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

bool is_library_file(const std::string& file) {
  // TorchScript's own builtins (compiled from source strings: "<string>") are internal too.
  if (!file.empty() && file.front() == '<') return true;
  return file.find("/torch/jit/") != std::string::npos || file.find("/site-packages/torch/") != std::string::npos ||
         file.find("/dist-packages/torch/") != std::string::npos || file.rfind("torch/nn/", 0) == 0 ||
         file.find("/torch/nn/modules/") != std::string::npos || file.find("/torch/nn/functional") != std::string::npos;
}

std::string SourceFiles::line_text(const std::string& file, int line) {
  if (line <= 0 || file.empty()) return "";
  auto it = cache_.find(file);
  if (it == cache_.end()) {
    std::vector<std::string> lines;
    std::string base = fs::path(file).filename().string();
    std::vector<std::string> candidates{file};
    for (const auto& d : dirs_) candidates.push_back((fs::path(d) / base).string());
    for (const auto& c : candidates) {
      std::error_code ec;
      if (!fs::is_regular_file(c, ec)) continue;
      std::ifstream in(c);
      std::string l;
      while (std::getline(in, l)) lines.push_back(l);
      break;
    }
    it = cache_.emplace(file, std::move(lines)).first;
  }
  if (static_cast<size_t>(line) > it->second.size()) return "";
  return trim(it->second[line - 1]);
}

// Traced archives record the Python stack as text, innermost frame first:
// "/…/torch/nn/modules/linear.py(134): forward\n/…/sample_models.py(13): forward\n…".
static std::vector<ir::SourceLoc> traced_frames(const std::string& text, SourceFiles& sources) {
  static const std::regex frame(R"(^(.*)\((\d+)\): (\S+)$)");
  std::vector<ir::SourceLoc> frames;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    line = trim(line);
    if (!std::regex_match(line, m, frame)) return {};
    std::string file = m[1].str();
    if (file.find("torch/jit/_trace.py") != std::string::npos) break;  // the tracer itself: user code ended
    ir::SourceLoc loc;
    loc.file = file;
    loc.line = std::stoi(m[2].str());
    loc.text = sources.line_text(loc.file, loc.line);
    frames.push_back(std::move(loc));
  }
  return frames;
}

// The frames of one range in the archive's code, outermost first: one for scripted code,
// the recorded stack for traced code.
static std::vector<ir::SourceLoc> frames_of(const torch::jit::SourceRange& r, SourceFiles& sources) {
  auto orig = r.findSourceRangeThatGenerated();
  const torch::jit::SourceRange& range = orig ? *orig : r;
  auto src = range.source();
  if (!src) return {};
  if (range.end() > range.start() && range.end() <= src->size()) {
    auto traced = traced_frames(range.text().str(), sources);
    if (!traced.empty()) return {traced.rbegin(), traced.rend()};
  }
  auto flc = range.file_line_col();
  if (!flc || std::get<0>(*flc).empty()) return {};
  ir::SourceLoc loc;
  loc.file = std::get<0>(*flc);
  loc.line = static_cast<int>(std::get<1>(*flc));
  loc.col = static_cast<int>(std::get<2>(*flc)) + 1;
  if (range.start() <= src->size()) loc.text = trim(src->get_line(src->lineno_for_offset(range.start())).str());
  if (loc.text.empty()) loc.text = sources.line_text(loc.file, loc.line);
  return {loc};
}

NodeOrigin node_origin(const torch::jit::Node* node, SourceFiles& sources) {
  NodeOrigin o;
  std::vector<ir::SourceLoc> frames;  // outermost first
  if (auto cs = node->callstack()) {
    c10::ClassTypePtr parent;  // the module whose submodule the next call is
    for (const auto& entry : (*cs)->vec()) {
      const auto& info = std::get<torch::jit::kModuleInstanceInfo>(entry);
      if (info && !info->instance_name().empty() && info->instance_name() != "SELF") {
        std::string part = info->instance_name();
        // A container that is never called itself (nn.ModuleList, nn.ModuleDict) leaves no call stack
        // entry: "encoder.0" is encoder.layer.0, the path users (and Dynamo's parameter names) know.
        if (parent && !parent->hasAttribute(part)) {
          for (size_t i = 0; i < parent->numAttributes(); ++i) {
            auto holder = parent->getAttribute(i)->cast<c10::ClassType>();
            if (holder && holder->is_module() && holder->hasAttribute(part)) {
              part = parent->getAttributeName(i) + "." + part;
              break;
            }
          }
        }
        if (!o.module_path.empty()) o.module_path += ".";
        o.module_path += part;
      }
      if (info && info->class_type()) parent = info->class_type();
      for (auto& f : frames_of(std::get<1>(entry), sources)) frames.push_back(std::move(f));
    }
  }
  for (auto& f : frames_of(node->sourceRange(), sources)) frames.push_back(std::move(f));
  // A torch.export program's node carries its module path as a scope (model/load_exported.h).
  auto* mutable_node = const_cast<torch::jit::Node*>(node);  // Node::scope() is not const in LibTorch
  if (o.module_path.empty() && mutable_node->scope()) {
    const std::string scope = mutable_node->scope()->name().toUnqualString();
    const std::string tag = "kiln_export.";
    if (scope.rfind(tag, 0) == 0) o.module_path = scope.substr(tag.size());
  }
  if (!frames.empty()) o.op_loc = frames.back();
  for (auto it = frames.rbegin(); it != frames.rend(); ++it) {
    if (it->known() && !is_library_file(it->file)) {
      o.loc = *it;
      break;
    }
  }
  if (!o.loc.known()) o.loc = o.op_loc;
  return o;
}

}  // namespace kiln::capture
