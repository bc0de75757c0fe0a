// Where a TorchScript node came from: the user's Python line, the op's own line and
// the nn.Module path, recovered from the archive's debug info.
//
// node_origin(node, sources)
//   pre:  node belongs to a graph loaded from an archive (debug info may be missing).
//   post: loc is the innermost frame outside torch's own library and TorchScript's builtins
//         ("<string>") (the user's line: for `self.l1(x)` that is the call site, not linear.py);
//         op_loc the innermost frame;
//         module_path the dotted instance names of the inlined call stack ("layer1.0.conv1").
//         Unknown parts stay empty; nothing throws.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/model/torch_compat.h"

namespace kiln::capture {

// Finds source line text for files whose archive debug info lacks it (traced models
// record "file(line): fn" instead of the code). Looks for the file's basename in `dirs`.
class SourceFiles {
 public:
  explicit SourceFiles(std::vector<std::string> dirs = {}) : dirs_(std::move(dirs)) {}
  std::string line_text(const std::string& file, int line);  // "" when not found

 private:
  std::vector<std::string> dirs_;
  std::map<std::string, std::vector<std::string>> cache_;
};

struct NodeOrigin {
  ir::SourceLoc loc;
  ir::SourceLoc op_loc;
  std::string module_path;
};

NodeOrigin node_origin(const torch::jit::Node* node, SourceFiles& sources);

// True for files inside PyTorch itself (torch/nn/modules/linear.py, ...).
bool is_library_file(const std::string& file);

}  // namespace kiln::capture
