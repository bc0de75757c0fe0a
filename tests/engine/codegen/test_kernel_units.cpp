// Units of the same code (engine/codegen/cuda/kernel_units.h) and their assembly from one unit's PTX
// (nvrtc_compiler.h, nvrtc_run.h). NVRTC and nvJitLink need no GPU.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <random>

#include "engine/codegen/cuda/emit_cuda.h"
#include "engine/codegen/cuda/kernel_units.h"
#include "engine/codegen/cuda/nvrtc_compiler.h"
#include "engine/codegen/cuda/nvrtc_run.h"
#include "tests/support/compile_support.h"
#include "tests/support/scripted_models.h"

using namespace kiln;

namespace {

std::string fresh_line() {
  static const std::string nonce = std::to_string(::getpid()) + "-" + std::to_string(std::random_device{}());
  static int n = 0;
  return "\n// fresh " + nonce + "-" + std::to_string(++n) + "\n";
}

// The sizes of an ELF file's sections by name (64-bit, little-endian: what NVRTC and nvJitLink write).
std::map<std::string, uint64_t> section_sizes(const std::string& elf) {
  std::map<std::string, uint64_t> out;
  if (elf.size() < 64 || elf.compare(0, 4, "\x7f" "ELF") != 0) return out;
  auto u16 = [&](size_t at) { uint16_t v; std::memcpy(&v, elf.data() + at, 2); return v; };
  auto u32 = [&](size_t at) { uint32_t v; std::memcpy(&v, elf.data() + at, 4); return v; };
  auto u64 = [&](size_t at) { uint64_t v; std::memcpy(&v, elf.data() + at, 8); return v; };
  const uint64_t shoff = u64(0x28);
  const uint16_t entsize = u16(0x3A), count = u16(0x3C), names = u16(0x3E);
  if (shoff + uint64_t(count) * entsize > elf.size() || names >= count) return out;
  const uint64_t strtab = u64(shoff + uint64_t(names) * entsize + 0x18);
  for (uint16_t i = 0; i < count; ++i) {
    const size_t h = shoff + size_t(i) * entsize;
    const size_t name = strtab + u32(h);
    if (name >= elf.size()) continue;
    out[std::string(elf.c_str() + name)] = u64(h + 0x20);
  }
  return out;
}

const char* kKernel = R"(struct KilnArgs_k3_add {
  void* buf[3];
};
extern "C" __global__ void k3_add(const KilnArgs_k3_add args) {
  const float* __restrict__ b12 = static_cast<const float*>(args.buf[0]);  // x_3
  float* __restrict__ b14 = static_cast<float*>(args.buf[1]);  // add_3
  const auto t5 = b12[threadIdx.x];
  float acc14 = kiln_relu(t5) + 1.0f;  /* relu */
  b14[threadIdx.x] = acc14;
}
)";

}  // namespace

// Two kernels that differ only in names and comments have one canonical text; a constant, a called function, a
// member or a vector type that differs does not.
TEST(KernelUnits, CanonicalTextIsTheCodeWithoutItsNames) {
  const std::set<std::string> reserved = codegen::canonical_reserved("__device__ float kiln_relu(float a);\n");
  auto canon = [&](const std::string& text, const std::string& name) {
    return codegen::canonical_kernel(text, {name}, "KilnArgs_" + name, reserved);
  };
  auto rename = [](std::string s, const std::string& from, const std::string& to) {
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
    return s;
  };
  const std::string a = kKernel;
  auto ca = canon(a, "k3_add");
  ASSERT_TRUE(ca.has_value());
  EXPECT_EQ(ca->find("k3_add"), std::string::npos) << *ca;
  EXPECT_EQ(ca->find("x_3"), std::string::npos) << "comments are left out: " << *ca;
  EXPECT_NE(ca->find("kiln_fn0(const KilnArgs_kiln_fn args)"), std::string::npos) << *ca;
  // The same kernel of another block: other buffers, temporaries, comments and name.
  std::string b = rename(rename(rename(rename(a, "k3_add", "k17_add"), "b12", "b40"), "b14", "b42"), "acc14", "acc42");
  b = rename(rename(b, "t5", "t9"), "x_3", "x_9");
  EXPECT_EQ(canon(b, "k17_add"), ca);
  // Names swapped between two buffers are still a one-to-one renaming.
  std::string swapped = rename(rename(rename(a, "b12", "bX"), "b14", "b12"), "bX", "b14");
  EXPECT_EQ(canon(swapped, "k3_add"), ca);
  // Two buffers made one is not.
  EXPECT_NE(canon(rename(a, "b14[threadIdx.x] = acc14", "b12[threadIdx.x] = acc14"), "k3_add"), ca);
  EXPECT_NE(canon(rename(a, "1.0f", "2.0f"), "k3_add"), ca);
  EXPECT_NE(canon(rename(a, "buf[1]", "buf[2]"), "k3_add"), ca);
  EXPECT_NE(canon(rename(a, "kiln_relu(t5)", "kiln_pow2(t5)"), "k3_add"), ca);  // called: keeps its name
  EXPECT_NE(canon(rename(a, "threadIdx.x];\n  float", "threadIdx.y];\n  float"), "k3_add"), ca);  // a member
  // A renamed identifier never takes a kept one's name: with the vector type int2 used, locals int7, int8 and int9
  // become int0, int1 and int3.
  auto v = canon(rename(a, "float acc14", "int2 q; int int7 = 0, int8 = 1, int9 = 2; float acc14"), "k3_add");
  ASSERT_TRUE(v.has_value());
  EXPECT_NE(v->find("int2 q; int int0 = 0, int1 = 1, int3 = 2;"), std::string::npos) << *v;
  // The kernel's name left where renaming does not reach (a literal): not vouched for.
  EXPECT_FALSE(canon(rename(a, "/* relu */", "asm(\"// k3_add\");"), "k3_add").has_value());
}

// ConvNeXt's blocks in miniature, three of them: the first reads the stem's layer norm through its permute, the
// others the residual sum before them, so the second and third blocks are the same code (their depthwise window
// kernels among them), and both blocks' layer norm and GELU kernels are the first block's too; kernels of different
// code are groups of their own.
TEST(KernelUnits, RepeatedBlocksShareTheirKernelsCode) {
  auto c = test::compile_example(test::convnext_blocks_model(3), "2x3x32x32", "kiln", "channels-last", "generated");
  auto out = test::gpu_front_end(c);
  std::vector<codegen::CudaKernelInfo> info;
  const std::string src = codegen::emit_cuda(out.fused, {}, &info, /*variants=*/true);
  auto units = codegen::kernel_units(src, info);
  ASSERT_EQ(units.sources.size(), info.size());
  ASSERT_EQ(units.groups.group.size(), info.size());
  int shared = 0;
  std::set<int> windows;
  for (size_t u = 0; u < info.size(); ++u) {
    const int g = units.groups.group[u];
    ASSERT_LE(g, static_cast<int>(u));
    ASSERT_EQ(units.groups.functions[u].size(), info[u].variants.size());
    EXPECT_EQ(units.groups.functions[u][0], info[u].name);
    if (g == static_cast<int>(u)) continue;
    ++shared;
    EXPECT_EQ(units.groups.group[g], g);
    // Same kind of kernel, same forms.
    EXPECT_EQ(info[u].name.substr(info[u].name.find('_')), info[g].name.substr(info[g].name.find('_'))) << info[u].name;
    EXPECT_EQ(info[u].variants.size(), info[g].variants.size());
    if (info[u].variants[0].window_rows) windows.insert(g);
  }
  EXPECT_GE(shared, 5) << "the second and third blocks' layer norm and GELU, the third block's depthwise at least";
  EXPECT_EQ(windows.size(), 1u) << "the second and third blocks' depthwise convolutions: one code";
  // Off: every unit a group of its own.
  ::setenv("KILN_SHARED_UNITS", "0", 1);
  auto alone = codegen::kernel_units(src, info);
  ::unsetenv("KILN_SHARED_UNITS");
  for (size_t u = 0; u < info.size(); ++u) EXPECT_EQ(alone.groups.group[u], static_cast<int>(u));
  EXPECT_EQ(alone.sources, units.sources);
}

TEST(KernelUnits, PtxRenamingTouchesOnlyTheFunctionsAndTheirParameters) {
  const std::string ptx =
      ".visible .entry k1_add(\n\t.param .align 8 .b8 k1_add_param_0[24]\n)\n{\n\tld.param.u64 %rd1, [k1_add_param_0];\n"
      "\tcall kiln_helper_k1_addx;\n}\n.visible .entry k1_add_w2(\n\t.param .align 8 .b8 k1_add_w2_param_0[24]\n)\n"
      "{\n\tld.param.u64 %rd1, [k1_add_w2_param_0+8];\n}\n";
  auto r = codegen::rename_ptx_functions(ptx, {"k1_add", "k1_add_w2"}, {"k22_add", "k22_add_w2"});
  ASSERT_TRUE(r.has_value());
  EXPECT_NE(r->find(".entry k22_add(\n\t.param .align 8 .b8 k22_add_param_0[24]"), std::string::npos) << *r;
  EXPECT_NE(r->find("[k22_add_param_0]"), std::string::npos) << *r;
  EXPECT_NE(r->find(".entry k22_add_w2(\n\t.param .align 8 .b8 k22_add_w2_param_0[24]"), std::string::npos) << *r;
  EXPECT_NE(r->find("[k22_add_w2_param_0+8]"), std::string::npos) << *r;
  EXPECT_NE(r->find("kiln_helper_k1_addx"), std::string::npos) << "a longer identifier is another name: " << *r;
  EXPECT_NE(r->find("%rd1"), std::string::npos);
  // A name the renaming cannot reach is refused, as are lists of different lengths.
  EXPECT_FALSE(codegen::rename_ptx_functions(ptx + "\t.global .u32 k1_add_param_x;\n", {"k1_add"}, {"k2_add"}).has_value());
  EXPECT_FALSE(codegen::rename_ptx_functions(ptx, {"k1_add"}, {"k2_add", "k3_add"}).has_value());
  // Names exchanged between two functions.
  auto swapped = codegen::rename_ptx_functions(ptx, {"k1_add", "k1_add_w2"}, {"k1_add_w2", "k1_add"});
  ASSERT_TRUE(swapped.has_value());
  EXPECT_NE(swapped->find(".entry k1_add_w2(\n\t.param .align 8 .b8 k1_add_w2_param_0[24]\n)\n{\n\tld.param.u64 %rd1, [k1_add_w2_param_0];"),
            std::string::npos)
      << *swapped;
}

// A group of missing units is split into chunks no costlier than the bound (a whole compile plus assemblies at
// kAssemblyShare each); units of no group are chunks of their own.
TEST(KernelUnits, ChunksKeepEachProcesssWorkWithinTheBound) {
  std::vector<size_t> sizes = {1000, 1000, 1000, 1000, 1000, 100, 100, 100, 50};
  codegen::UnitGroups g;
  g.group = {0, 0, 0, 0, 0, 5, 5, 5, 8};
  g.functions.resize(sizes.size());
  std::vector<size_t> misses = {0, 1, 2, 3, 4, 5, 6, 7, 8};
  auto chunks = codegen::unit_chunks(misses, sizes, &g, 1000 * (1 + codegen::kAssemblyShare));
  ASSERT_EQ(chunks.size(), 5u);  // {0,1} {2,3} {4} {5,6,7} {8}
  EXPECT_EQ(chunks[0], (std::vector<size_t>{0, 1}));
  EXPECT_EQ(chunks[1], (std::vector<size_t>{2, 3}));
  EXPECT_EQ(chunks[2], (std::vector<size_t>{4}));
  EXPECT_EQ(chunks[3], (std::vector<size_t>{5, 6, 7}));
  EXPECT_EQ(chunks[4], (std::vector<size_t>{8}));
  // A unit of the group already cached: the rest is still one code, the first missing one compiled whole.
  chunks = codegen::unit_chunks({1, 2, 3}, sizes, &g, 1e9);
  ASSERT_EQ(chunks.size(), 1u);
  EXPECT_EQ(chunks[0], (std::vector<size_t>{1, 2, 3}));
  // No groups: one chunk per unit.
  EXPECT_EQ(codegen::unit_chunks(misses, sizes, nullptr, 1e9).size(), misses.size());
}

// The three-block ConvNeXt miniature compiled with its units shared, here and in two workers: each kernel of a
// group but its first is assembled from the first one's PTX and named as its own kernel (its functions in its CUBIN,
// the first one's not), with as many instructions as its own unit compiled whole; the next compile finds every unit
// in the cache.
TEST(KernelUnits, SharedUnitsAssembleTheirKernelsUnderTheirOwnNames) {
  ::unsetenv("KILN_NVRTC_WORKER");
  auto c = test::compile_example(test::convnext_blocks_model(3), "2x3x32x32", "kiln", "channels-last", "generated");
  auto out = test::gpu_front_end(c);
  std::vector<codegen::CudaKernelInfo> info;
  const std::string src = codegen::emit_cuda(out.fused, {}, &info, /*variants=*/false);
  auto units = codegen::kernel_units(src, info);
  for (unsigned workers : {1u, 2u}) {
    SCOPED_TRACE("workers " + std::to_string(workers));
    auto sources = units.sources;
    const std::string fresh = fresh_line();
    for (auto& s : sources) s += fresh;  // comments: the groups hold, the cache misses
    auto bins = codegen::compile_cuda_units(sources, "sm_90", workers, &units.groups);
    ASSERT_EQ(bins.units.size(), sources.size());
    int assembled = 0;
    for (size_t u = 0; u < sources.size(); ++u) {
      const auto& b = bins.units[u];
      const int g = units.groups.group[u];
      EXPECT_FALSE(b.cache_hit);
      ASSERT_FALSE(b.cubin.empty());
      EXPECT_NE(b.cubin.find(info[u].name + '\0'), std::string::npos) << info[u].name;
      if (g == static_cast<int>(u)) {
        EXPECT_FALSE(b.assembled) << info[u].name;
        continue;
      }
      EXPECT_EQ(b.cubin.find(info[g].name + '\0'), std::string::npos) << info[u].name << " names " << info[g].name;
      if (!b.assembled) continue;  // compiled whole (nvJitLink refused it): still its own, counted below
      ++assembled;
      auto whole = codegen::compile_cuda_units({sources[u] + "// whole\n"}, "sm_90", 1);
      auto mine = section_sizes(b.cubin), theirs = section_sizes(whole.units[0].cubin);
      const std::string text = ".text." + info[u].name;
      ASSERT_TRUE(mine.count(text)) << text;
      EXPECT_EQ(mine[text], theirs[text]) << text << ": the same instructions as its own unit compiled whole";
    }
    EXPECT_EQ(bins.assembled, assembled);
    EXPECT_GE(assembled, 5) << "nvJitLink assembled the later blocks' kernels";
    auto again = codegen::compile_cuda_units(sources, "sm_90", workers, &units.groups);
    EXPECT_TRUE(again.all_cached);
    for (size_t u = 0; u < sources.size(); ++u) EXPECT_EQ(again.units[u].cubin, bins.units[u].cubin);
  }
}
