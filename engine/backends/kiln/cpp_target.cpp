#include "engine/backends/kiln/cpp_target.h"

#include "engine/codegen/cpp/cpp_compiler.h"
#include "engine/codegen/cpp/emit_cpp.h"

namespace kiln::backends {

namespace {

class CppTarget : public pipeline::Target {
 public:
  const char* language() const override { return "cpp"; }
  const pipeline::Stage& kernels_stage() const override { return pipeline::kKernelsCpp; }
  std::string emit(const fusion::FusedProgram& fused, const std::vector<codegen::NodeNote>& notes,
                   std::vector<codegen::KernelSpan>& spans) override;
  pipeline::Loaded compile(const std::string& source, const fusion::FusedProgram& fused, const ir::Graph& graph) override;
  void describe(const fusion::FusedKernel& kernel, records::Kernel& record) const override;
};

std::string CppTarget::emit(const fusion::FusedProgram& fused, const std::vector<codegen::NodeNote>& notes,
                            std::vector<codegen::KernelSpan>& spans) {
  return codegen::emit_cpp(fused, notes, &spans);
}

pipeline::Loaded CppTarget::compile(const std::string& source, const fusion::FusedProgram& fused, const ir::Graph&) {
  pipeline::Loaded out;
  std::vector<std::string> names;
  for (const auto& k : fused.kernels) names.push_back(k.name);
  if (names.empty()) return out;
  auto before = codegen::cpp_compiler_stats().invocations;
  auto lib = codegen::compile_cpp(source, names);
  out.compiler_invocations = codegen::cpp_compiler_stats().invocations - before;
  out.cache_hit = lib.cache_hit;
  out.load_ms = lib.load_ms;
  if (out.compiler_invocations > 0) out.unit_ms.push_back(lib.compile_ms);
  for (const auto& n : names) out.calls.push_back(lib.kernels.at(n));
  out.keep = lib.handle;
  return out;
}

void CppTarget::describe(const fusion::FusedKernel& kernel, records::Kernel& record) const {
  record.launch_config = kernel.kind == fusion::FusedKernel::Kind::Row ? "row kernel, OpenMP over rows"
                                                                       : "pointwise, OpenMP over the outer loop";
}

}  // namespace

std::unique_ptr<pipeline::Target> make_cpp_target() { return std::make_unique<CppTarget>(); }

}  // namespace kiln::backends
