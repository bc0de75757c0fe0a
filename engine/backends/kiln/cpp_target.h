// The C++ target: kernels emitted as one translation unit, built by the host C++ compiler into a
// shared library (cached on disk by source hash) and loaded with dlopen.
#pragma once

#include "engine/pipeline/pipeline.h"

namespace kiln::backends {

class CppTarget : public pipeline::Target {
 public:
  const char* language() const override { return "cpp"; }
  const pipeline::Stage& kernels_stage() const override { return pipeline::kKernelsCpp; }
  std::string emit(const fusion::FusedProgram& fused, const std::vector<codegen::NodeNote>& notes,
                   std::vector<codegen::KernelSpan>& spans) override;
  pipeline::Loaded compile(const std::string& source, const fusion::FusedProgram& fused) override;
  void describe(const fusion::FusedKernel& kernel, records::Kernel& record) const override;
};

}  // namespace kiln::backends
