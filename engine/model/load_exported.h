// torch.export programs (.pt2, torch.export.save) read in C++, without Python: the archive's
// models/*.json (the serialized ExportedProgram) and data/weights/ (raw tensor bytes described by
// model_weights_config.json), turned into a TorchScript module so that capture, lowering, the
// runtime and every command treat an exported program like any other model.
//
// is_exported_program(path)
//   post: true when the file is a zip archive holding a serialized ExportedProgram
//         (an entry ending in "/models/<name>.json"). Never throws on contents.
// load_exported_program(path)
//   post: a module whose parameters and buffers are the program's weights (names with '.' as '_'),
//         whose forward(self, <user inputs>) calls the program's ATen ops in order, each with its
//         arguments in its LibTorch schema's order (defaults filled), and returns the user outputs
//         (one tensor, or a tuple). *inputs (when given): per user input that is a tensor, its dims as
//         the program states them: a size, or a symbol with its range_constraints range.
//   error: kiln::Error naming the file and what is wrong: a schema version other than 8, an
//          operator LibTorch does not know (named with its overload), an argument kind Kiln does
//          not read, weights stored pickled, a weight whose bytes do not match its shape.
#pragma once

#include <string>
#include <vector>

#include <torch/script.h>

namespace kiln::model {

bool is_exported_program(const std::string& path);
struct ExportedDim;
torch::jit::Module load_exported_program(const std::string& path,
                                         std::vector<std::vector<ExportedDim>>* inputs = nullptr);

}  // namespace kiln::model
