// Kernel resources read from a CUBIN's ELF (engine/codegen/cuda/cubin_info.h): the same registers and stack frames
// ptxas reports for the same compile (codegen::kernel_resources, itself checked on known kernels first), for kernels with and without local memory; and bytes that are not a whole
// CUBIN (cut anywhere, corrupted headers, another file) give what could be read, never a crash.
#include "engine/codegen/cuda/cubin_info.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "engine/codegen/cuda/gemm_template.h"
#include "engine/codegen/cuda/nvrtc_compiler.h"

using namespace kiln;

namespace {

const char* kKernels =
    "extern \"C\" __global__ void kiln_shared(float* x) {\n"
    "  __shared__ float t[256];\n  t[threadIdx.x] = x[threadIdx.x];\n  __syncthreads();\n"
    "  x[threadIdx.x] = t[255 - threadIdx.x];\n}\n"
    "extern \"C\" __global__ void kiln_local(float* x, const int* at) {\n"
    "  float a[64];\n  for (int j = 0; j < 64; ++j) a[j] = x[j * blockDim.x + threadIdx.x];\n"
    "  for (int j = 0; j < 64; ++j) a[at[j] & 63] += 1.0f;\n"
    "  float s = 0.0f;\n  for (int j = 0; j < 64; ++j) s += a[j] * j;\n  x[threadIdx.x] = s;\n}\n";

// The CUBIN's reading against ptxas's report of the same source, function by function.
void expect_same_as_ptxas(const std::string& source) {
  const auto cubin = codegen::compile_cuda(source, "sm_90").cubin;
  const auto from_image = codegen::cubin_resources(cubin);
  const auto from_ptxas = codegen::kernel_resources(source, "sm_90");
  ASSERT_EQ(from_image.size(), from_ptxas.size());
  for (const auto& p : from_ptxas) {
    auto i = std::find_if(from_image.begin(), from_image.end(),
                          [&](const codegen::KernelResources& r) { return r.function == p.function; });
    ASSERT_NE(i, from_image.end()) << p.function;
    EXPECT_EQ(i->registers, p.registers) << p.function;
    EXPECT_EQ(i->stack_bytes, p.stack_bytes) << p.function;
  }
}

}  // namespace

TEST(CubinInfo, RegistersAndStackFramesAreWhatPtxasReported) {
  // ptxas's report itself (codegen::kernel_resources): the local array is a 256-byte frame, the shared array 1 KiB.
  const auto reported = codegen::kernel_resources(kKernels, "sm_90");
  ASSERT_EQ(reported.size(), 2u);
  for (const auto& k : reported) {
    EXPECT_GT(k.registers, 0) << k.function;
    EXPECT_EQ(k.stack_bytes, k.function == "kiln_local" ? 256 : 0) << k.function;
    EXPECT_EQ(k.shared_bytes, k.function == "kiln_shared" ? 1024 : 0) << k.function;
  }
  expect_same_as_ptxas(kKernels);
  const auto r = codegen::cubin_resources(codegen::compile_cuda(kKernels, "sm_90").cubin);
  ASSERT_EQ(r.size(), 2u);
  for (const auto& k : r) EXPECT_EQ(k.stack_bytes > 0, k.function == "kiln_local") << k.function;
  // Twenty GEMM kernels of one image: every one found, the same as ptxas's.
  expect_same_as_ptxas(codegen::half_gemm_source(codegen::half_gemm_candidates(true)));
}

TEST(CubinInfo, BytesThatAreNotAWholeCubinGiveWhatCouldBeRead) {
  const std::string cubin = codegen::compile_cuda(kKernels, "sm_90").cubin;
  const auto whole = codegen::cubin_resources(cubin);
  ASSERT_EQ(whole.size(), 2u);
  EXPECT_TRUE(codegen::cubin_resources("").empty());
  EXPECT_TRUE(codegen::cubin_resources("not an ELF file at all, but long enough to hold a header of sixty-four bytes").empty());
  // Cut anywhere: a subset of the whole answer, each entry as in the whole.
  for (size_t n = 0; n < cubin.size(); n += 97) {
    for (const auto& k : codegen::cubin_resources(cubin.substr(0, n))) {
      auto w = std::find_if(whole.begin(), whole.end(), [&](const codegen::KernelResources& x) { return x.function == k.function; });
      ASSERT_NE(w, whole.end()) << "cut at " << n << ": " << k.function;
    }
  }
  // Header fields pointing anywhere: section table offset, entry size and count, the names' section.
  for (size_t field : {0x28u, 0x3au, 0x3cu, 0x3eu}) {
    for (uint64_t v : {uint64_t{0}, uint64_t{1}, uint64_t{0xffff}, uint64_t{0x7fffffffffffffff}, ~uint64_t{0}}) {
      std::string bad = cubin;
      const size_t width = field == 0x28 ? 8 : 2;
      std::memcpy(&bad[field], &v, width);
      (void)codegen::cubin_resources(bad);
    }
  }
  // Random bytes over every section header in turn, and random flips anywhere: no crash.
  std::mt19937_64 rng(std::random_device{}());
  for (int round = 0; round < 400; ++round) {
    std::string bad = cubin;
    for (int f = 0; f < 8; ++f) bad[rng() % bad.size()] = static_cast<char>(rng());
    (void)codegen::cubin_resources(bad);
  }
  uint64_t shoff = 0;
  std::memcpy(&shoff, cubin.data() + 0x28, 8);
  for (uint64_t off = shoff; off + 8 <= cubin.size(); off += 8) {
    std::string bad = cubin;
    const uint64_t v = rng();
    std::memcpy(&bad[off], &v, 8);
    (void)codegen::cubin_resources(bad);
  }
}
