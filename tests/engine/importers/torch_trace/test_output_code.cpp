// Splitting Inductor's generated module into Kernel records.
#include <gtest/gtest.h>

#include "engine/importers/torch_trace/output_code.h"

using kiln::importers::kernels_from_output_code;

TEST(OutputCode, TritonAndCppKernelsWithNodesAndLaunches) {
  const char* code =
      "# AOT ID: ['0_inference']\n"
      "import torch\n"
      "\n"
      "# kernel path: /tmp/x.py\n"
      "# Topologically Sorted Source Nodes: [add, sin], Original ATen: [aten.add, aten.sin]\n"
      "# Source node to ATen node mapping:\n"
      "#   add => add\n"
      "triton_poi_fused_add_sin_0 = async_compile.triton('triton_poi_fused_add_sin_0', '''\n"
      "import triton\n"
      "@triton.jit\n"
      "def triton_poi_fused_add_sin_0(in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):\n"
      "    xoffset = tl.program_id(0) * XBLOCK\n"
      "''', device_str='cuda')\n"
      "\n"
      "cpp_fused_mul_1 = async_compile.cpp_pybinding(['const float*', 'float*'], '''\n"
      "extern \"C\" void kernel(const float* in_ptr0, float* out_ptr0) {}\n"
      "''')\n"
      "\n"
      "def call(args):\n"
      "    triton_poi_fused_add_sin_0.run(arg0_1, buf0, 4096, stream=stream0)\n"
      "    cpp_fused_mul_1(buf0, buf1)\n"
      "    triton_poi_fused_add_sin_0.run(arg0_1, buf2, 4096, stream=stream0)\n";
  auto ks = kernels_from_output_code(code, "[0/0]", "/tmp/torchinductor/ab/cabc.py");
  ASSERT_EQ(ks.size(), 3u);
  EXPECT_EQ(ks[0].name, "cabc.py");
  EXPECT_EQ(ks[0].language, "python");
  EXPECT_EQ(ks[0].source, code);
  EXPECT_EQ(ks[1].name, "triton_poi_fused_add_sin_0");
  EXPECT_EQ(ks[1].compile_id, "[0/0]");
  EXPECT_EQ(ks[1].language, "triton");
  EXPECT_EQ(ks[1].source,
            "import triton\n@triton.jit\ndef triton_poi_fused_add_sin_0(in_ptr0, out_ptr0, xnumel, XBLOCK : "
            "tl.constexpr):\n    xoffset = tl.program_id(0) * XBLOCK\n");
  EXPECT_EQ(ks[1].nodes, (std::vector<std::string>{"add", "sin"}));
  EXPECT_EQ(ks[1].launch_config, "run(arg0_1, buf0, 4096, stream=stream0)");
  EXPECT_EQ(ks[2].name, "cpp_fused_mul_1");
  EXPECT_EQ(ks[2].language, "cpp");
  EXPECT_TRUE(ks[2].nodes.empty());
}

TEST(OutputCode, CutShortKeepsWhatWasThere) {
  auto ks = kernels_from_output_code("k = async_compile.triton('k', '''\nline 1\nline 2", "[1/0]", "");
  ASSERT_EQ(ks.size(), 2u);
  EXPECT_EQ(ks[0].name, "output_code");
  EXPECT_EQ(ks[1].source, "line 1\nline 2");
  EXPECT_EQ(kernels_from_output_code("", "[1/0]", "f.py").size(), 1u);
}
