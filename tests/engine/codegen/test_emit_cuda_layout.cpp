// CUDA code generation for channels-last convolution chains: kernels walk the channel innermost,
// move float4s along it, read per-channel parameters by channel, and compile with NVRTC.
#include <gtest/gtest.h>

#include "engine/codegen/cuda/emit_cuda.h"
#include "engine/codegen/cuda/nvrtc_compiler.h"
#include "engine/lowering/channels_last.h"
#include "engine/lowering/lower_graph.h"
#include "tests/support/compile_support.h"

using namespace kiln;

namespace {

fusion::FusedProgram channels_last_resnet(const char* input) {
  auto cm = test::compile_example("tiny_resnet.pt", input, "eager");
  auto regions = cm.rt->regions();
  auto lowered = lowering::lower_graph(regions.at(0).entries.at(0).graph);
  EXPECT_GT(lowering::choose_channels_last(lowered.program), 0);
  return fusion::schedule(lowered.program);
}

std::string kernel_text(const std::string& src, const std::string& name) {
  auto at = src.find("void " + name + "(");
  if (at == std::string::npos) return "";
  return src.substr(at, src.find("\n}\n", at) - at);
}

}  // namespace

TEST(EmitCudaLayout, ChannelsLastKernelsWalkTheChannelInnermostWithFloat4) {
  auto fused = channels_last_resnet("2x3x16x16");
  std::vector<codegen::CudaKernelInfo> info;
  auto src = codegen::emit_cuda(fused, {}, &info);
  auto k0 = kernel_text(src, "k0_relu");
  ASSERT_FALSE(k0.empty()) << src;
  // The flat index decomposes channel first (innermost), then column, row, batch.
  auto c = k0.find("const long long i1 = base % 16LL;"), w = k0.find("const long long i3 = q1 % 16LL;");
  EXPECT_TRUE(c != std::string::npos && w != std::string::npos && c < w) << k0;
  // The conv output and the kernel's own buffer move as float4 at `base`; the per-channel
  // batch-norm parameters are read by channel (lane added to the channel index).
  EXPECT_NE(k0.find("reinterpret_cast<const float4*>(b"), std::string::npos) << k0;
  EXPECT_NE(k0.find("(i1 + lane)"), std::string::npos) << k0;
  // Stores of the channels-last buffer go along the storage order: channel stride 1.
  for (const auto& k : info)
    if (k.name == "k0_relu") EXPECT_EQ(k.vector_width, 4);
  auto bin = codegen::compile_cuda(src, "sm_90");
  EXPECT_GT(bin.cubin.size(), 0u);
}

TEST(EmitCudaLayout, AutotuneVariantsKeepTheChannelsLastOrder) {
  auto fused = channels_last_resnet("1x3x8x8");
  auto src = codegen::emit_cuda(fused, {}, nullptr, /*variants=*/true);
  EXPECT_NE(src.find("k0_relu_w1"), std::string::npos);
  auto w1 = kernel_text(src, "k0_relu_w1");
  EXPECT_NE(w1.find("const long long i1 = flat % 16LL;"), std::string::npos) << w1;
  auto bin = codegen::compile_cuda(src, "sm_90");
  EXPECT_GT(bin.cubin.size(), 0u);
}
