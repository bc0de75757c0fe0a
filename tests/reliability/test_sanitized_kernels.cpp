// In a sanitized build (scripts/sanitize) the C++ kernels Kiln compiles at run time are instrumented
// too: an out-of-bounds read in a generated kernel, on a buffer LibTorch allocated, is reported by
// AddressSanitizer instead of passing silently. Skipped in plain builds.
#include <gtest/gtest.h>

#include "engine/codegen/cpp/cpp_compiler.h"
#include "engine/model/torch_compat.h"

using namespace kiln;

TEST(SanitizedKernels, KernelFlagsFollowTheBuild) {
#ifdef KILN_KERNEL_SANITIZE_FLAGS
  EXPECT_NE(codegen::cpp_flags().find("-fsanitize="), std::string::npos) << codegen::cpp_flags();
#else
  EXPECT_EQ(codegen::cpp_flags().find("-fsanitize="), std::string::npos) << codegen::cpp_flags();
#endif
}

TEST(SanitizedKernels, OutOfBoundsReadInAGeneratedKernelIsReported) {
#ifndef KILN_KERNEL_SANITIZE_FLAGS
  GTEST_SKIP() << "not a sanitized build (scripts/sanitize)";
#else
  const std::string source =
      "#include <cstdint>\n"
      "extern \"C\" void read_one_past(void* const* buf, const double*, const int64_t*) {\n"
      "  const float* in = static_cast<const float*>(buf[0]);\n"
      "  float* out = static_cast<float*>(buf[1]);\n"
      "  out[0] = in[16];  // one past the end of a 16-element buffer\n"
      "}\n";
  auto lib = codegen::compile_cpp(source, {"read_one_past"});
  auto in = at::ones({16}), out = at::zeros({1});
  void* bufs[] = {in.data_ptr(), out.data_ptr()};
  auto fn = lib.kernels.at("read_one_past");
  EXPECT_DEATH(fn(bufs, nullptr, nullptr), "heap-buffer-overflow");
#endif
}
